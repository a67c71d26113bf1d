"""A connection kept per thread for a SQLite file's short transactions (store/kept.py, issue 26): reused by
the thread's next transaction, never shared by two at once, given back after an error, closed when the
engine is disposed or the thread ends, and never in the way of DuckDB's SQLite (foreign_sqlite)."""

from __future__ import annotations

import gc
import sqlite3
import threading
import time
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine

from playlisteval.store import checkpoint, kept
from playlisteval.store.engine import SqliteFileBusy, foreign_sqlite, make_engine, read_core


@pytest.fixture()
def engine(tmp_path: Path) -> Engine:
    made = make_engine(f"sqlite:///{tmp_path / 'store.db'}", busy_timeout_s=5)
    with made.begin() as conn:
        conn.execute(text("CREATE TABLE t (a INTEGER)"))
    yield made
    made.dispose()


def _rows(engine: Engine) -> list[int]:
    with read_core(engine) as conn:
        return [int(a) for (a,) in conn.execute(text("SELECT a FROM t ORDER BY a"))]


def test_a_thread_reuses_its_connection_and_a_nested_transaction_gets_its_own(engine: Engine) -> None:
    with kept.begin(engine) as first:
        first.execute(text("INSERT INTO t VALUES (1)"))
    with kept.begin(engine) as second:
        assert second is first  # the same Connection: not checked out again
        with kept.read(engine) as inner:  # inside the thread's own transaction: a pooled one
            assert inner is not first
            assert [a for (a,) in inner.execute(text("SELECT a FROM t"))] == [1]
        second.execute(text("INSERT INTO t VALUES (2)"))
    assert _rows(engine) == [1, 2]


def test_an_error_rolls_back_and_gives_the_connection_back(engine: Engine) -> None:
    with kept.begin(engine) as before:
        pass
    with pytest.raises(RuntimeError), kept.begin(engine) as conn:
        conn.execute(text("INSERT INTO t VALUES (7)"))
        raise RuntimeError("the step failed")
    with kept.begin(engine) as after:
        assert after is not before  # nothing the failed transaction left is reused
    assert before.closed
    assert _rows(engine) == []


def test_a_kept_read_takes_no_write_lock(engine: Engine, tmp_path: Path) -> None:
    other = sqlite3.connect(tmp_path / "store.db", isolation_level=None, timeout=0)
    other.execute("BEGIN IMMEDIATE")  # another writer holds the lock
    try:
        assert _rows(engine) == []  # deferred: reads the snapshot at once, does not queue
    finally:
        other.execute("ROLLBACK")
        other.close()


def test_dispose_closes_idle_kept_connections_and_a_busy_one_when_it_ends(engine: Engine) -> None:
    with kept.begin(engine) as idle:
        driver = idle.connection.driver_connection
    engine.dispose()
    with pytest.raises(sqlite3.ProgrammingError):  # closed, not left open in a disposed pool
        driver.execute("SELECT 1")  # type: ignore[union-attr]
    with kept.begin(engine) as busy:
        busy_driver = busy.connection.driver_connection
        engine.dispose()
        busy.execute(text("INSERT INTO t VALUES (3)"))  # still this transaction's
    with pytest.raises(sqlite3.ProgrammingError):
        busy_driver.execute("SELECT 1")  # type: ignore[union-attr]
    assert _rows(engine) == [3]


def test_duckdb_is_refused_while_another_thread_is_inside_a_kept_transaction(engine: Engine, tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    inside, leave = threading.Event(), threading.Event()

    def step() -> None:
        with kept.begin(engine) as conn:
            conn.execute(text("INSERT INTO t VALUES (4)"))
            inside.set()
            leave.wait(10)

    worker = threading.Thread(target=step)
    worker.start()
    assert inside.wait(10)
    with pytest.raises(SqliteFileBusy), foreign_sqlite(db):
        pass
    leave.set()
    worker.join()
    with foreign_sqlite(db), pytest.raises(SqliteFileBusy):  # idle now: closed on entry, none opened inside
        _rows(engine)
    assert _rows(engine) == [4]


def test_a_finished_threads_connection_goes_back_to_the_pool(engine: Engine) -> None:
    def step() -> None:
        with kept.begin(engine) as conn:
            conn.execute(text("INSERT INTO t VALUES (5)"))

    worker = threading.Thread(target=step)
    worker.start()
    worker.join()
    keeper = getattr(engine, kept._ATTR)
    # the pool is counted with no WAL checkpoint in flight: the checkpoint thread (store/checkpoint.py) holds a
    # pooled connection of this engine for the milliseconds of each one, and the INSERT above starts one
    with checkpoint.none_running():
        assert len(keeper.slots) == 1 and engine.pool.checkedout() == 1  # type: ignore[attr-defined]
    del worker
    gc.collect()
    # the Thread may also be collected on another thread (the checkpoint thread allocates too), whose
    # finalizer is then still running: wait for it, a bounded wait for an event, not a speed claim
    deadline = time.monotonic() + 10
    while keeper.slots and time.monotonic() < deadline:
        time.sleep(0.01)
    assert keeper.slots == {}
    with checkpoint.none_running():
        assert engine.pool.checkedout() == 0  # type: ignore[attr-defined]
    assert _rows(engine) == [5]


def test_threads_past_the_limit_use_the_pool(engine: Engine) -> None:
    barrier = threading.Barrier(kept.LIMIT + 2)
    errors: list[BaseException] = []

    def step(n: int) -> None:
        try:
            with kept.begin(engine) as conn:
                conn.execute(text("INSERT INTO t VALUES (:n)"), {"n": n})
            barrier.wait(10)  # every thread alive at once: at most LIMIT keep a connection
        except BaseException as exc:  # pragma: no cover - shown by the assertion
            errors.append(exc)

    threads = [threading.Thread(target=step, args=(n,)) for n in range(kept.LIMIT + 1)]
    for thread in threads:
        thread.start()
    barrier.wait(10)
    assert len(getattr(engine, kept._ATTR).slots) <= kept.LIMIT
    for thread in threads:
        thread.join()
    assert not errors
    assert _rows(engine) == list(range(kept.LIMIT + 1))
