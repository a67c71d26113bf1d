"""The engine's middleware, outbox and single retry layer (issue 10, deliverables 1–2).

- A message lost between a step's commit and its send is sent from the outbox by a sweeper.
- dramatiq retries only infrastructure errors: a model call's transient error, after the runner's own
  attempts, fails the item (kept, for `retry-failed`), and is not retried by the broker.
- The step middleware (claim, poison limit, budget pause, lease heartbeat, log context) is on the
  in-process broker, on Redis, and under ``dramatiq playlisteval.actors.tasks``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import dramatiq
import pytest
import redis
from dramatiq.brokers.stub import StubBroker
from sqlalchemy import text

from playlisteval.actors import App, middleware, tasks
from playlisteval.actors.build_run import build
from playlisteval.actors.step import fault_backoff_ms, limits_for, run_step
from playlisteval.actors.workers import run_foreground, sweep_once
from playlisteval.build.stages import STAGES, faults
from playlisteval.errors import BudgetExceeded, CheckerFault, InfrastructureError, TransientModelError
from playlisteval.models.budget import PAUSED_KEY
from playlisteval.store import items, outbox, transaction
from playlisteval.store.states import State
from playlisteval.store.tables import Item, KeyValue
from tests.helpers import QUIET_SIM, env_for, project, seeded_store
from tests.test_spine import all_terminal, wait_until

REPO = Path(__file__).resolve().parents[1]
STEP_CHAIN = ["LogContext", "StepClaim", "PoisonLimit", "BudgetPause", "LeaseHeartbeat"]


class FlakyBroker(StubBroker):
    """An in-process broker whose sends fail while ``down`` (Redis gone between a commit and its send)."""

    down = False

    def enqueue(self, message: Any, *, delay: int | None = None) -> Any:
        if self.down:
            raise redis.exceptions.ConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")
        return super().enqueue(message, delay=delay)


def item_row(engine: Any, item_id: int) -> Item:
    with transaction(engine) as s:
        item = s.get(Item, item_id)
        assert item is not None
        return item


def ours(broker: dramatiq.Broker) -> list[str]:
    return [type(m).__name__ for m in broker.middleware if type(m).__module__ == middleware.__name__]


# -- the outbox --------------------------------------------------------------------------------------
def test_a_message_lost_between_commit_and_send_is_sent_from_the_outbox(tmp_path: Path) -> None:
    settings = project(tmp_path, broker__sweep_grace_s=30, **QUIET_SIM)
    engine = seeded_store(settings, 1)
    (item_id,) = items.create_items(engine)
    broker = FlakyBroker()
    app = App(settings, broker=broker)
    broker.down = True
    # the step commits; the send after it fails: not an error of the item's, and the message is kept
    assert run_step(app, State.PENDING, item_id) is State.QA_GENERATED
    assert outbox.pending(engine) == {item_id: State.QA_GENERATED}
    assert broker.queues[tasks.BUILD_QUEUE].qsize() == 0
    broker.down = False
    assert sweep_once(app) == 0  # within the grace period: the committing worker may still be sending
    with transaction(engine) as s:
        s.execute(text("UPDATE item_outbox SET created_at = created_at - 60"))
    broker.down = True
    with pytest.raises(redis.exceptions.ConnectionError):  # Redis still down: the sweep fails, the row stays
        sweep_once(app)
    assert outbox.pending(engine) == {item_id: State.QA_GENERATED}
    broker.down = False
    with transaction(engine) as s:  # the row taken by the failed sweep is due again a grace period later
        s.execute(text("UPDATE item_outbox SET created_at = created_at - 60"))
    assert sweep_once(app) == 1
    assert outbox.pending(engine) == {}
    assert broker.queues[tasks.BUILD_QUEUE].qsize() == 1
    assert sweep_once(app) == 0  # sent once
    run_foreground(app, [])  # the message sent from the outbox carries the item to the end
    assert all_terminal(engine) and outbox.pending(engine) == {}
    with transaction(engine) as s:
        events = s.exec(text("SELECT COUNT(*) FROM item_event")).one()[0]  # type: ignore[call-overload]
    assert events == item_row(engine, item_id).version  # no step committed twice


@pytest.mark.parametrize("store", ["sqlite", "postgresql"])
def test_a_sent_message_is_crossed_off_and_a_row_is_taken_by_one_sweeper(tmp_path: Path, store: str,
                                                                          request: pytest.FixtureRequest) -> None:
    url = {"store__url": request.getfixturevalue("pg_url")} if store == "postgresql" else {}
    settings = project(tmp_path, **QUIET_SIM, **url)
    engine = seeded_store(settings, 1)
    (item_id,) = items.create_items(engine)
    assert run_step(App(settings), State.PENDING, item_id) is State.QA_GENERATED
    assert outbox.pending(engine) == {}  # sent after the commit, and crossed off
    with transaction(engine) as s:
        outbox.put(s, item_id, State.PENDING)
    with transaction(engine) as s:
        outbox.put(s, item_id, State.QA_GENERATED)  # a later commit's row replaces an earlier one's
    assert outbox.pending(engine) == {item_id: State.QA_GENERATED}
    with transaction(engine) as s:
        s.execute(text("UPDATE item_outbox SET created_at = created_at - 60"))
    [(due_id, state, written_at)] = outbox.due(engine, 30)
    assert (due_id, state) == (item_id, State.QA_GENERATED)
    assert outbox.take(engine, item_id, written_at) is True
    assert outbox.take(engine, item_id, written_at) is False  # a second sweeper leaves it alone
    assert outbox.due(engine, 30) == []  # taken: its grace starts again


# -- one retry layer -----------------------------------------------------------------------------------
def test_dramatiq_retries_only_infrastructure_errors() -> None:
    retry = tasks.retry_infrastructure
    assert retry(0, InfrastructureError("store: database is locked"))
    assert retry(0, redis.exceptions.ConnectionError("gone"))
    assert not retry(tasks.MAX_RETRIES, InfrastructureError("still locked"))
    assert not retry(0, TransientModelError("sim: 429 rate limited"))
    assert not retry(0, ValueError("a bug"))
    for actor in tasks.ALL:
        assert actor.options["retry_when"] is retry, actor.actor_name


def worker_run(app: App, monkeypatch: pytest.MonkeyPatch, item_ids: list[int]) -> None:
    """Send each item's generate_qa and work the queue to the end (retries after 1 ms)."""
    actor = app.actors[State.PENDING]
    monkeypatch.setitem(actor.options, "min_backoff", 1)
    monkeypatch.setitem(actor.options, "max_backoff", 5)
    worker = dramatiq.Worker(app.broker, worker_threads=1, worker_timeout=50)
    worker.start()
    try:
        for item_id in item_ids:
            app.enqueue(item_id, State.PENDING)
        app.broker.join(tasks.BUILD_QUEUE, timeout=60_000, fail_fast=False)  # type: ignore[call-arg]
    finally:
        worker.stop()


def test_a_transient_model_error_is_not_retried_by_dramatiq(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = project(tmp_path, **QUIET_SIM)
    engine = seeded_store(settings, 2)
    flaky, locked = items.create_items(engine)
    asked: list[int] = []
    real = STAGES[State.PENDING]

    def stage(ctx: Any) -> Any:
        asked.append(ctx.item_id)
        if ctx.item_id == flaky:  # what the runner raises once its max_attempts are spent
            raise TransientModelError("sim: 429 rate limited")
        if asked.count(locked) == 1:
            raise InfrastructureError("store: database is locked")
        return real(ctx)

    monkeypatch.setitem(STAGES, State.PENDING, stage)
    app = App(settings, broker=StubBroker())
    worker_run(app, monkeypatch, [flaky, locked])
    assert asked.count(flaky) == 1  # not retried by the broker: the runner's attempts were the retries
    failed = item_row(engine, flaky)
    assert failed.state == "failed" and failed.failed_from == "pending"
    assert failed.error and failed.error.startswith("TransientModelError: sim: 429")
    assert f"after {settings.runner.max_attempts} attempts" in failed.error and "retry-failed" in failed.error
    assert asked.count(locked) == 2  # an infrastructure error: given back, retried by the broker
    assert item_row(engine, locked).state not in ("pending", "failed")  # and went on to the end
    assert not app.broker.dead_letters  # type: ignore[attr-defined]
    assert items.retry_failed(engine, limits_for(settings)) == [flaky]  # and retry-failed resumes it


def test_a_checker_faults_step_is_sent_again_not_retried_by_dramatiq(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A fault is recorded, the item given back and its step sent again as a new, delayed message (the broker's
    retry would not take it: ``retry_when`` is for infrastructure errors only)."""
    settings = project(tmp_path, **QUIET_SIM)
    engine = seeded_store(settings, 1)
    (item_id,) = items.create_items(engine)
    asked: list[int] = []
    real = STAGES[State.PENDING]

    def stage(ctx: Any) -> Any:
        asked.append(ctx.item_id)
        if len(asked) < faults.FAULTS_PER_STEP:
            raise CheckerFault("C2.1", "C2_transcript_verify", "no JSON object")
        return real(ctx)

    monkeypatch.setitem(STAGES, State.PENDING, stage)
    app = App(settings, broker=StubBroker())
    first = app.actors[State.PENDING].options["min_backoff"]  # the actor's backoff, doubled per fault in a row
    assert (fault_backoff_ms(app, State.PENDING, 1), fault_backoff_ms(app, State.PENDING, 2)) == (first, 2 * first)
    worker_run(app, monkeypatch, [item_id])
    assert len(asked) == faults.FAULTS_PER_STEP  # two faults, then the step went through
    assert item_row(engine, item_id).state not in ("pending", "failed")
    with transaction(engine) as s:
        verdicts = s.exec(text("SELECT verdict FROM gate_result WHERE item_id = :i"),  # type: ignore[call-overload]
                          params={"i": item_id}).all()
    assert [v for (v,) in verdicts].count(faults.FAULT) == faults.FAULTS_PER_STEP - 1
    assert not app.broker.dead_letters  # type: ignore[attr-defined]


# -- the step middleware -------------------------------------------------------------------------------
def test_a_workers_message_goes_through_the_step_middleware(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Claim, heartbeat, poison limit and budget pause are the middleware's, for a worker's message."""
    settings = project(tmp_path, **QUIET_SIM)
    engine = seeded_store(settings, 3)
    fine, poison, broke = items.create_items(engine)
    with transaction(engine) as s:
        row = s.get(Item, poison)
        assert row is not None
        row.claims = settings.broker.max_claims  # claimed that often, never committed
        s.add(row)
    app = App(settings, broker=StubBroker())
    seen: dict[int, Any] = {}
    real = STAGES[State.PENDING]

    def stage(ctx: Any) -> Any:
        turn = middleware.current_turn()
        assert turn is not None and turn.claim is not None
        seen[ctx.item_id] = (turn.heartbeat is not None, turn.claim.token in app.leases._held)
        if ctx.item_id == broke:
            raise BudgetExceeded(0.39, 0.02, 0.40)
        return real(ctx)

    monkeypatch.setitem(STAGES, State.PENDING, stage)
    worker_run(app, monkeypatch, [fine, poison, broke])
    assert seen == {fine: (True, True), broke: (True, True)}  # the poison item's stage never ran
    assert item_row(engine, fine).state not in ("pending", "failed")
    assert item_row(engine, poison).state == "failed" and "poison" in (item_row(engine, poison).error or "")
    paused = item_row(engine, broke)
    assert (paused.state, paused.lease_owner, paused.claims, paused.error) == ("pending", None, 0, None)
    with transaction(engine) as s:
        assert s.get(KeyValue, PAUSED_KEY) is not None
        assert len(s.exec(text("SELECT * FROM item_event WHERE item_id = :i"),  # type: ignore[call-overload]
                          params={"i": broke}).all()) == 0
    assert not app.leases._held and middleware.current_turn() is None
    assert not app.broker.dead_letters  # type: ignore[attr-defined]


def test_the_middleware_is_on_the_in_process_broker_and_on_redis(tmp_path: Path, redis_url: str) -> None:
    stub = App(project(tmp_path / "a", **QUIET_SIM), broker=StubBroker())
    assert ours(stub.broker) == STEP_CHAIN
    on_redis = App(project(tmp_path / "b", broker__url=redis_url, **QUIET_SIM))
    assert type(on_redis.broker).__name__ == "RedisBroker" and ours(on_redis.broker) == STEP_CHAIN
    tasks.with_middleware(on_redis.broker)  # once
    assert ours(on_redis.broker) == STEP_CHAIN
    on_redis.broker.close()


def test_the_dramatiq_cli_runs_build_steps_through_the_middleware(tmp_path: Path, redis_url: str) -> None:
    """`dramatiq playlisteval.actors.tasks` loads the broker with the middleware and the sweeper, and
    works a build to the end (each step claimed, committed and its next message sent through the outbox)."""
    overrides: dict[str, object] = dict(broker__url=redis_url, **QUIET_SIM)
    settings = project(tmp_path, **overrides)
    engine = seeded_store(settings, 2)
    env = {**os.environ, "PYTHONPATH": str(REPO), "PLAYLISTEVAL_PROJECT": str(tmp_path), **env_for(**overrides)}
    loaded = subprocess.run([sys.executable, "-c", "import playlisteval.actors.tasks as t; "
                             "print(' '.join(type(m).__name__ for m in t.broker.middleware))"],
                            env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120, check=True)
    names = loaded.stdout.split()
    assert [n for n in names if n in STEP_CHAIN] == STEP_CHAIN and "Sweeper" in names and "Retries" in names
    assert not build(settings).foreground
    log_path = tmp_path / "dramatiq.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "dramatiq", "playlisteval.actors.tasks", "--processes", "1",
                                 "--threads", "2"], env=env, stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path)
        try:
            wait_until(lambda: all_terminal(engine), 120, "the dramatiq CLI to finish the build")
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    output = log_path.read_text()
    assert "Unexpected failure" not in output, output[-3000:]
    with transaction(engine) as s:
        workers = {w for (w,) in s.exec(text("SELECT DISTINCT worker FROM item_event")).all()}  # type: ignore[call-overload]
        assert s.exec(text("SELECT COUNT(*) FROM item WHERE claims != 0")).one()[0] == 0  # type: ignore[call-overload]
    assert workers and all(not w.endswith(f":{os.getpid()}") for w in workers)
    assert outbox.pending(engine) == {}
