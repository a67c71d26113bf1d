"""Open the store: a SQLite file (WAL, busy timeout, BEGIN IMMEDIATE) or a PostgreSQL URL.

SQLite with several processes (DESIGN, storage facts): a deferred transaction that later writes fails
at once with "database is locked", ignoring the busy timeout; so every transaction that may write
begins IMMEDIATE, and transactions stay milliseconds long (never open across a model call or a decode).
A transaction that only reads (``read``) begins deferred: under WAL it takes no write lock, so readers
never queue behind writers (issue 13: IMMEDIATE reads made a lock convoy). PostgreSQL: both the same.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.pool import NullPool
from sqlmodel import Session, create_engine

from playlisteval.errors import StoreError

_READ_ONLY = "playlisteval_read_only"  # an execution option: this connection's transaction only reads


def is_sqlite(url: str) -> bool:
    return url.startswith("sqlite")


def make_engine(url: str, busy_timeout_s: float = 30) -> Engine:
    if is_sqlite(url):
        database = make_url(url).database
        if database and database != ":memory:":
            Path(database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(
            url,
            connect_args={"timeout": busy_timeout_s, "check_same_thread": False},
            poolclass=NullPool if database in (None, "", ":memory:") else None,
        )

        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_conn: Any, _record: Any) -> None:
            dbapi_conn.isolation_level = None  # we issue BEGIN ourselves
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute(f"PRAGMA busy_timeout={int(busy_timeout_s * 1000)}")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()

        @event.listens_for(engine, "begin")
        def _on_begin(conn: Any) -> None:
            # a read-only transaction (``read``) asks for a deferred BEGIN; anything else may write
            deferred = conn.get_execution_options().get(_READ_ONLY, False)
            conn.exec_driver_sql("BEGIN" if deferred else "BEGIN IMMEDIATE")

        return engine
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url[len("postgresql://"):]
    try:
        return create_engine(url, pool_pre_ping=True, pool_size=5, max_overflow=10)
    except Exception as exc:  # bad driver name, missing driver …
        raise StoreError(f"cannot open store {redact(url)}: {exc}") from exc


def redact(url: str) -> str:
    """The URL with any password hidden, for messages and logs."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return "<store url>"


@contextmanager
def transaction(engine: Engine) -> Iterator[Session]:
    """One short transaction: committed on success, rolled back on any error."""
    with Session(engine, expire_on_commit=False) as session, session.begin():
        yield session


@contextmanager
def read(engine: Engine) -> Iterator[Session]:
    """One short transaction that only reads: deferred on SQLite (no write lock, no queue behind writers).
    Never write in it: on SQLite a deferred transaction that writes fails with "database is locked"
    at once, ignoring the busy timeout. Rolled back at the end (there is nothing to commit)."""
    with engine.connect() as conn:
        conn.execution_options(**{_READ_ONLY: True})
        with Session(bind=conn, expire_on_commit=False) as session:
            yield session  # the session begins on the connection at its first query, and rolls back on close
