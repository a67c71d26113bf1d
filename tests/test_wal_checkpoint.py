"""WAL checkpoints on a thread of their own (store/checkpoint.py, issue 26): the engine's connections never
checkpoint in a commit, the thread copies what was committed into the database file, and it ends with
its engine."""

from __future__ import annotations

import gc
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from playlisteval.store import checkpoint
from playlisteval.store.engine import foreign_sqlite, make_engine

# another process commits one row and holds its connection (so its exit does not checkpoint) until told
WRITER = ("import sqlite3, sys; c = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30); "
          "c.execute('PRAGMA wal_autocheckpoint=0'); c.execute('INSERT INTO t VALUES (2)'); "
          "print('ready', flush=True); sys.stdin.readline(); c.close()")


def _threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "playlisteval-wal-checkpoint"]


def test_commits_do_not_checkpoint_and_the_thread_does(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    engine = make_engine(f"sqlite:///{db}", busy_timeout_s=5)
    with engine.begin() as conn:
        assert conn.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar() == 0
        conn.exec_driver_sql("CREATE TABLE t (a TEXT)")
    empty = db.stat().st_size
    for n in range(50):
        with engine.begin() as conn:
            conn.execute(text("INSERT INTO t VALUES (:a)"), {"a": "x" * 4000 + str(n)})
    deadline = time.monotonic() + 10
    while db.stat().st_size <= empty and time.monotonic() < deadline:  # the rows reach the database file
        time.sleep(checkpoint.INTERVAL_S / 2)
    assert db.stat().st_size > empty + 50 * 4000
    with engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT count(*) FROM t").scalar() == 50
    engine.dispose()


def test_the_thread_ends_with_its_engine(tmp_path: Path) -> None:
    before = set(_threads())
    engine = make_engine(f"sqlite:///{tmp_path / 'store.db'}", busy_timeout_s=5)
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE t (a INTEGER)")
    (started,) = set(_threads()) - before
    engine.dispose()
    del engine, conn
    gc.collect()
    started.join(10 * checkpoint.INTERVAL_S + 5)
    assert not started.is_alive()


def test_the_file_is_handed_to_duckdb_after_a_checkpoint_in_flight_and_none_starts_inside(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A checkpoint holding a connection when a report hands the file to DuckDB's SQLite is waited for, not
    counted as a connection in use (the report fell back to its slow loader by chance: CI of 5089d2b); while
    DuckDB has the file, a WAL written by another process starts no checkpoint here and none is tried and
    counted as failed (30 s of those would warn that checkpoints keep failing)."""
    db = tmp_path / "store.db"
    engine = make_engine(f"sqlite:///{db}", busy_timeout_s=5)
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE t (a INTEGER)")
    started = threading.Event()

    def slow(driver: Any) -> None:
        started.set()
        time.sleep(0.5)  # in flight while the report begins
        driver.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()

    monkeypatch.setattr(checkpoint, "_checkpoint", slow)
    skipped: list[str] = []

    class Recorder:  # the thread's log: a tick that tried and failed says so at debug
        def debug(self, event: str, **_kw: Any) -> None:
            skipped.append(event)

        warning = debug

    monkeypatch.setattr(checkpoint, "log", Recorder())
    time.sleep(2 * checkpoint.INTERVAL_S)  # the CREATE's checkpoint, if any, is done
    started.clear()
    with engine.begin() as conn:
        conn.exec_driver_sql("INSERT INTO t VALUES (1)")
    assert started.wait(10)
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(db)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        with foreign_sqlite(db):  # before: SqliteFileBusy, "1 connection(s) ... in use"
            started.clear()
            assert writer.stdout is not None and writer.stdout.readline().strip() == "ready"
            time.sleep(5 * checkpoint.INTERVAL_S)
            assert not started.is_set() and not skipped
        assert started.wait(10)  # after the report: the other process's write is checkpointed
        with engine.connect() as conn:
            assert conn.exec_driver_sql("SELECT count(*) FROM t").scalar() == 2
    finally:
        writer.communicate("go\n", timeout=60)
    engine.dispose()
