"""One connection kept per thread for a SQLite file's short transactions (issue 26).

``engine.begin()`` checks a connection out of the pool, wraps it in a new ``Connection`` and gives it back
(with the pool's reset) at the end: measured here ~38 µs for a one-statement transaction, ~20 µs of it the
check-out and check-in, paid about ten times a build transition. ``begin`` and ``read`` below run the
transaction on the calling thread's own ``Connection``, checked out of the pool once and kept: the same
SQLAlchemy transaction (its events, so store/engine.py's ``BEGIN`` and the bench's lock timer; its commit,
rollback and error handling), without the round trip through the pool.

What keeps that as safe as the pool:
- a kept connection serves one transaction at a time: a nested one (the thread's connection is in use)
  takes a pooled connection, as every transaction did before;
- a transaction that ends in an error gives its connection back to the pool: nothing it left is reused;
- the engine's ``dispose`` (``forget_engines``, ``foreign_sqlite`` handing the file to DuckDB) closes every
  idle kept connection at once, and one in use when its transaction ends; until then it counts as in use,
  so ``foreign_sqlite`` refuses as before;
- at most ``LIMIT`` an engine (the threads past it use the pool); a dead thread's is closed when its
  ``Thread`` goes, or when another thread needs the place.
PostgreSQL and in-memory SQLite keep the pool (``keep`` is not called for them).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine

READ_ONLY = "playlisteval_read_only"  # an execution option: this pooled connection's transaction only reads
LIMIT = 8  # kept connections an engine: the SQLite pool's 5 + 10 overflow leave room for everything else
_ATTR = "_playlisteval_kept"
_DEFERRED = threading.local()  # set around a kept read's ``conn.begin()``: its BEGIN is deferred


def deferred() -> bool:
    """Whether the transaction beginning now on this thread is a kept read (store/engine.py's ``begin``
    listener asks: a kept connection carries no per-transaction execution option)."""
    return bool(getattr(_DEFERRED, "on", False))


class _Slot:
    """One thread's kept connection: ``busy`` while a transaction runs on it; ``discard`` when the engine was
    disposed meanwhile (closed at the end of that transaction)."""

    __slots__ = ("thread", "conn", "busy", "discard", "lock", "__weakref__")

    def __init__(self, thread: threading.Thread) -> None:
        self.thread = weakref.ref(thread)
        self.conn: Connection | None = None
        self.busy = self.discard = False
        self.lock = threading.RLock()  # re-entrant, as the keeper's (a finalizer may close it on any thread)

    def close(self, *, invalidate: bool) -> None:
        """Close the connection now, or when its transaction ends (``invalidate``: close the driver's
        connection too, not only give it back to a pool that is being disposed)."""
        with self.lock:
            if self.busy:
                self.discard = True
                return
            conn, self.conn = self.conn, None
        if conn is not None:
            _close(conn, invalidate=invalidate)


def _close(conn: Connection, *, invalidate: bool) -> None:
    if conn.closed:  # closed already (by a finalizer that ran in between)
        return
    if invalidate:
        conn.invalidate()  # the driver's connection closed now: a disposed pool would keep it open
    conn.close()


class _Keeper:
    def __init__(self) -> None:
        self.slots: dict[int, _Slot] = {}  # thread ident -> its slot
        # re-entrant: a thread's end is noticed by a finalizer (_forget), which the collector may run on any
        # thread at any allocation, this lock's holder included
        self.lock = threading.RLock()

    def slot(self) -> _Slot | None:
        ident = threading.get_ident()
        found = self.slots.get(ident)  # one dict read: atomic under the GIL
        thread = threading.current_thread()
        if found is not None and found.thread() is thread:
            return found
        with self.lock:
            if found is not None:  # a dead thread's ident, reused
                self._drop(ident, found)
            if len(self.slots) >= LIMIT:
                for other, slot in list(self.slots.items()):
                    alive = slot.thread()
                    if alive is None or not alive.is_alive():
                        self._drop(other, slot)
            if len(self.slots) >= LIMIT:
                return None
            made = self.slots[ident] = _Slot(thread)
        # weakly: nothing global keeps the engine (or its connection) alive past its last user
        weakref.finalize(thread, _forget, weakref.ref(self), ident, weakref.ref(made))
        return made

    def _drop(self, ident: int, slot: _Slot) -> None:  # under self.lock
        # closed before it leaves the dict: a slot no longer listed has given its connection back, even when
        # the finalizer runs on another thread (the collector runs on whichever thread allocates)
        slot.close(invalidate=False)
        if self.slots.get(ident) is slot:
            del self.slots[ident]

    def close_all(self) -> None:
        with self.lock:
            slots = list(self.slots.values())
        for slot in slots:
            slot.close(invalidate=True)


def _forget(keeper: weakref.ref[_Keeper], ident: int, slot: weakref.ref[_Slot]) -> None:
    """A thread ended: close its kept connection (if engine and slot are still there)."""
    alive, made = keeper(), slot()
    if alive is not None and made is not None:
        with alive.lock:
            alive._drop(ident, made)


def keep(engine: Engine) -> None:
    """Let ``begin`` and ``read`` keep a connection per thread for this engine (a SQLite file's)."""
    keeper = _Keeper()
    setattr(engine, _ATTR, keeper)

    @event.listens_for(engine, "engine_disposed")
    def _disposed(_engine: Any) -> None:
        keeper.close_all()


@contextmanager
def begin(engine: Engine) -> Iterator[Connection]:
    """``engine.begin()``: one transaction that may write, committed at the end, rolled back on an error."""
    with _kept(engine, read_only=False) as conn:
        yield conn


@contextmanager
def read(engine: Engine) -> Iterator[Connection]:
    """One transaction that only reads (deferred on SQLite: store/engine.py), rolled back at the end."""
    with _kept(engine, read_only=True) as conn:
        yield conn


@contextmanager
def _kept(engine: Engine, *, read_only: bool) -> Iterator[Connection]:
    keeper: _Keeper | None = getattr(engine, _ATTR, None)
    slot = keeper.slot() if keeper is not None else None
    if slot is not None:
        with slot.lock:
            if slot.busy:  # a transaction inside this thread's own: a connection of its own, as before
                slot = None
            else:
                slot.busy = True
    if slot is None or keeper is None:
        with _pooled(engine, read_only=read_only) as conn:
            yield conn
        return
    ok = False
    try:
        if slot.conn is None:
            slot.conn = engine.connect()  # may refuse (SqliteFileBusy while DuckDB has the file)
        conn = slot.conn
        _DEFERRED.on = read_only
        try:
            tx = conn.begin()
        finally:
            _DEFERRED.on = False
        with tx:
            yield conn
            if read_only:
                tx.rollback()
        ok = True
    finally:
        with slot.lock:
            slot.busy = False
            conn_left = slot.conn if (not ok or slot.discard) else None
            if conn_left is not None:
                slot.conn = None
            invalidate, slot.discard = slot.discard, False
        if conn_left is not None:
            _close(conn_left, invalidate=invalidate)


@contextmanager
def _pooled(engine: Engine, *, read_only: bool) -> Iterator[Connection]:
    with engine.connect() as conn:
        if read_only:
            conn.execution_options(**{READ_ONLY: True})
        with conn.begin() as tx:
            yield conn
            if read_only:
                tx.rollback()
