"""Faults at the engine's edges (issue 10, defects 1 and 4–7), injected for real: processes killed with
SIGKILL, a Redis server killed mid-wait and restarted empty. After each, the work finishes without a
manual command (or, for a dead foreground build, with one `resume` that waits for no lease), nothing is
paid twice and no item is failed for what was not its fault."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from sqlalchemy import text
from sqlalchemy.engine import Engine

from playlisteval.actors import App
from playlisteval.actors.build_run import build, resume
from playlisteval.actors.step import run_step
from playlisteval.actors.workers import sweep_once
from playlisteval.config import Settings
from playlisteval.errors import InfrastructureError
from playlisteval.models.ratelimit import RateLimits
from playlisteval.store import items, open_store, transaction
from playlisteval.store.states import State
from playlisteval.store.tables import Item
from tests.fault_helpers import RedisServer, scalar
from tests.helpers import QUIET_SIM, env_for, project, seeded_store
from tests.test_spine import all_terminal, paid_twice, start_worker, stop, wait_until

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path)
    server.start()
    yield server
    server.kill()


def subprocess_env(**overrides: object) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), **env_for(**overrides)}


def item_row(settings: Settings, item_id: int) -> Item:
    with transaction(open_store(settings)) as s:
        item = s.get(Item, item_id)
        assert item is not None
        return item


# -- defect 1: a slot held by a killed process is free soon after -------------------------------
HOLDER = textwrap.dedent("""
    import time
    from playlisteval.config import load_settings
    from playlisteval.models.ratelimit import RateLimits

    with RateLimits(load_settings(), owner="holder").slot("sim"):
        print("held", flush=True)
        time.sleep(600)
""")
WAITER = textwrap.dedent("""
    from playlisteval.config import load_settings
    from playlisteval.models.ratelimit import RateLimits

    with RateLimits(load_settings(), owner="waiter").slot("sim"):
        print("got it", flush=True)
""")


@pytest.mark.slow
def test_a_rate_limit_slot_held_by_a_killed_worker_is_free_soon_after(tmp_path: Path, redis_url: str) -> None:
    overrides = dict(broker__url=redis_url, rate_limits__sim__concurrent=1, rate_limits__sim__slot_ttl_s=1)
    project(tmp_path, **overrides)
    env = subprocess_env(**overrides)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER], cwd=tmp_path, env=env, stdout=subprocess.PIPE)
    waiter: subprocess.Popen[bytes] | None = None
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"held"
        waiter = subprocess.Popen([sys.executable, "-c", WAITER], cwd=tmp_path, env=env, stdout=subprocess.PIPE)
        time.sleep(3.5)  # three slot lifetimes: a live holder's heartbeat keeps its slot
        assert waiter.poll() is None, "the waiter got a slot that a live worker holds"
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=10)
        # the dead holder renews nothing: its slot lapses a lifetime later (the old counter: an hour)
        out, _ = waiter.communicate(timeout=15)
        assert waiter.returncode == 0 and out.strip() == b"got it"
    finally:
        for proc in (holder, waiter):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()


# -- defect 4: Redis dying while a call waits for a slot is not the item's failure ------------------
def test_redis_killed_while_a_call_waits_for_a_slot_gives_the_item_back(tmp_path: Path,
                                                                          own_redis: RedisServer) -> None:
    settings = project(tmp_path, broker__url=own_redis.url, rate_limits__sim__concurrent=1,
                       rate_limits__sim__slot_ttl_s=60, **QUIET_SIM)
    engine = seeded_store(settings, 1)
    (item_id,) = items.create_items(engine)
    slots = RateLimits(settings).slots_for("sim")
    assert slots is not None and slots.try_acquire("someone-else")  # the one slot is taken: the call waits
    app = App(settings)
    outcome: dict[str, Any] = {}

    def step() -> None:
        try:
            outcome["moved"] = run_step(app, State.PENDING, item_id)
        except Exception as exc:  # noqa: BLE001
            outcome["error"] = exc

    worker = threading.Thread(target=step)
    worker.start()

    wait_until(lambda: scalar(engine, "SELECT COUNT(*) FROM model_call WHERE status = 'in_flight'") == 1, 30,
               "the call to wait for its slot")
    own_redis.kill()
    worker.join(timeout=30)
    assert not worker.is_alive()
    # not a model error and not the item's: the step gives the item back for dramatiq to retry
    assert isinstance(outcome.get("error"), InfrastructureError), outcome
    item = item_row(settings, item_id)
    assert (item.state, item.error, item.lease_owner, item.claims) == ("pending", None, None, 0)
    with engine.connect() as conn:
        (row,) = conn.execute(text("SELECT status, usd, error FROM model_call")).all()
    assert row[0] == "error" and row[1] == 0 and "not sent" in row[2]
    # Redis is back (empty): the retried step goes through
    own_redis.start()
    assert run_step(App(settings), State.PENDING, item_id) is State.QA_GENERATED


def test_a_locked_store_under_a_step_gives_the_item_back_instead_of_failing_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sqlite3

    from playlisteval.build.stages import STAGES

    settings = project(tmp_path, store__busy_timeout_s=0.2, **QUIET_SIM)
    engine = seeded_store(settings, 1)
    (item_id,) = items.create_items(engine)

    def stage_meeting_a_locked_store(ctx: Any) -> Any:
        other = sqlite3.connect(str(tmp_path / "playlisteval.db"), isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # another process holds the write lock past the busy timeout
        try:
            with transaction(ctx.engine) as s:
                s.execute(text("UPDATE item SET error = 'x' WHERE id = :i"), {"i": ctx.item_id})
        finally:
            other.execute("ROLLBACK")
            other.close()

    monkeypatch.setitem(STAGES, State.PENDING, stage_meeting_a_locked_store)
    with pytest.raises(InfrastructureError, match="locked"):
        run_step(App(settings), State.PENDING, item_id)
    item = item_row(settings, item_id)
    assert (item.state, item.error, item.lease_owner, item.claims) == ("pending", None, None, 0)


# -- defect 6: a lease is renewed while its step runs --------------------------------------------
def test_a_step_longer_than_its_lease_keeps_it_and_is_paid_once(tmp_path: Path) -> None:
    settings = project(tmp_path, broker__lease_s=0.6, sim__latency_s=2.0, **QUIET_SIM)
    engine = seeded_store(settings, 1)
    (item_id,) = items.create_items(engine)
    app = App(settings)
    moved: list[State | None] = []
    worker = threading.Thread(target=lambda: moved.append(run_step(app, State.PENDING, item_id)))
    worker.start()
    try:
        wait_until(lambda: item_row(settings, item_id).lease_owner is not None, 10, "the step to claim its item")
        time.sleep(1.5)  # well past the 0.6-s lease: the heartbeat renewed it
        assert items.claim(engine, item_id, State.PENDING, "another-worker", 60) is None
    finally:
        worker.join(timeout=30)
    assert moved == [State.QA_GENERATED]
    assert paid_twice(engine) == []
    assert scalar(engine, "SELECT COUNT(*) FROM model_call") == 1


# -- defect 7: `resume` does not wait for the leases of a killed build ----------------------------
@pytest.mark.slow
def test_resume_takes_back_at_once_the_items_of_a_killed_build(tmp_path: Path) -> None:
    overrides: dict[str, object] = dict(broker__lease_s=600, sim__latency_s=0.4, **QUIET_SIM)
    settings = project(tmp_path, **overrides)
    engine = seeded_store(settings, 3)
    proc = subprocess.Popen([sys.executable, "-m", "playlisteval.cli", "--project", str(tmp_path), "build"],
                            env=subprocess_env(**overrides), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def mid_call() -> bool:
        flying = scalar(engine, "SELECT COUNT(*) FROM model_call WHERE status = 'in_flight'")
        return bool(flying) and scalar(engine, "SELECT COUNT(*) FROM model_call WHERE status = 'ok'") >= 2

    try:
        wait_until(mid_call, 60, "the build to be in the middle of a call")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    leased = scalar(engine, "SELECT COUNT(*) FROM item WHERE lease_expires > :t", t=time.time())
    assert leased >= 1  # the dead build's leases have ten minutes to run
    resume(settings)
    assert all_terminal(engine), items.counts(engine)
    assert "failed" not in items.counts(engine)
    assert paid_twice(engine) == []
    with engine.connect() as conn:
        statuses = [r[0] for r in conn.execute(text("SELECT status FROM model_call"))]
    assert "interrupted" in statuses and "in_flight" not in statuses


# -- defect 5: work whose message was lost is sent again by the sweeper --------------------------
def test_the_sweeper_sends_only_work_that_has_no_message(tmp_path: Path, own_redis: RedisServer) -> None:
    settings = project(tmp_path, broker__url=own_redis.url, broker__sweep_grace_s=5, **QUIET_SIM)
    engine = seeded_store(settings, 2)
    first, second = items.create_items(engine)
    app = App(settings)
    app.enqueue(first, State.PENDING)  # `second`'s message was lost
    with transaction(engine) as s:  # and nothing touched either for longer than the grace
        s.execute(text("UPDATE item SET updated_at = :t"), {"t": time.time() - 60})
    assert sweep_once(app) == 1
    client = redis.Redis.from_url(own_redis.url)
    assert client.llen("dramatiq:build") == 2
    assert sweep_once(app) == 0  # both have a message now: nothing is sent twice
    client.flushall()  # Redis restarted empty: both messages gone
    assert sweep_once(app) == 2
    # work just committed (or just enqueued) is left alone for the grace period
    with transaction(engine) as s:
        s.execute(text("UPDATE item SET updated_at = :t"), {"t": time.time()})
    client.flushall()
    assert sweep_once(app) == 0


@pytest.mark.slow
def test_redis_killed_and_restarted_empty_mid_build_every_item_finishes_unaided(
        tmp_path: Path, own_redis: RedisServer) -> None:
    overrides: dict[str, object] = dict(broker__url=own_redis.url, broker__lease_s=2, broker__sweep_every_s=0.5,
                                        broker__sweep_grace_s=2, sim__latency_s=0.15, **QUIET_SIM)
    settings = project(tmp_path, **overrides)
    engine = seeded_store(settings, 8)
    build(settings)  # enqueues on Redis and returns
    worker = start_worker(tmp_path, env_for(**overrides), tmp_path / "worker.log", threads=2)

    try:
        wait_until(lambda: scalar(engine, "SELECT COUNT(*) FROM item_event") >= 3, 60, "a few steps")
        own_redis.kill()  # every queued message is lost, and with it every pending item's
        time.sleep(1.0)
        own_redis.start()
        wait_until(lambda: all_terminal(engine), 90, "every item to finish with no manual command")
    finally:
        stop(worker)
    counts = items.counts(engine)
    assert "failed" not in counts and sum(counts.values()) == 8, counts
    assert paid_twice(engine) == []


# -- defect 8: money under faults ----------------------------------------------------------------
ASK = textwrap.dedent("""
    from playlisteval.config import load_settings
    from playlisteval.models.request import ModelRequest, TextPart
    from playlisteval.models.runner import Runner
    from playlisteval.store import open_store

    settings = load_settings()
    Runner(settings, open_store(settings), worker="doomed").call(ModelRequest(
        role="C2_transcript_answer", parts=[TextPart(text="What colour is the sign?")], response_schema="TextAnswer"))
""")


def ask_request() -> Any:
    from playlisteval.models.request import ModelRequest, TextPart

    return ModelRequest(role="C2_transcript_answer", parts=[TextPart(text="What colour is the sign?")],
                        response_schema="TextAnswer")


def ledger_rows(engine: Engine) -> list[Any]:
    with engine.connect() as conn:
        return list(conn.execute(text("SELECT status, cache_hit, usd, estimated_usd, error FROM model_call "
                                      "ORDER BY id")))


@pytest.mark.slow
def test_a_kill_in_the_middle_of_repairs_pays_no_try_twice_and_spend_shows_what_was_paid(tmp_path: Path) -> None:
    from playlisteval.actors.build_run import status
    from playlisteval.models.runner import Runner

    overrides: dict[str, object] = dict(sim__malformed_json=1, sim__latency_s=0.5, build__malformed_retries=2)
    settings = project(tmp_path, **overrides)
    engine = open_store(settings)
    proc = subprocess.Popen([sys.executable, "-c", ASK], cwd=tmp_path, env=subprocess_env(**overrides),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:  # two malformed tries paid for, the third (the last repair) in flight
        wait_until(lambda: [r[0] for r in ledger_rows(engine)] == ["malformed", "malformed", "in_flight"], 60,
                   "the third try to be in flight")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    again = Runner(project(tmp_path, sim__malformed_json=1, build__malformed_retries=2), engine)
    assert again.call(ask_request()).malformed  # asked again from the start, as a resumed step would
    rows = ledger_rows(engine)
    paid = [r for r in rows if r[0] == "malformed" and not r[1]]
    assert len(paid) == 3  # the two tries before the kill were replayed from the cache, not paid again
    assert [r[0] for r in rows if r[1]] == ["cached", "cached"]
    assert [r[0] for r in rows].count("interrupted") == 1
    st = status(settings)  # spend shown: what was paid (+ open reservations: none now), labelled apart
    assert st.paid_usd == pytest.approx(sum(r[2] for r in rows)) and st.reserved_usd == 0
    assert st.spent_usd == pytest.approx(st.paid_usd)
    assert st.interrupted_usd == pytest.approx(sum(r[3] for r in rows if r[0] == "interrupted"))


def test_a_call_that_finishes_after_being_marked_interrupted_stays_marked(tmp_path: Path) -> None:
    from playlisteval.models.budget import spend
    from playlisteval.models.runner import Runner

    settings = project(tmp_path, sim__latency_s=1.0)
    engine = open_store(settings)
    slow = Runner(settings, engine, worker="slow")
    first = threading.Thread(target=lambda: slow.call(ask_request()))
    first.start()
    try:  # a second worker takes the same request over while the first is still in its call
        wait_until(lambda: [r[0] for r in ledger_rows(engine)] == ["in_flight"], 10, "the first call")
        Runner(project(tmp_path), engine, worker="fast").call(ask_request())
    finally:
        first.join(timeout=30)
    rows = ledger_rows(engine)
    assert sorted(r[0] for r in rows) == ["interrupted", "ok"]  # never two "ok" for one request
    (cut,) = [r for r in rows if r[0] == "interrupted"]
    assert cut[2] > 0 and "finished after it was marked interrupted" in cut[4]  # what it cost is kept
    money = spend(engine)
    assert money.paid == pytest.approx(sum(r[2] for r in rows)) and money.interrupted == 0
