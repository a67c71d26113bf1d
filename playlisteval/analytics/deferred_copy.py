"""The ledger's first copy into the analytics file made beside the report's sections (issue 43: a cold
report at 1M judgments in 3 s).

Why: a cold report copies the store into the analytics file before anything else, both cores busy for
~1.1 s at 1M judgments and 1M ledger rows, and the ledger's groups (call_groups, ledger_groups.py) are
~0.4 s of it. The sections after the copy are mostly Python, held by the GIL, and leave a core idle for
~2 s. Only the cost figures read the ledger, so a report (``Analytics(defer_ledger=True)``) copies it on
a second DuckDB connection while the sections run, and what reads it waits (``Analytics.wait_store``).

What stays as it was:

* One state of the store. The check that no commit raced the copy (mirror.py) spans the ledger's copy
  too: the file remembers the store's state only when it held from the first copy's start to this one's
  end; when it did not, or this copy failed, ``Analytics.settle`` copies everything again in one go and
  the report computes its sections again (report.write_page): a page never mixes two states of the store.
* No connection of ours opens to a SQLite store while DuckDB's SQLite holds the file (store/engine.py,
  foreign_sqlite): the store stays attached until the ledger is copied, and whatever reads the store
  (attribution's evidence records, the funnel, the banner) waits for it first.
* A failed copy leaves the file as it was: its own transaction, rolled back.

Only a SQLite store's first copy of the ledger into a file defers (PostgreSQL's scanner reads every table in
one REPEATABLE READ transaction, which two connections would split; later reports append a few rows).
"""

from __future__ import annotations

import copy
import threading
from contextlib import ExitStack

from playlisteval.analytics import store_stamps
from playlisteval.analytics.mirror import APPEND, Mirror, Pending, Stored
from playlisteval.logs import get_logger

log = get_logger(__name__)


class DeferredCopy:
    """``pending``'s tables copied on a thread of their own through a second connection of the mirror's
    database; ``release`` (the store's attachment and the file's hand-over) is closed by ``wait``."""

    def __init__(self, mirror: Mirror, pending: Pending, release: ExitStack) -> None:
        self._mirror, self._pending, self._release = mirror, pending, release
        self._done = threading.Event()
        self.ok = False  # copied, and the store did not change from the first copy's start to this one's end
        self.error: BaseException | None = None
        self.released = False
        self._thread = threading.Thread(target=self._run, name="analytics-deferred-copy", daemon=True)
        self._thread.start()

    @property
    def names(self) -> tuple[str, ...]:
        return self._pending.names

    def _run(self) -> None:
        try:
            self.ok = finish(self._mirror, self._pending)
            if not self.ok:
                log.info("analytics.deferred_copy_raced", tables=list(self._pending.names))
        except BaseException as exc:  # noqa: BLE001 - kept for the reader (wait / Analytics.settle)
            self.error = exc
            log.info("analytics.deferred_copy_failed", error=(str(exc) or type(exc).__name__).splitlines()[0])
        finally:
            self._done.set()

    def wait(self) -> None:
        """The copy ended (done, raced or failed) and the store is released: detached from the mirror's
        connection, which the caller must not be using meanwhile (Analytics holds its query lock)."""
        self._done.wait()
        self._thread.join()
        if not self.released:
            self.released = True
            self._release.close()


def finish(mirror: Mirror, pending: Pending) -> bool:
    """The pending tables loaded whole, in a transaction of their own on a second connection; True when the
    store's files still have the stamp the first copy started at (the file then remembers that state, as a
    sync does), False when a commit came between."""
    cursor = mirror.con.cursor()
    try:
        other = copy.copy(mirror)
        other.con = cursor
        if not mirror.ordered:  # as Mirror._sync_once: the rows written on both cores
            cursor.execute("SET preserve_insertion_order = false")
        cursor.execute("BEGIN")
        try:
            for name in pending.names:
                policy = APPEND[name]
                stored = Stored.of(name, policy, mirror.groups)
                other._whole(name, mirror.columns[name], "loaded", stored=stored)
                other._record(name, mirror.columns[name], pending.runs, policy, stored)
            cursor.execute("COMMIT")
        except BaseException:
            cursor.execute("ROLLBACK")
            raise
        if store_stamps.stamp_of(pending.database) != pending.before:
            return False
        other._remember(pending.before)
        return True
    finally:
        cursor.close()
