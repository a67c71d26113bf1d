"""Open the store: a SQLite file (WAL, busy timeout, BEGIN IMMEDIATE) or a PostgreSQL URL.

SQLite with several processes (DESIGN, storage facts): a deferred transaction that later writes fails
at once with "database is locked", ignoring the busy timeout; so every transaction here begins
IMMEDIATE, and transactions stay milliseconds long (never open across a model call or a decode).
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
            conn.exec_driver_sql("BEGIN IMMEDIATE")

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
