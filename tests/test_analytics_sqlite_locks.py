"""DuckDB's sqlite scanner and Python's sqlite3 never have the store file open together in one process.

Each carries its own SQLite library, and POSIX locks belong to the process: a descriptor closed by one
drops the other's locks, among them the WAL connection's shared lock that tells other processes they are
not the last. Then the last other process to exit deletes -wal and -shm under our open connection. These
tests use real processes: a worker that holds the store during the report, a writer that commits and exits.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine

from playlisteval.analytics import Analytics, mirror, scan
from playlisteval.config import Settings
from playlisteval.store import checkpoint, open_store
from playlisteval.store.engine import SqliteFileBusy, read
from tests import analytics_fixtures
from tests.helpers import project

# another process: one UPDATE committed, then exit (closing what may be the store's last connection)
WRITER = ("import sqlite3, sys; c = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30); "
          "c.execute('UPDATE item SET phase1_attempts = phase1_attempts + 1'); c.close()")
# another process holding a connection (a worker) until told to go
HOLDER = ("import sqlite3, sys; c = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30); "
          "c.execute('PRAGMA journal_mode=WAL'); c.execute('SELECT count(*) FROM item').fetchall(); "
          "print('ready', flush=True); sys.stdin.readline(); c.close()")


SUM = text("SELECT sum(phase1_attempts) FROM item")


def _store(tmp_path: Path) -> tuple[Settings, Engine, Path]:
    db = tmp_path / "store.db"
    settings = project(tmp_path, store__url=f"sqlite:///{db}")
    engine = open_store(settings)
    analytics_fixtures.build(engine)
    return settings, engine, db


def _write(db: Path) -> None:
    subprocess.run([sys.executable, "-c", WRITER, str(db)], check=True, timeout=120)


def _attempts(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(SUM).scalar_one())


def _open_fds(db: Path) -> list[str]:
    """This process's descriptors on the store's files."""
    out = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(str(db)):
            out.append(target)
    return out


def test_our_connection_keeps_its_wal_after_a_report_and_other_processes_exit(tmp_path: Path) -> None:
    """/tmp/lk.py through the project: a worker holds the store while a report reads it here; afterwards
    a connection of ours is open, the worker exits, a writer commits and exits. Our connection is still
    counted by the others (its shared lock intact): -wal and -shm stay, the same files, and it reads the
    write; a fresh connection sets up WAL without "disk I/O error"."""
    settings, engine, db = _store(tmp_path)
    before = _attempts(engine)  # a pooled connection of ours is open across the report, as in a real command
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(db)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        with Analytics(engine, settings) as an:
            assert an.sync is not None  # read by DuckDB's scanner, not the Python loader
            assert an.rows("SELECT sum(phase1_attempts) AS n FROM item") == [{"n": before}]
        with read(engine) as ours:  # opened after the report, held while the others exit (deferred: no write lock)
            assert ours.execute(SUM).scalar_one() == before
            ours.rollback()  # the connection stays ours; only the snapshot ends
            shm = os.stat(f"{db}-shm").st_ino
            assert holder.stdin is not None
            holder.stdin.write("go\n")
            holder.stdin.flush()
            assert holder.wait(timeout=120) == 0
            _write(db)
            assert os.path.exists(f"{db}-wal") and os.stat(f"{db}-shm").st_ino == shm  # not deleted under us
            assert ours.execute(SUM).scalar_one() == before + 5
        engine.dispose()
        with engine.connect() as conn:  # a fresh one: PRAGMA journal_mode=WAL on connect
            assert conn.execute(SUM).scalar_one() == before + 5
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()


def test_the_store_engine_is_barred_inside_the_attachment(tmp_path: Path) -> None:
    """Inside DuckDB's attachment no Python connection to the file may open (clear error, nothing opened);
    a connection of ours in use on entry keeps DuckDB out (the report reads through the Python loader);
    after the detach neither library has the file open, and the engine connects again."""
    settings, engine, db = _store(tmp_path)
    con = duckdb.connect(":memory:")
    with scan.attached(con, engine) as sqlite:
        assert sqlite
        assert not _open_fds(db)  # our pooled connections were closed on entry
        assert con.execute(f"SELECT count(*) FROM {scan.ALIAS}.item").fetchall() == [(5,)]
        with pytest.raises(SqliteFileBusy, match="DuckDB's own SQLite"), engine.connect() as conn:
            conn.execute(text("SELECT 1"))
        assert not _open_fds(db)  # refused before the driver opened the file
    # DuckDB closed it by DETACH. The WAL checkpoint thread may already have used a pooled connection of
    # ours again once the bar lifted (a race the full suite's load found): close the pool's idle
    # connections while no checkpoint holds one, so what is left open could only be DuckDB's
    with checkpoint.none_running():
        engine.dispose()
        assert not _open_fds(db)
    con.close()
    assert _attempts(engine) == 0

    with read(engine) as held:  # in use: DuckDB must not open the file now
        held.execute(text("SELECT 1"))
        with pytest.raises(scan.ScanUnavailable, match="in use"), scan.attached(duckdb.connect(":memory:"), engine):
            pass
        with Analytics(engine, settings, file=False) as an:  # so the report falls back, same numbers
            assert an.sync is None and an.rows("SELECT count(*) AS n FROM item") == [{"n": 5}]
        held.execute(text("SELECT 1"))  # and ours was left alone


def test_a_commit_by_another_process_during_the_copy_copies_again(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The copy has no snapshot across tables: a commit from another process in the middle of it (seen by
    the store file's stamps, with no Python connection open) makes it copy again, and what is copied is the
    store after the commit."""
    settings, engine, db = _store(tmp_path)
    original = mirror.Mirror._sync_once
    attempts: list[int] = []

    def interrupted(self: mirror.Mirror) -> mirror.SyncStats:
        stats = original(self)
        attempts.append(1)
        if len(attempts) == 1:
            _write(db)  # between this copy and the check that it saw no commit
        return stats

    monkeypatch.setattr(mirror.Mirror, "_sync_once", interrupted)
    with Analytics(engine, settings) as an:
        assert len(attempts) == 2 and an.sync is not None
        assert an.rows("SELECT sum(phase1_attempts) AS n FROM item") == [{"n": 5}]
    assert _attempts(engine) == 5
