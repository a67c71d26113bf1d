"""Issue 43: `eval judge` at the provider's capacity, against a real OpenAI-compatible server that takes at
most N calls at once (bench/capacity_server.py): with default settings the run goes past the old fixed 4
threads when the server allows, keeps refused calls (429) to a small share, counts each refused try (never
a verdict) and shows calls/s, calls in flight and 429s in its summary."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from bench.capacity_server import CapacityServer
from playlisteval.actors.build_run import build
from playlisteval.cli import main
from playlisteval.commands import exitcodes
from playlisteval.select.sampling import select_benchmark
from playlisteval.store import open_store
from tests.eval_helpers import indexed_seeded_store
from tests.helpers import QUIET_SIM, env_for, project

OVERRIDES = dict(eval__evidence="oracle", eval__scope="oracle", eval__modality="transcript",
                 eval__materialize_frames=False, select__difficulty_evidence="oracle", select__questions_per_domain=0,
                 select__pairs_per_domain=40, runner__backoff_base_s=0.05, **QUIET_SIM)
JUDGE = "openai/capacity"


@pytest.fixture(scope="module")
def selected(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("capacity")
    settings = project(root, **OVERRIDES)
    with (root / "playlisteval.toml").open("a") as f:
        f.write('\n[prices."openai/capacity"]\ninput = 0.1\noutput = 0.2\n')
    settings = project(root, **OVERRIDES)
    indexed_seeded_store(settings, 6)
    build(settings)
    assert select_benchmark(settings).pairs >= 12
    return root


@pytest.fixture
def fresh(selected: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("OPENAI_API_KEY", "test-capacity-key")
    root = tmp_path / "proj"
    root.mkdir()
    (root / "playlisteval.toml").write_text((selected / "playlisteval.toml").read_text())
    with sqlite3.connect(selected / "playlisteval.db") as a, sqlite3.connect(root / "playlisteval.db") as b:
        a.backup(b)
    yield root


def test_a_judge_run_goes_past_four_calls_at_once_and_reports_its_rate(fresh: Path) -> None:
    with CapacityServer(capacity=16, latency_s=0.3) as server:
        env = env_for(**OVERRIDES, providers__openai_base_url=server.url)
        out = CliRunner().invoke(main, ["--project", str(fresh), "eval", "judge", "--judge", JUDGE, "--json"],
                                 env=env, catch_exceptions=False)
        served = server.served()
    assert out.exit_code == exitcodes.DONE, out.output
    [summary] = [json.loads(line) for line in out.output.splitlines() if line.startswith("{")]
    pairs = summary["pairs"]
    assert summary["judged"] == pairs and summary["errors"] == 0 and served.answered == pairs
    assert served.peak > 4, served  # no fixed pool of 4 threads in the way
    assert served.refused_share <= 0.10, served
    calls = summary["calls"]
    assert calls["tries"] == served.requests and calls["refused"] == served.refused  # every try counted
    assert calls["peak"] > 4 and calls["per_s"] > 0
    engine = open_store(project(fresh, **OVERRIDES))
    with engine.connect() as conn:
        verdicts = conn.exec_driver_sql("SELECT COUNT(*) FROM judgment WHERE verdict = 'A'").scalar()
    assert verdicts == pairs  # a refused try is retried and counted, never a verdict


def test_a_small_server_is_not_flooded(fresh: Path) -> None:
    with CapacityServer(capacity=4, latency_s=0.2) as server:
        env = env_for(**OVERRIDES, providers__openai_base_url=server.url)
        out = CliRunner().invoke(main, ["--project", str(fresh), "eval", "judge", "--judge", JUDGE],
                                 env=env, catch_exceptions=False)
        served = server.served()
    assert out.exit_code == exitcodes.DONE, out.output
    assert served.peak == 4 and served.refused_share <= 0.10, served
    assert "refused 429/503" in out.output  # the summary's calls line
    watched = CliRunner().invoke(main, ["--project", str(fresh), "status", "--watch"], env=env,
                                 catch_exceptions=False)  # nothing is being built: one frame, then it returns
    assert watched.exit_code == 0, watched.output
    for row in ("calls open now", "calls in flight, last 10 s", "calls/s, last 10 s", "429/503 refusals, last 10 s"):
        assert row in watched.output
