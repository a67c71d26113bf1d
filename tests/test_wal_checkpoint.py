"""WAL checkpoints on a thread of their own (store/checkpoint.py, issue 26): the engine's connections never
checkpoint in a commit, the thread copies what was committed into the database file, and it ends with
its engine."""

from __future__ import annotations

import gc
import threading
import time
from pathlib import Path

from sqlalchemy import text

from playlisteval.store import checkpoint
from playlisteval.store.engine import make_engine


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
