"""Open the store: a SQLite file (WAL, busy timeout, BEGIN IMMEDIATE) or a PostgreSQL URL.

SQLite with several processes (DESIGN, storage facts): a deferred transaction that later writes fails
at once with "database is locked", ignoring the busy timeout; so every transaction that may write
begins IMMEDIATE, and transactions stay milliseconds long (never open across a model call or a decode).
A transaction that only reads (``read``) begins deferred: under WAL it takes no write lock, so readers
never queue behind writers (issue 13: IMMEDIATE reads made a lock convoy). PostgreSQL: both the same.
"""

from __future__ import annotations

import operator
import os
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.pool import NullPool

from playlisteval.errors import InfrastructureError, StoreError
from playlisteval.store import checkpoint, kept
from playlisteval.store.redacted import redact_writes

if TYPE_CHECKING:  # the ORM (SQLModel's Session) loads with the first ORM transaction, not with the engine:
    from sqlmodel import Session  # `status` reads through Core only (issue 26: the ORM is a third of its start)

_READ_ONLY = kept.READ_ONLY  # an execution option: this connection's transaction only reads


def is_sqlite(url: str) -> bool:
    return url.startswith("sqlite")


def make_engine(url: str, busy_timeout_s: float = 30, idle_in_transaction_s: float = 0) -> Engine:
    """The engine for ``url``. PostgreSQL: with ``idle_in_transaction_s`` > 0, the server ends a session that
    stays silent inside a transaction that long (``idle_in_transaction_session_timeout``). Why: a worker cut
    off mid-transaction (its host lost the network, or froze) keeps its locks, the budget's advisory lock
    among them, until the server's TCP gives up on it — hours — and every other worker's reservation waits
    behind it. Transactions here stay milliseconds long, so a long silence means the client is gone."""
    if is_sqlite(url):
        database = make_url(url).database
        if database and database != ":memory:":
            Path(database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(
            url,
            connect_args={"timeout": busy_timeout_s, "check_same_thread": False},
            poolclass=NullPool if database in (None, "", ":memory:") else None,
        )
        on_file = bool(database and database != ":memory:")

        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_conn: Any, _record: Any) -> None:
            dbapi_conn.isolation_level = None  # we issue BEGIN ourselves
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute(f"PRAGMA busy_timeout={int(busy_timeout_s * 1000)}")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA foreign_keys=ON")
            if on_file:  # not in the commits: on a thread of its own (store/checkpoint.py)
                cur.execute("PRAGMA wal_autocheckpoint=0")
            cur.close()

        if on_file and database:  # (database: for the type checker)
            _remember(engine, database)  # released while DuckDB's own SQLite reads the file (foreign_sqlite)
            kept.keep(engine)  # a connection kept per thread for the short transactions (store/kept.py)
            checkpoint.start(engine, database, barred=partial(operator.contains, _FOREIGN, _file_key(database)))

        @event.listens_for(engine, "begin")
        def _on_begin(conn: Any) -> None:
            # a read-only transaction (``read``) asks for a deferred BEGIN; anything else may write
            deferred = kept.deferred() or conn.get_execution_options().get(_READ_ONLY, False)
            # on the driver's connection: every transaction begins here, and a statement through SQLAlchemy
            # costs more than the BEGIN itself (issue 26); an error is still SQLAlchemy's (a lock, a lost file)
            try:
                conn.connection.driver_connection.execute("BEGIN" if deferred else "BEGIN IMMEDIATE")
            except Exception as exc:
                conn._handle_dbapi_exception(exc, "BEGIN", (), None, None)

        redact_writes(engine)  # no key a provider quoted is stored (issue 25)
        return engine
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url[len("postgresql://"):]
    try:
        # the libpq ``options`` of every session; set by hand in the URL's query, the URL's win
        timeout_ms = max(1, round(idle_in_transaction_s * 1000))
        options = {"options": f"-c idle_in_transaction_session_timeout={timeout_ms}"} \
            if idle_in_transaction_s > 0 and "options" not in make_url(url).query else {}
        engine = create_engine(url, pool_pre_ping=True, pool_size=5, max_overflow=10, connect_args=options)
    except Exception as exc:  # bad driver name, missing driver …
        raise StoreError(f"cannot open store {redact(url)}: {exc}") from exc
    redact_writes(engine)  # no key a provider quoted is stored (issue 25)
    return engine


def redact(url: str) -> str:
    """The URL with any password hidden, for messages and logs."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return "<store url>"


@contextmanager
def transaction(engine: Engine) -> Iterator[Session]:
    """One short transaction: committed on success, rolled back on any error."""
    from sqlmodel import Session

    with Session(engine, expire_on_commit=False) as session, session.begin():
        yield session


@contextmanager
def read(engine: Engine) -> Iterator[Session]:
    """One short transaction that only reads: deferred on SQLite (no write lock, no queue behind writers).
    Never write in it: on SQLite a deferred transaction that writes fails with "database is locked"
    at once, ignoring the busy timeout. Rolled back at the end (there is nothing to commit)."""
    from sqlmodel import Session

    with engine.connect() as conn:
        conn.execution_options(**{_READ_ONLY: True})
        with Session(bind=conn, expire_on_commit=False) as session:
            yield session  # the session begins on the connection at its first query, and rolls back on close


@contextmanager
def read_core(engine: Engine) -> Iterator[Connection]:
    """``read`` without the ORM: a Core connection in one deferred, read-only transaction (rolled back at the
    end). For the commands that only read a few counts (`status`): they never load the table classes. On a
    SQLite file, on the thread's kept connection (store/kept.py)."""
    with kept.read(engine) as conn:
        yield conn


# --- one SQLite library per store file at a time -----------------------------------------------------------
# DuckDB's sqlite scanner (analytics/scan.py) carries its own copy of the SQLite library. POSIX (fcntl)
# locks belong to the process, and closing any descriptor of a file drops ALL of the process's locks on it,
# whichever library took them. A WAL connection keeps a shared lock on the -shm file that tells other
# processes they are not the last: once it is dropped, the last other process to close checkpoints and
# deletes -wal and -shm under our open connection ("disk I/O error", or reads of a stale wal-index). So
# while DuckDB's SQLite has the file open this process's Python SQLite has no connection to it, and the
# other way round: every engine made above is registered by its file, released and barred meanwhile.


class SqliteFileBusy(InfrastructureError):
    """The store file is in the hands of another SQLite library of this process (or cannot be handed over).
    Like a lock: a step that meets it (another thread, during a report's copy) is given back and retried."""


_LOCK = threading.Lock()
_RECORDS: dict[str, weakref.WeakSet[Any]] = {}  # file -> its pool connection records, of every engine
_ENGINES: dict[str, weakref.WeakSet[Engine]] = {}  # file -> the engines made for it (weakly: never kept alive)
_FOREIGN: dict[str, int] = {}  # file -> foreign_sqlite blocks inside it now (DuckDB shares its one library)


def _file_key(database: str | Path) -> str:
    return os.path.realpath(database)


def _remember(engine: Engine, database: str) -> None:
    path = _file_key(database)
    with _LOCK:
        _ENGINES.setdefault(path, weakref.WeakSet()).add(engine)
        records = _RECORDS.setdefault(path, weakref.WeakSet())

    @event.listens_for(engine, "do_connect")
    def _bar_connect(*_args: Any) -> None:  # before the driver opens (and so could later close) the file
        _bar(path)

    @event.listens_for(engine, "connect")
    def _track(_dbapi_conn: Any, record: Any) -> None:
        with _LOCK:
            records.add(record)

    @event.listens_for(engine, "checkout")
    def _bar_checkout(*_args: Any) -> None:  # none is pooled inside (released on entry): belt and braces
        _bar(path)


def _bar(path: str) -> None:
    if _FOREIGN.get(path):
        raise SqliteFileBusy(
            f"the store {path} is being read by DuckDB's own SQLite in this process (analytics): no connection "
            "through Python's SQLite may open it until DuckDB is done (closing either drops the other's locks)")


def release_sqlite_file(path: str | Path) -> int:
    """Close this process's idle Python SQLite connections to the file (every engine's pool disposed, and
    any connection left in a pool disposed earlier); the number still in use (checked out) is returned."""
    key = _file_key(path)
    with _LOCK:
        engines = list(_ENGINES.get(key, ()))
    for engine in engines:
        engine.dispose()
    with _LOCK:
        records = list(_RECORDS.get(key, ()))
    in_use = 0
    for record in records:
        if record.dbapi_connection is None:
            continue
        if record.fairy_ref is None:  # idle, in a pool disposed while it was checked out: close it now
            record.invalidate()
        else:
            in_use += 1
    return in_use


@contextmanager
def foreign_sqlite(path: str | Path) -> Iterator[None]:
    """Around another SQLite library's use of the file in this process (DuckDB's attach … detach, which
    must close the file by the end): Python's connections to it are closed first, and none may be opened
    or checked out inside (SqliteFileBusy). One still in use on entry: SqliteFileBusy, nothing handed over."""
    key = _file_key(path)
    with checkpoint.none_running(), _LOCK:  # a checkpoint in flight is waited for, not counted as in use
        _FOREIGN[key] = _FOREIGN.get(key, 0) + 1  # first: no new connection between the check and the attach
    try:
        in_use = release_sqlite_file(key)
        if in_use:
            raise SqliteFileBusy(f"{in_use} connection(s) to the store {key} through Python's SQLite are in use "
                                 "in this process: DuckDB's SQLite cannot open it safely now")
        yield
    finally:
        with _LOCK:
            _FOREIGN[key] -= 1
            if not _FOREIGN[key]:
                del _FOREIGN[key]
