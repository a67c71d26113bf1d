"""`playlisteval cancel` (issue 44): a foreground `build` or `eval judge` in one process is cancelled from
another; it ends with exit status 7 and a message, leaves nothing running under a live lease, and running it
again finishes the rest without paying for anything twice."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine

from playlisteval.commands import exitcodes
from playlisteval.store import items, open_store
from playlisteval.store.states import TERMINAL
from tests.helpers import QUIET_SIM, env_for, project, seeded_store
from tests.judged_project import OVERRIDES, copy_of, make_selected
from tests.test_spine import paid_twice, wait_until

TERMINAL_VALUES = {s.value for s in TERMINAL}


def _cmd(root: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "playlisteval.cli", "--project", str(root), *args]


def _run(root: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(_cmd(root, *args), env={**os.environ, **env}, capture_output=True, text=True, timeout=300)


def _ok_calls(engine: Engine, purpose: str) -> int:
    with engine.connect() as conn:
        return int(conn.execute(text("SELECT COUNT(*) FROM model_call WHERE status = 'ok' AND purpose = :p"),
                                {"p": purpose}).scalar() or 0)


def _live_leases(engine: Engine) -> list[str]:
    """Items and jobs still marked running under an unexpired lease."""
    t = time.time()
    with engine.connect() as conn:
        held = [f"item {i}" for (i,) in conn.execute(text(
            "SELECT id FROM item WHERE lease_owner IS NOT NULL AND lease_expires > :t"), {"t": t})]
        held += [f"job {i}" for (i,) in conn.execute(text(
            "SELECT id FROM work_job WHERE state = 'running' AND lease_until > :t"), {"t": t})]
    return held


def _start(root: Path, env: dict[str, str], log: Path, *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(_cmd(root, *args), env={**os.environ, **env}, stdout=log.open("wb"),
                            stderr=subprocess.STDOUT)


def test_a_foreground_build_cancelled_from_another_process_stops_and_resume_finishes_it(tmp_path: Path) -> None:
    overrides: dict[str, object] = {"sim__latency_s": 0.25, "broker__threads": 2, **QUIET_SIM}
    settings = project(tmp_path, **overrides)
    engine = seeded_store(settings, 6)
    env = env_for(**overrides)
    log = tmp_path / "build.log"
    proc = _start(tmp_path, env, log, "build")
    try:
        wait_until(lambda: _ok_calls(engine, "build") >= 4, 120, "the build's first calls")
        cancelled = _run(tmp_path, env, "cancel", "build")
        assert cancelled.returncode == 0 and "cancelled build" in cancelled.stdout, cancelled.stdout + cancelled.stderr
        assert proc.wait(timeout=120) == exitcodes.CANCELLED, log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
    out = log.read_text()
    assert "cancelled:" in out and "playlisteval resume" in out, out
    assert _live_leases(engine) == []
    unfinished = {s: n for s, n in items.counts(engine).items() if s not in TERMINAL_VALUES}
    assert unfinished, "the cancel came too late to stop anything"
    paid_before = _ok_calls(engine, "build")

    status = json.loads(_run(tmp_path, env, "status", "--json").stdout)
    assert status["cancellations"] == ["build"]
    assert "cancellation pending: build" in _run(tmp_path, env, "ps").stdout

    resumed = _run(tmp_path, env, "resume")
    assert resumed.returncode == exitcodes.DONE, resumed.stdout + resumed.stderr
    assert all(s in TERMINAL_VALUES for s in items.counts(engine))
    assert _ok_calls(engine, "build") > paid_before and paid_twice(engine) == []
    assert json.loads(_run(tmp_path, env, "status", "--json").stdout)["cancellations"] == []


@pytest.fixture(scope="module")
def selected(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_selected(tmp_path_factory.mktemp("cancel"))


def _judge_jobs(engine: Engine) -> dict[str, int]:
    with engine.connect() as conn:
        return {str(s): int(n) for s, n in conn.execute(text(
            "SELECT state, COUNT(*) FROM work_job WHERE kind = 'judge' GROUP BY state"))}


def test_a_judge_run_cancelled_from_another_process_ends_with_7_and_running_it_again_finishes(
        selected: Path, tmp_path: Path) -> None:
    settings = copy_of(selected, tmp_path / "p")
    root, engine = settings.root, open_store(settings)
    env = env_for(**{**OVERRIDES, "sim__latency_s": 1.5})  # ~3 calls a question, one question at a time
    log = tmp_path / "judge.log"
    proc = _start(root, env, log, "eval", "judge", "--judge", "sim/judge")
    try:
        wait_until(lambda: _judge_jobs(engine).get("running", 0) >= 1, 120, "the run's first question")
        with engine.connect() as conn:
            run_id = int(conn.execute(text("SELECT MAX(run_id) FROM work_job WHERE kind = 'judge'")).scalar() or 0)
        cancelled = _run(root, env, "cancel", "judge", str(run_id))
        assert cancelled.returncode == 0, cancelled.stdout + cancelled.stderr
        assert proc.wait(timeout=120) == exitcodes.CANCELLED, log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
    out = log.read_text()
    assert f"judge run {run_id} was cancelled" in out and "not started" in out, out
    assert _live_leases(engine) == []
    assert _judge_jobs(engine).get("cancelled", 0) >= 1, _judge_jobs(engine)
    assert f"cancellation pending: judge {run_id}" in _run(root, env, "ps").stdout
    paid_before = _ok_calls(engine, "eval")

    again = _run(root, env, "eval", "judge", "--judge", "sim/judge")
    assert again.returncode == exitcodes.DONE, again.stdout + again.stderr
    assert set(_judge_jobs(engine)) == {"done"}
    assert _ok_calls(engine, "eval") > paid_before and paid_twice(engine) == []
    assert "cancellation pending" not in _run(root, env, "ps").stdout


def test_a_cancelled_index_drops_its_videos_messages_and_leaves_the_videos_as_they_were(tmp_path: Path) -> None:
    from sqlmodel import select

    from playlisteval.actors.indexing import index_videos
    from playlisteval.errors import Cancelled
    from playlisteval.store import cancels, transaction
    from playlisteval.store.tables import Video

    settings = project(tmp_path)
    engine = seeded_store(settings, 2)
    with transaction(engine) as s:
        before = [(v.id, v.status, v.lease_owner, v.reason) for v in s.exec(select(Video)).all()]
    assert cancels.request(engine, cancels.INDEX) == 0
    with pytest.raises(Cancelled, match="playlisteval index"):
        index_videos(settings, engine, [int(v[0] or 0) for v in before], "hash", "run1", lambda: False)
    with transaction(engine) as s:
        assert [(v.id, v.status, v.lease_owner, v.reason) for v in s.exec(select(Video)).all()] == before
    assert [p.what for p in cancels.pending(engine)] == ["index"]


def test_a_judge_run_on_redis_workers_is_cancelled_and_the_worker_drops_its_questions(
        selected: Path, tmp_path: Path, redis_url: str) -> None:
    """The same through a Redis broker: a `playlisteval worker` process does the questions, the waiting
    `eval judge` reads the store; `cancel` reaches the worker through the store alone."""
    from tests.test_spine import start_worker, stop

    settings = copy_of(selected, tmp_path / "p")
    root, engine = settings.root, open_store(settings)
    env = env_for(**{**OVERRIDES, "sim__latency_s": 1.5, "broker__url": redis_url, "broker__threads": 1})
    worker = start_worker(root, env, tmp_path / "worker.log")
    log = tmp_path / "judge.log"
    proc = _start(root, env, log, "eval", "judge", "--judge", "sim/judge")
    try:
        wait_until(lambda: _judge_jobs(engine).get("running", 0) >= 1, 120, "the worker's first question")
        with engine.connect() as conn:
            run_id = int(conn.execute(text("SELECT MAX(run_id) FROM work_job WHERE kind = 'judge'")).scalar() or 0)
        assert _run(root, env, "cancel", "judge", str(run_id)).returncode == 0
        assert proc.wait(timeout=120) == exitcodes.CANCELLED, log.read_text()
        assert _judge_jobs(engine).get("cancelled", 0) >= 1
        wait_until(lambda: _live_leases(engine) == [], 60, "the worker's question in flight to finish")
        paid_before = _ok_calls(engine, "eval")
        again = _run(root, env, "eval", "judge", "--judge", "sim/judge")
        assert again.returncode == exitcodes.DONE, again.stdout + again.stderr
    finally:
        if proc.poll() is None:
            proc.kill()
        stop(worker)
    assert set(_judge_jobs(engine)) == {"done"}
    assert _ok_calls(engine, "eval") > paid_before and paid_twice(engine) == []


def test_a_worker_drops_a_queued_job_of_a_cancelled_run_and_the_next_pass_queues_it_again(tmp_path: Path) -> None:
    """A job queued again after the cancel (given back by a worker the store failed under) is still not
    started: the worker checks the run's cancellation after its claim and marks it cancelled, unstarted."""
    from dramatiq.brokers.stub import StubBroker

    from playlisteval.actors import jobs
    from playlisteval.actors.app import App
    from playlisteval.actors.evaluation import run_job
    from playlisteval.store import cancels

    settings = project(tmp_path)
    engine = seeded_store(settings, 1)
    (item_id,) = items.create_items(engine)
    App(settings, engine=engine, broker=StubBroker())
    assert cancels.request(engine, cancels.job_key("judge", 9)) == 0  # before the job exists
    (job_id,) = jobs.prepare(engine, "judge", 9, [item_id], jobs.new_pass(), {})
    run_job(job_id, "judge")  # its handler would fail on this empty payload: it must not run
    assert _judge_jobs(engine) == {"cancelled": 1}
    assert jobs.tally(engine, [job_id]).cancelled == 1 and jobs.lost(engine, 0.0) == []  # no sweeper resends it
    jobs.prepare(engine, "judge", 9, [item_id], jobs.new_pass(), {})
    assert _judge_jobs(engine) == {"queued": 1}
