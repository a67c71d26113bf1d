"""One engine (issue 10, deliverable 1): `index` and `eval retrieve` fan out over Redis to `playlisteval worker`
processes started as real subprocesses, each doing a share of the videos and of the blocks of questions; the
retriever run gives the same ranks as the in-process workers do on the same store."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import text
from sqlalchemy.engine import Engine

from playlisteval.cli import main
from playlisteval.config import load_settings
from playlisteval.index.outcome import read_outcome
from playlisteval.store import identity, open_store
from tests.fault_helpers import Fleet, wait_until
from tests.helpers import QUIET_SIM, env_for, project

OVERRIDES: dict[str, object] = dict(
    index__embedder="hash", index__ocr="none", index__segment_min_s=60, index__segment_max_s=90,
    broker__sweep_every_s=1, broker__sweep_grace_s=5, **QUIET_SIM)

pytestmark = pytest.mark.slow


def cli(root: Path, env: dict[str, str], *args: str) -> list[dict[str, Any]]:
    result = CliRunner().invoke(main, ["--project", str(root), *args], env=env, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.output.splitlines() if line.startswith("{")]


def rows(engine: Engine, sql: str, **params: Any) -> list[Any]:
    with engine.connect() as conn:
        return list(conn.execute(text(sql), params))


def pid_of(worker: str) -> str:
    return str(identity.parse(worker).pid)


def ranks(engine: Engine, run_id: int) -> list[Any]:
    return rows(engine, "SELECT item_id, rank1, rank2, n_segments, segment1_id, segment2_id, score1, score2, "
                        "top_segments FROM ranking WHERE run_id = :r ORDER BY item_id", r=run_id)


def test_index_and_eval_retrieve_fan_out_to_two_worker_processes(tmp_path: Path, redis_url: str,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from playlisteval.actors.build_run import build
    from playlisteval.index.collection import add_paths
    from playlisteval.world.synth.make import make_collection

    root = tmp_path / "p"
    local_env = env_for(**OVERRIDES)  # the in-process broker
    settings = project(root, **OVERRIDES)
    make_collection(root / "videos", domains=2, playlists=1, videos=4, minutes=3, seed=0)
    engine = open_store(settings)
    for domain in sorted(p for p in (root / "videos").iterdir() if p.is_dir()):
        add_paths(engine, domain.name, sorted(domain.iterdir()))
    videos = rows(engine, "SELECT COUNT(*) FROM video")[0][0]
    # small blocks, so that a run has enough of them to share (the coordinator cuts them: this process)
    monkeypatch.setattr("playlisteval.eval.retrieval.BLOCK", 2)

    env = env_for(**OVERRIDES, broker__url=redis_url)
    with Fleet(root, env, n=2, threads=2) as fleet:
        # both serving before any work is sent: on a loaded machine one could otherwise start after the other
        # had done everything
        wait_until(lambda: all("worker.started" in log.read_text(errors="replace") for log in fleet.logs), 120,
                   "both workers serving")
        pids = {str(p) for p in fleet.pids()}
        [indexed] = cli(root, env, "index", "--threads", "0", "--json")  # this process only coordinates
        assert indexed["videos_indexed"] == videos and not indexed["unfinished"], fleet.output()[-3000:]

        build(load_settings(root, environ=local_env))  # the questions, built in-process
        [run] = cli(root, env, "eval", "retrieve", "--all", "--json")
        assert len(fleet.pids()) == 2, fleet.output()[-3000:]

    # every video was indexed by one of the two workers, and each indexed some
    by_worker: dict[str, int] = {}
    for (report,) in rows(engine, "SELECT index_report FROM video"):
        outcome = read_outcome(report)
        assert outcome is not None and outcome.status == "indexed"
        by_worker[pid_of(outcome.worker)] = by_worker.get(pid_of(outcome.worker), 0) + 1
    assert set(by_worker) == pids and sum(by_worker.values()) == videos, by_worker

    # every block of questions was a job done by one of the two workers, and each did some
    blocks = rows(engine, "SELECT worker, state, result FROM work_job WHERE kind = 'retrieve' AND run_id = :r",
                  r=run["run_id"])
    assert len(blocks) >= 4 and {state for _, state, _ in blocks} == {"done"}
    done: dict[str, int] = {}
    for worker, _, result in blocks:
        result = json.loads(result) if isinstance(result, str) else result
        done[pid_of(worker)] = done.get(pid_of(worker), 0) + int(result["questions"])
    assert set(done) == pids and str(os.getpid()) not in done, done
    assert sum(done.values()) == run["questions"] > 0 and run["errors"] == 0

    # the same ranks, scores and figures as this process's own workers give, on the same store (after the workers
    # exited: this process's connections kept their locks, DuckDB's SQLite never had the file beside them)
    [here] = cli(root, local_env, "eval", "retrieve", "--all", "--json")
    assert {w for (w,) in rows(engine, "SELECT DISTINCT worker FROM work_job WHERE run_id = :r AND kind = 'retrieve'",
                               r=here["run_id"])} == {identity.this_process()}
    assert ranks(engine, here["run_id"]) == ranks(engine, run["run_id"])
    figures = ("questions", "hit_both", "hit_any", "ndcg", "mean_segments", "chunks", "errors")
    assert {k: here[k] for k in figures} == {k: run[k] for k in figures}
