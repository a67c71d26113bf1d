"""The lean step loop (issue 13): deferred read-only transactions, the running spend total kept by
triggers (exact, backfilled by its migration), the claim as one UPDATE … RETURNING, two transactions per
model call, the clips' transcripts kept per process by content key."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlmodel import select

from playlisteval.models.runner import spend_of
from playlisteval.store import items, make_engine, migrate, spend_totals, transaction
from playlisteval.store.engine import read
from playlisteval.store.states import State
from playlisteval.store.tables import Item, ModelCall
from tests.helpers import project, seeded_store
from tests.test_runner import GOOD, make, req

STATUSES = ("in_flight", "ok", "malformed", "error", "interrupted", "cached")


def _statements(engine: Engine) -> list[str]:
    """Every statement SQLite runs for the engine from now on, upper-cased (its trace callback, on connections
    opened after this: the hot statements run on the driver's cursor, which SQLAlchemy's events never see)."""
    seen: list[str] = []
    engine.dispose()
    event.listen(engine, "connect", lambda dbapi, _record: dbapi.set_trace_callback(lambda sql: seen.append(
        " ".join(sql.split()).upper())))
    return seen


def _verbs(seen: list[str]) -> list[str]:
    return [statement.split()[0] for statement in seen]


def _random_ledger(engine: Engine, rng: random.Random, n: int) -> None:
    ids: list[int] = []
    for _ in range(n):
        with transaction(engine) as s:
            op = rng.random()
            if op < 0.5 or not ids:
                row = ModelCall(request_hash=f"h{rng.randrange(8)}", role="B", provider="sim", model="m",
                                purpose=rng.choice(("build", "eval")), status=rng.choice(STATUSES),
                                estimated_usd=rng.random(), usd=rng.random(), latency_s=rng.choice((0.0, 1.5)))
                s.add(row)
                s.flush()
                ids.append(int(row.id or 0))
            elif op < 0.9:
                found = s.get(ModelCall, rng.choice(ids))
                if found is not None:
                    found.status, found.usd = rng.choice(STATUSES), rng.random()
                    found.latency_s = rng.choice((0.0, 0.7))
                    s.add(found)
            else:
                found = s.get(ModelCall, ids.pop(rng.randrange(len(ids))))
                if found is not None:
                    s.delete(found)


def _check_totals(engine: Engine) -> None:
    with read(engine) as s:
        for purpose in ("build", "eval", "index"):
            assert spend_totals.committed(s, purpose) == pytest.approx(spend_of(s, purpose).committed, abs=1e-9)
            for h in ("h0", "h3"):
                assert spend_totals.committed(s, purpose, exclude_hash=h) == pytest.approx(
                    spend_of(s, purpose, exclude_hash=h).committed, abs=1e-9)


def _totals_follow_the_ledger(engine: Engine) -> None:
    migrate(engine)
    _random_ledger(engine, random.Random(7), 300)
    _check_totals(engine)
    # an older store: the totals dropped and the migration not recorded; it backfills them from the ledger
    with engine.begin() as conn:
        conn.exec_driver_sql("DELETE FROM spend_total")
        conn.exec_driver_sql("DELETE FROM schema_migration WHERE name = '0540_spend_total'")
    assert migrate(engine) == ["0540_spend_total"]
    _check_totals(engine)
    _random_ledger(engine, random.Random(8), 100)
    _check_totals(engine)


def test_spend_total_follows_every_ledger_change_sqlite(tmp_path: Path) -> None:
    _totals_follow_the_ledger(make_engine(f"sqlite:///{tmp_path}/s.db"))


def test_spend_total_follows_every_ledger_change_postgres(pg_url: str) -> None:
    engine = make_engine(pg_url)
    try:
        _totals_follow_the_ledger(engine)
    finally:
        engine.dispose()


def test_read_transactions_begin_deferred_writes_immediate(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path}/s.db")
    migrate(engine)
    seen = _statements(engine)
    with read(engine) as s:
        s.get(Item, 1)
    assert "BEGIN" in seen and not any("IMMEDIATE" in x for x in seen)
    assert _verbs(seen)[:2] == ["BEGIN", "SELECT"]
    seen.clear()
    with transaction(engine) as s:
        s.get(Item, 1)
    assert seen[0] == "BEGIN IMMEDIATE" and _verbs(seen)[1] == "SELECT"


def test_claim_is_one_update_returning(tmp_path: Path) -> None:
    engine = seeded_store(project(tmp_path), 1)
    item_id = items.create_items(engine)[0]
    seen = _statements(engine)
    c = items.claim(engine, item_id, State.PENDING, "w1", lease_s=60)
    assert c is not None and c.claims == 1 and c.progress.state is State.PENDING
    assert _verbs(seen) == ["BEGIN", "UPDATE", "COMMIT"] and seen[0] == "BEGIN IMMEDIATE"
    assert items.claim(engine, item_id, State.PENDING, "w2", lease_s=60) is None  # held
    with read(engine) as s:
        item = s.get(Item, item_id)
        assert item is not None and item.lease_owner == c.token and item.claims == 1


def test_a_fresh_call_takes_two_write_transactions(tmp_path: Path) -> None:
    runner, provider, _ = make(tmp_path, [GOOD])
    begins: list[int] = []
    event.listen(runner.engine, "begin", lambda _conn: begins.append(1))
    first = runner.call(req())
    assert not first.cached and len(begins) == 2 and len(provider.requests) == 1
    begins.clear()
    again = runner.call(req())
    assert again.cached and len(begins) == 1
    with read(runner.engine) as s:
        assert spend_totals.committed(s, "build") == pytest.approx(spend_of(s, "build").committed, abs=1e-12)
        assert spend_of(s, "build").paid > 0


def test_clip_lines_are_kept_by_content_and_a_reindex_is_seen(tmp_path: Path) -> None:
    from playlisteval.build.inputs import load_clips
    from playlisteval.store.tables import Chunk, Video

    engine = seeded_store(project(tmp_path), 1)
    item_id = items.create_items(engine)[0]
    with transaction(engine) as s:
        for video in s.exec(select(Video)).all():
            video.index_report = '{"run": "r1"}'
            s.add(video)
    first = load_clips(engine, item_id)
    seen = _statements(engine)
    assert load_clips(engine, item_id) == first
    assert "SELECT" in _verbs(seen) and len(seen) < 10  # the item's rows, not its chunks
    with transaction(engine) as s:  # re-indexed: new text, and a new report in the same transaction
        for chunk in s.exec(select(Chunk)).all():
            chunk.transcript = "changed " + chunk.transcript
            s.add(chunk)
        for video in s.exec(select(Video)).all():
            video.index_report = '{"run": "r2"}'
            s.add(video)
    again = load_clips(engine, item_id)
    lines = [text for clip in again for _, text in clip.lines]
    assert lines and all(text.startswith("changed ") for text in lines)


def test_a_foreground_run_waits_with_one_thread(tmp_path: Path) -> None:
    """A join with a timeout left a thread blocked until the queue drained, one per tick."""
    import threading

    from playlisteval.actors.app import App
    from playlisteval.actors.workers import run_foreground
    from playlisteval.store.states import State as S

    settings = project(tmp_path, sim__latency_s=0.05)
    engine = seeded_store(settings, 2)
    app = App(settings, engine=engine)
    waiting: list[int] = []

    def tick() -> None:
        waiting.append(sum(t.name in ("join_and_signal_thread", "foreground-join") for t in threading.enumerate()))

    run_foreground(app, [(i, S.PENDING) for i in items.create_items(engine)], tick, tick_s=0.05)
    assert len(waiting) > 3 and max(waiting) <= 1
    assert items.is_done(engine)


def test_foreground_runs_one_after_another_leave_no_worker_behind(tmp_path: Path,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    """dramatiq's worker adds a middleware to the broker at start and never takes it off: a batch build's
    rounds (one foreground run after another on one broker) warned at each start and kept every stopped
    worker hooked to the broker."""
    import logging

    from playlisteval.actors.app import App
    from playlisteval.actors.workers import run_foreground
    from playlisteval.store.states import State as S

    settings = project(tmp_path)
    engine = seeded_store(settings, 2)
    app = App(settings, engine=engine)
    before = list(app.broker.middleware)
    caplog.set_level(logging.WARNING, logger="dramatiq")
    work = [(i, S.PENDING) for i in items.create_items(engine)]
    for _round in range(3):
        run_foreground(app, work)
        work = []
        assert app.broker.middleware == before
    assert items.is_done(engine)
    assert not [r for r in caplog.records if "same type twice" in r.getMessage()]
