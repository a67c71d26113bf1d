"""The spine's promises (Foundation issue, item 9), with the real dramatiq worker and a real Redis."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import dramatiq
from sqlalchemy import text
from sqlalchemy.engine import Engine

from playlisteval.actors import App
from playlisteval.actors.build_run import build, resume, status
from playlisteval.store import items
from playlisteval.store.states import TERMINAL, State
from tests.helpers import QUIET_SIM, env_for, project, seeded_store

TERMINAL_VALUES = {s.value for s in TERMINAL}


def snapshot(engine: Engine) -> dict[str, Any]:
    """Everything a step can write, as plain rows."""
    tables = ["item", "item_event", "qa", "distractor_set", "answer", "gate_result", "model_call", "response_cache"]
    with engine.connect() as conn:
        return {t: [tuple(r) for r in conn.execute(text(f"SELECT * FROM {t} ORDER BY 1"))] for t in tables}


def wait_until(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")


def all_terminal(engine: Engine) -> bool:
    counts = items.counts(engine)
    return bool(counts) and all(state in TERMINAL_VALUES for state in counts)


def paid_twice(engine: Engine) -> list[str]:
    """Request hashes whose answer was paid for more than once."""
    with engine.connect() as conn:
        rows = conn.execute(text(
            "SELECT request_hash FROM model_call WHERE status IN ('ok', 'malformed') "
            "GROUP BY request_hash, role HAVING COUNT(*) > 1 AND SUM(CASE WHEN status = 'ok' THEN 1 ELSE 0 END) > 1"
        )).all()
    return [r[0] for r in rows]


# -- in-process (the default) ---------------------------------------------------------------------
def test_foreground_build_runs_every_item_to_a_terminal_state(tmp_path: Path) -> None:
    settings = project(tmp_path)
    seeded_store(settings, 6)
    outcome = build(settings)
    assert outcome.foreground and outcome.created == 6
    st = status(settings)
    assert sum(st.states.values()) == 6 and all(s in TERMINAL_VALUES for s in st.states)
    assert st.calls > 0 and st.spent_usd > 0
    # building again creates nothing new and changes nothing
    before = snapshot(App(settings).engine)
    assert build(settings).created == 0
    assert snapshot(App(settings).engine) == before


def test_a_budget_pauses_the_build_and_resume_with_more_finishes_it(tmp_path: Path) -> None:
    settings = project(tmp_path, **QUIET_SIM)
    seeded_store(settings, 3)
    build(settings, budget=0.05)
    st = status(settings)
    assert st.paused and "budget reached" in st.paused
    assert st.spent_usd <= 0.05 + 1e-9
    assert any(s not in TERMINAL_VALUES for s in st.states)
    resume(settings, budget=100)
    st = status(settings)
    assert st.paused is None and st.states == {"accepted": 3}


# -- (a) a message delivered twice changes nothing the second time --------------------------------
def test_a_message_delivered_twice_changes_nothing_the_second_time(tmp_path: Path, redis_url: str) -> None:
    settings = project(tmp_path, broker__url=redis_url, **QUIET_SIM)
    engine = seeded_store(settings, 1)
    app = App(settings)
    (item_id,) = items.create_items(engine)
    worker = dramatiq.Worker(app.broker, worker_threads=2, worker_timeout=100)
    worker.start()
    try:
        first = app.actors[State.PENDING].send(item_id)
        app.broker.enqueue(first)  # the very same message, delivered twice at once
        wait_until(lambda: all_terminal(engine), 120, "the item to finish")
        app.broker.join("build", timeout=30_000)
        before = snapshot(engine)
        with engine.connect() as conn:
            steps = Counter(r[0] for r in conn.execute(text("SELECT from_state FROM item_event")))
        assert steps == Counter({"pending": 1, "qa_generated": 1, "gated": 1, "degraded": 1})
        # and once more, long after: every step's message again
        app.broker.enqueue(first)
        for state in (State.QA_GENERATED, State.GATED, State.DEGRADED):
            app.actors[state].send(item_id)
        app.broker.join("build", timeout=30_000)
        assert snapshot(engine) == before
    finally:
        worker.stop()
        app.broker.close()


# -- worker processes -----------------------------------------------------------------------------
def start_worker(project_dir: Path, env: dict[str, str], log: Path, threads: int = 1) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "playlisteval.cli", "--project", str(project_dir), "-v", "worker",
         "--threads", str(threads)],
        env={**os.environ, **env}, stdout=log.open("ab"), stderr=subprocess.STDOUT,
    )


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# -- (b) SIGKILL in the middle of a slow model call; resume finishes; nothing paid twice ----------
def test_a_worker_killed_mid_call_is_resumed_without_paying_twice(tmp_path: Path, redis_url: str) -> None:
    overrides = dict(broker__url=redis_url, broker__lease_s=3, broker__sweep_every_s=3600,
                     sim__latency_s=0.6, **QUIET_SIM)
    env = env_for(**overrides)
    settings = project(tmp_path, **overrides)
    engine = seeded_store(settings, 1)
    build(settings)  # enqueues on Redis and returns
    worker = start_worker(tmp_path, env, tmp_path / "worker1.log")

    def mid_gate_call() -> bool:
        with engine.connect() as conn:
            done = conn.execute(text("SELECT COUNT(*) FROM model_call WHERE status = 'ok'")).scalar()
            flying = conn.execute(text(
                "SELECT COUNT(*) FROM model_call WHERE status = 'in_flight' AND role LIKE 'C%'")).scalar()
        return bool(flying) and (done or 0) >= 2

    try:
        wait_until(mid_gate_call, 90, "a Phase I gate call in flight after two finished calls")
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait(timeout=10)
    finally:
        stop(worker)
    (item_state,) = items.counts(engine)
    assert item_state not in TERMINAL_VALUES
    time.sleep(3.2)  # the dead worker's lease expires
    outcome = resume(settings)
    assert outcome.enqueued == 1 and not outcome.foreground
    worker2 = start_worker(tmp_path, env, tmp_path / "worker2.log")
    try:
        wait_until(lambda: all_terminal(engine), 120, "the resumed item to finish")
    finally:
        stop(worker2)
    assert items.counts(engine) == {"accepted": 1}
    with engine.connect() as conn:
        statuses = Counter(r[0] for r in conn.execute(text("SELECT status FROM model_call")))
    assert statuses["interrupted"] == 1  # the call the kill cut short, and only that one
    assert statuses["cached"] >= 1  # the gate call finished before the kill was not made again
    assert paid_twice(engine) == []


# -- (c) four worker processes, one SQLite store, 500 items ---------------------------------------
def test_four_workers_on_one_sqlite_store_process_500_items(tmp_path: Path, redis_url: str) -> None:
    overrides = dict(broker__url=redis_url, store__busy_timeout_s=30)
    env = env_for(**overrides)
    settings = project(tmp_path, **overrides)
    engine = seeded_store(settings, 500)
    build(settings)
    logs = [tmp_path / f"w{i}.log" for i in range(4)]
    workers = [start_worker(tmp_path, env, log, threads=2) for log in logs]
    try:
        wait_until(lambda: all_terminal(engine), 900, "500 items to finish")
    finally:
        for w in workers:
            stop(w)
    output = "\n".join(log.read_text() for log in logs)
    assert "database is locked" not in output
    counts = items.counts(engine)
    assert sum(counts.values()) == 500 and "failed" not in counts, counts
    with engine.connect() as conn:
        # each committed step is one event; a step committed twice would break (item, version)
        # uniqueness or leave more Phase I events than attempts
        steps = conn.execute(text(
            "SELECT i.id, i.phase1_attempts, i.phase2_attempts, "
            "SUM(CASE WHEN e.from_state = 'pending' THEN 1 ELSE 0 END), "
            "SUM(CASE WHEN e.from_state = 'gated' THEN 1 ELSE 0 END), COUNT(e.id), MAX(e.version) "
            "FROM item i JOIN item_event e ON e.item_id = i.id GROUP BY i.id")).all()
    for item_id, p1, p2, gen1, gen2, n_events, max_version in steps:
        assert (gen1, gen2) == (p1, p2), item_id
        assert n_events == max_version, item_id
    assert paid_twice(engine) == []
