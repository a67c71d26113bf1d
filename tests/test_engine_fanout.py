"""One engine (issue 10, deliverable 1): `select`'s difficulty gate and `eval judge` fan out over Redis to
`playlisteval worker` processes started as real subprocesses, each doing a share of the questions, and give
the same verdicts, benchmark and judgments as the in-process workers do on a copy of the same store."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import text
from sqlalchemy.engine import Engine

from playlisteval.cli import main
from playlisteval.config import Settings, load_settings
from playlisteval.store import open_store
from tests.fault_helpers import REPO, Fleet, wait_until
from tests.helpers import QUIET_SIM, built_synthetic_project, env_for, project

OVERRIDES: dict[str, object] = dict(
    index__embedder="hash", index__ocr="none", index__segment_min_s=60, index__segment_max_s=90, eval__frames=16,
    select__questions_per_domain=0, select__pairs_per_domain=30, broker__sweep_every_s=1,
    broker__sweep_grace_s=5, **QUIET_SIM)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return built_synthetic_project(tmp_path_factory.mktemp("fanout"), **OVERRIDES)


@pytest.fixture(scope="module")
def pristine(built: Settings, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the built project before anything was selected."""
    copy = tmp_path_factory.mktemp("pristine") / "p"
    shutil.copytree(built.root, copy)
    return copy


def cli(root: Path, env: dict[str, str], *args: str) -> list[dict[str, Any]]:
    result = CliRunner().invoke(main, ["--project", str(root), *args], env=env, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.output.splitlines() if line.startswith("{")]


def rows(engine: Engine, sql: str) -> list[Any]:
    with engine.connect() as conn:
        return list(conn.execute(text(sql)))


def outcome(engine: Engine) -> dict[str, Any]:
    """What the gate and the judge run decided, by ids (equal in a copy of the store)."""
    return {
        "kept": rows(engine, "SELECT id, kept FROM pair ORDER BY id"),
        "verdicts": [(i, json.loads(d) if isinstance(d, str) else d) for i, d in
                     rows(engine, "SELECT id, difficulty FROM pair ORDER BY id")],
        "benchmark": rows(engine, "SELECT pair_id, a_is_better FROM benchmark_pair ORDER BY pair_id"),
        "judgments": rows(engine, "SELECT pair_id, verdict, score, outcome FROM judgment ORDER BY pair_id"),
    }


def _no_call_ids(verdicts: list[Any]) -> list[Any]:
    """Ledger row ids differ with who called first; everything else must match."""
    out = []
    for pair_id, record in verdicts:
        record = {k: ({kk: vv for kk, vv in v.items() if kk != "call_id"} if isinstance(v, dict) else v)
                  for k, v in (record or {}).items()}
        out.append((pair_id, record))
    return out


def test_select_and_eval_judge_fan_out_to_two_worker_processes(built: Settings, pristine: Path, redis_url: str,
                                                               tmp_path: Path) -> None:
    twin = tmp_path / "twin"  # the same store, for the in-process run to compare with
    shutil.copytree(pristine, twin)
    env = env_for(**OVERRIDES, broker__url=redis_url)
    engine = open_store(built)
    with Fleet(built.root, env, n=2, threads=2) as fleet:
        # both serving before any work is sent: on a loaded machine one could otherwise start after the other
        # had done everything
        wait_until(lambda: all("worker.started" in log.read_text(errors="replace") for log in fleet.logs), 120,
                   "both workers serving")
        [sel] = cli(built.root, env, "select", "--json")
        [run] = cli(built.root, env, "eval", "judge", "--judge", "sim/judge", "--json")
        pids = {str(p) for p in fleet.pids()}
        assert len(pids) == 2, fleet.output()[-3000:]
    assert sel["created"] and sel["pairs"] > 0 and run["judged"] == run["pairs"] > 0

    # every question was a job done by one of the two workers, and each did some of both kinds
    done = rows(engine, "SELECT kind, worker, state FROM work_job ORDER BY id")
    assert done and {state for _, _, state in done} == {"done"}
    by_worker: dict[str, dict[str, int]] = {}
    for kind, worker, _ in done:
        pid = worker.split(":")[1]  # host:pid:place.nonce (store/identity.py)
        by_worker.setdefault(pid, {}).setdefault(kind, 0)
        by_worker[pid][kind] += 1
    assert set(by_worker) == pids and all(sum(counts.values()) > 0 for counts in by_worker.values()), by_worker
    assert {kind for counts in by_worker.values() for kind in counts} == {"gate", "judge"}
    # ... and the calls on the ledger are theirs: none from this (the command's) process
    callers = {w.split(":")[1] for (w,) in rows(engine, "SELECT DISTINCT worker FROM model_call "
                                                            "WHERE purpose IN ('select', 'eval')")}
    assert callers == pids and str(os.getpid()) not in callers

    # the same benchmark, verdicts and judgments as the in-process workers give on a copy of the store
    twin_env = env_for(**OVERRIDES)
    cli(twin, twin_env, "select", "--json")
    cli(twin, twin_env, "eval", "judge", "--judge", "sim/judge", "--json")
    here, there = outcome(engine), outcome(open_store(load_settings(twin, environ=twin_env)))
    assert here["benchmark"] == there["benchmark"] and here["kept"] == there["kept"]
    assert _no_call_ids(here["verdicts"]) == _no_call_ids(there["verdicts"])
    assert here["judgments"] == there["judgments"]


def test_no_wait_returns_at_once_and_a_later_select_draws(pristine: Path, redis_url: str, tmp_path: Path) -> None:
    """--no-wait sends the questions and returns; the workers (started afterwards) judge them; `select`
    again draws the benchmark without asking anything twice."""
    root = tmp_path / "p"
    shutil.copytree(pristine, root)
    env = env_for(**OVERRIDES, broker__url=redis_url)
    engine = open_store(load_settings(root, environ=env))
    [sent] = cli(root, env, "select", "--no-wait", "--json")
    assert sent["sent"] and not sent["created"]
    assert rows(engine, "SELECT DISTINCT state FROM work_job WHERE kind = 'gate'") == [("queued",)]
    with Fleet(root, env, n=2, threads=2):
        [sel] = cli(root, env, "select", "--json")
    assert sel["created"] and sel["pairs"] > 0
    assert rows(engine, "SELECT DISTINCT state FROM work_job WHERE kind = 'gate'") == [("done",)]


def test_the_dramatiq_cli_serves_the_same_actors(pristine: Path, redis_url: str, tmp_path: Path) -> None:
    """`dramatiq playlisteval.actors.tasks`, with the project found through PLAYLISTEVAL_PROJECT, works the
    select queue as `playlisteval worker` does."""
    root = tmp_path / "p"
    shutil.copytree(pristine, root)
    env = env_for(**OVERRIDES, broker__url=redis_url)
    engine = open_store(load_settings(root, environ=env))
    log = (tmp_path / "dramatiq.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "dramatiq", "playlisteval.actors.tasks", "--processes", "1", "--threads", "2"],
        env={**os.environ, "PYTHONPATH": str(REPO), "PLAYLISTEVAL_PROJECT": str(root), **env},
        stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path)
    try:
        [sel] = cli(root, env, "select", "--json")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()
    assert sel["created"] and sel["pairs"] > 0
    workers = rows(engine, "SELECT DISTINCT worker FROM work_job WHERE kind = 'gate'")
    assert len(workers) == 1 and not workers[0][0].endswith(f":{os.getpid()}")


def test_every_message_logs_with_its_actor_and_id() -> None:
    """The LogContext middleware: what an actor logs carries the actor, the message and its first argument."""
    import dramatiq
    import structlog
    from dramatiq.brokers.stub import StubBroker

    from playlisteval.actors.tasks import with_middleware

    broker = with_middleware(StubBroker())
    seen: list[dict[str, Any]] = []

    def probe(item_id: int) -> None:
        seen.append(dict(structlog.contextvars.get_contextvars()))

    actor = dramatiq.actor(actor_name="probe_context", queue_name="probe", broker=broker)(probe)
    worker = dramatiq.Worker(broker, worker_threads=1, worker_timeout=100)
    worker.start()
    try:
        message = actor.send(41)
        actor.send(42)
        broker.join("probe")
    finally:
        worker.stop()
    assert seen[0] == {"actor": "probe_context", "message": message.message_id[:8], "of": 41}
    assert seen[1]["of"] == 42 and len(seen) == 2


def test_the_sweeper_resends_a_job_whose_message_was_lost(redis_url: str, tmp_path: Path) -> None:
    """A queued job with no message (Redis lost it) and a running one whose holder stopped renewing its lease
    are sent again by a worker's sweeper; a job with a message is not sent twice."""
    from playlisteval.actors import App, jobs
    from playlisteval.actors.broker import queued_ids
    from playlisteval.actors.workers import sweep_once

    settings = project(tmp_path, broker__url=redis_url, broker__sweep_grace_s=0)
    app = App(settings)
    engine = app.engine
    lost, held = jobs.prepare(engine, "gate", 0, [1, 2], jobs.new_pass(), {})
    assert jobs.claim(engine, held, "gone:1", lease_s=0.0) is not None  # its lease ran out at once
    with engine.begin() as conn:
        conn.execute(text("UPDATE work_job SET updated_at = updated_at - 60"))
    assert sweep_once(app) == 2
    assert queued_ids(app.broker, "select") == {lost, held}
    assert sweep_once(app) == 0  # both have a message now
    app.broker.close()
