"""The store: the single source of truth (DESIGN principle 1)."""

from __future__ import annotations

from sqlalchemy.engine import Engine

from playlisteval.config import Settings
from playlisteval.errors import StoreError
from playlisteval.store.engine import is_sqlite, make_engine, redact, transaction
from playlisteval.store.migrations import migrate

__all__ = ["open_store", "transaction", "make_engine", "migrate", "is_sqlite", "redact"]

_engines: dict[str, Engine] = {}


def open_store(settings: Settings, *, upgrade: bool = True) -> Engine:
    """The engine for the project's store, created and migrated once per process."""
    url = settings.store_url
    engine = _engines.get(url)
    if engine is None:
        engine = make_engine(url, settings.store.busy_timeout_s)
        if upgrade:
            try:
                migrate(engine)
            except Exception as exc:
                # one line: the driver's first (psycopg's "connection refused"), not SQLAlchemy's whole text
                orig = getattr(exc, "orig", None) or exc
                first = (str(orig).strip().splitlines() or [type(orig).__name__])[0]
                raise StoreError(f"cannot open or migrate the store at {redact(url)}: {first}") from exc
        _engines[url] = engine
    return engine


def forget_engines() -> None:
    """Dispose cached engines (tests; after fork)."""
    for engine in _engines.values():
        engine.dispose()
    _engines.clear()
