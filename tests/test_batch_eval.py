"""`select --batch` and `eval judge --batch` (issue 15) over a real synthetic collection, and the crash tests:
a real `playlisteval` process killed by SIGKILL between sending a batch and recording it, and after part of
its answers were stored, then run again — no request sent twice, no answer lost, every pair judged."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import text

from playlisteval.cli import main
from playlisteval.config import Settings
from playlisteval.store import forget_engines, open_store
from tests.batch_wire import OAI_BATCH_CREATE
from tests.helpers import QUIET_SIM, built_synthetic_project, env_for, project, share_media
from tests.provider_fakes import CHAT, FakeAPI, fake_api

OVERRIDES: dict[str, object] = dict(
    index__embedder="hash", index__ocr="none", index__segment_min_s=60, index__segment_max_s=90, eval__frames=8,
    eval__frame_size=[160, 120], select__questions_per_domain=0, select__pairs_per_domain=12,
    batch__poll_s=0.01, batch__poll_max_s=0.05, **QUIET_SIM)
JUDGE = "openai/gpt-5.4-mini"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    root = tmp_path_factory.mktemp("built")
    settings = built_synthetic_project(root, **OVERRIDES)
    forget_engines()
    return settings


def clone(built: Settings, dest: Path) -> Settings:
    """A project with a copy of the built store (the videos are shared: the store names them by path)."""
    dest.mkdir(parents=True)
    (dest / "playlisteval.toml").write_text((built.root / "playlisteval.toml").read_text())
    src = sqlite3.connect(built.root / "playlisteval.db")
    dst = sqlite3.connect(dest / "playlisteval.db")
    src.backup(dst)
    src.close()
    dst.close()
    share_media(built.root, dest)
    return project(dest, **OVERRIDES)


def cli(settings: Settings, *args: str, env: dict[str, str] | None = None, code: int = 0) -> list[Any]:
    result = CliRunner().invoke(main, ["--project", str(settings.root), *args],
                                env={**env_for(**OVERRIDES), **(env or {})}, catch_exceptions=False)
    assert result.exit_code == code, result.output
    return [json.loads(line) for line in result.output.splitlines() if line.startswith("{")]


def rows(settings: Settings, sql: str, **params: Any) -> list[Any]:
    with open_store(settings).connect() as conn:
        return [tuple(r) for r in conn.execute(text(sql), params)]


def test_batched_selection_and_judging_give_the_same_benchmark_at_half_the_price(built: Settings,
                                                                                  tmp_path: Path) -> None:
    online, batched = clone(built, tmp_path / "online"), clone(built, tmp_path / "batched")
    [first] = cli(online, "select", "--json")
    [second] = cli(batched, "select", "--batch", "--json")
    assert first["pairs"] == second["pairs"] > 0
    # the clones hold the same items under the same ids: a pair is (item, better rating, worse rating)
    drawn = "SELECT p.item_id, p.better_rating, p.worse_rating, bp.a_is_better FROM benchmark_pair bp " \
            "JOIN pair p ON p.id = bp.pair_id ORDER BY 1, 2, 3"
    kept = "SELECT item_id, better_rating, worse_rating, kept FROM pair ORDER BY 1, 2, 3"
    assert rows(online, kept) == rows(batched, kept)
    assert rows(online, drawn) == rows(batched, drawn)  # same seed, same accepted items: the same benchmark
    [run_online] = cli(online, "eval", "judge", "--judge", "sim/judge", "--json")
    [run_batched] = cli(batched, "eval", "judge", "--judge", "sim/judge", "--batch", "--json")
    verdicts = "SELECT pair_id, a_is_better, verdict, score FROM judgment WHERE run_id = :r ORDER BY pair_id"
    assert rows(online, verdicts, r=run_online["run_id"]) == rows(batched, verdicts, r=run_batched["run_id"])
    paid = "SELECT role, input_tokens, output_tokens, usd, batch_id FROM model_call WHERE status = 'ok' AND " \
           "purpose IN ('select', 'eval') ORDER BY role, input_tokens, output_tokens"
    a, b = rows(online, paid), rows(batched, paid)  # (request hashes name each project's own frame files)
    assert [r[:3] for r in a] == [r[:3] for r in b] and all(r[4] == 0 for r in a) and all(r[4] > 0 for r in b)
    assert sum(r[3] for r in b) == pytest.approx(sum(r[3] for r in a) / 2)  # sim's batch price: half
    assert not rows(batched, "SELECT * FROM model_batch_request WHERE live_hash IS NOT NULL")


# -- crash tests against the OpenAI wire fake ------------------------------------------------------------
KILLER = """
import os, signal, sys
from playlisteval.models.batch import openai as batch_openai, results as batch_results
mode = sys.argv[2]
if mode == "after_send":  # the provider has the batch; the store never learns its id
    send = batch_openai.OpenAIBatch.submit
    def submit(self, *args):
        send(self, *args)
        os.kill(os.getpid(), signal.SIGKILL)
    batch_openai.OpenAIBatch.submit = submit
else:  # killed once two answers are stored
    store = batch_results.store_result
    stored = [0]
    def store_result(*args, **kwargs):
        ok = store(*args, **kwargs)
        stored[0] += ok
        if stored[0] >= 2:
            os.kill(os.getpid(), signal.SIGKILL)
        return ok
    batch_results.store_result = store_result
from playlisteval.cli import main
main(["--project", sys.argv[1], "eval", "judge", "--judge", sys.argv[3], "--batch", "--json"])
"""


@pytest.fixture
def api() -> Iterator[FakeAPI]:
    with fake_api() as server:
        server.content = "Model A shows it. [[A]]"
        yield server


@pytest.mark.parametrize("mode", ["after_send", "after_partial"])
def test_a_killed_batch_run_resumes_without_sending_twice_or_losing_an_answer(built: Settings, api: FakeAPI,
                                                                              tmp_path: Path, mode: str) -> None:
    settings = clone(built, tmp_path / "proj")
    cli(settings, "select", "--json")
    forget_engines()
    env = {**os.environ, **env_for(**OVERRIDES, providers__openai_base_url=f"{api.url}/v1"),
           "OPENAI_API_KEY": "sk-test-crash-0000"}
    script = tmp_path / "killer.py"
    script.write_text(KILLER)
    done = subprocess.run([sys.executable, str(script), str(settings.root), mode, JUDGE], env=env,
                          cwd=Path(__file__).parents[1], capture_output=True, text=True, timeout=600)
    assert done.returncode == -signal.SIGKILL, done.stdout + done.stderr
    sent = list(api.batch.keys)
    assert sent and len(api.requests(OAI_BATCH_CREATE)) == 1
    stored_before = rows(settings, "SELECT COUNT(*) FROM model_batch_request WHERE state = 'done'")[0][0]
    assert stored_before == (0 if mode == "after_send" else 2)
    # run it again, as a user would: the batch is found by its marker (or polled again), nothing is resent
    [run] = cli(settings, "eval", "judge", "--judge", JUDGE, "--batch", "--json",
                env={"PLAYLISTEVAL_PROVIDERS__OPENAI_BASE_URL": f"{api.url}/v1", "OPENAI_API_KEY": "sk-test-crash"})
    assert len(api.requests(OAI_BATCH_CREATE)) == 1 and api.batch.keys == sent  # no request sent twice
    assert not [k for k, n in Counter(sent).items() if n > 1]
    assert not api.requests(CHAT)  # and none asked online: every answer came from the one batch
    assert run["judged"] == run["pairs"] > 0 and run["errors"] == 0
    paid = rows(settings, "SELECT request_hash, COUNT(*) FROM model_call WHERE status = 'ok' AND role = 'G' "
                          "GROUP BY request_hash")
    assert sorted(h for h, _ in paid) == sorted(sent) and {n for _, n in paid} == {1}  # no answer lost or paid twice
    assert rows(settings, "SELECT state, COUNT(*) FROM model_batch_request GROUP BY state") == [("done", len(sent))]
