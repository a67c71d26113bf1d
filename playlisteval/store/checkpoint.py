"""WAL checkpoints of a SQLite file on a thread of their own, not inside a step's commit (issue 26).

SQLite's automatic checkpoint runs in the commit that finds the WAL past 1,000 pages: that commit copies
the pages into the database file and waits for its ``fdatasync`` (measured here ~10 ms, ~150 times in a
120-seed build, ~11 % of a one-thread step loop's wall time spent waiting in COMMIT). The engine's
connections turn it off (``PRAGMA wal_autocheckpoint=0``, store/engine.py) and this thread runs a PASSIVE
checkpoint every ``INTERVAL_S`` when the WAL was written since its last one: it takes no lock that writers or
readers wait for, and the sqlite3 module lets go of the GIL while it copies and syncs.

It checkpoints through a pooled connection of the engine, held only inside ``none_running``'s lock:
``foreign_sqlite`` (store/engine.py) takes that lock before it hands the file to DuckDB, so a checkpoint in
flight is waited for (milliseconds) rather than counted as a connection in use (which made a report fall
back to the slow loader by chance, CI of 5089d2b), and none starts while DuckDB has the file. A checkpoint
that cannot run now (a lock, an error) is tried at the next tick. It holds the engine weakly and ends when
the engine is gone.
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine

from playlisteval.logs import get_logger

INTERVAL_S = 0.2  # at ~1,400 commits/s, ~300 commits a checkpoint: a few MB of WAL at most between two
log = get_logger(__name__)
_RUNNING = threading.Lock()  # held across every checkpoint's use of a connection, of every file


@contextmanager
def none_running() -> Iterator[None]:
    """No checkpoint of this process holds a connection inside; one that does now is waited for."""
    with _RUNNING:
        yield


def start(engine: Engine, database: str, barred: Callable[[], bool]) -> threading.Thread:
    """Checkpoint ``database`` (the engine's file) in the background while the engine lives; none while
    ``barred()`` (the file is another library's now) — skipped, not failed."""
    thread = threading.Thread(target=_run, args=(weakref.ref(engine), Path(f"{database}-wal"), barred),
                              name="playlisteval-wal-checkpoint", daemon=True)
    thread.start()
    return thread


WARN_AFTER = 150  # failed ticks in a row (30 s) before a warning: the WAL grows while none succeeds


def _run(ref: weakref.ref[Engine], wal: Path, barred: Callable[[], bool]) -> None:
    last: tuple[int, int] | None = None
    failed = 0
    while True:
        time.sleep(INTERVAL_S)
        engine = ref()
        if engine is None:
            return
        marked = _tick(engine, wal, last, barred)
        del engine  # not held while asleep: the engine goes when its last user lets it go
        if marked is _FAILED:
            failed += 1
            if failed == WARN_AFTER:
                log.warning("store.checkpoints_failing", wal=str(wal), ticks=failed)
            continue
        failed, last = 0, marked


_FAILED = (-1, -1)


def _tick(engine: Engine, wal: Path, last: tuple[int, int] | None,
          barred: Callable[[], bool]) -> tuple[int, int] | None:
    """One checkpoint if the WAL changed since ``last`` (its mtime and size then); what to compare next, or
    ``_FAILED``."""
    try:
        stat = os.stat(wal)
    except OSError:  # no WAL yet (or deleted by the last connection's close)
        return last
    mark = (stat.st_mtime_ns, stat.st_size)
    if mark == last:
        return last
    with _RUNNING:
        if barred():  # DuckDB reads the file: tried again after it is done
            return last
        try:
            with engine.connect() as conn:
                _checkpoint(conn.connection.driver_connection)
        except Exception as exc:  # tried again at the next tick; a commit never depends on it
            log.debug("store.checkpoint_skipped", wal=str(wal), error=str(exc)[:200])
            return _FAILED
    return mark


def _checkpoint(driver: Any) -> None:
    driver.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
