"""The store: the single source of truth (DESIGN principle 1)."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy.engine import Engine

from playlisteval.config import Settings
from playlisteval.errors import StoreError
from playlisteval.store import media_paths
from playlisteval.store.engine import is_sqlite, make_engine, redact, transaction
from playlisteval.store.migrations import migrate

__all__ = ["open_store", "transaction", "make_engine", "migrate", "is_sqlite", "redact"]

_engines: dict[tuple[str, Path], Engine] = {}  # (url, project folder): a PostgreSQL store may serve two


def open_store(settings: Settings, *, upgrade: bool = True) -> Engine:
    """The engine for the project's store, created and migrated once per process. Media paths are stored
    relative to the project's folder or a named media root, and read back as file paths (media_paths.py)."""
    url = settings.store_url
    engine = _engines.get((url, settings.root))
    if engine is None:
        engine = make_engine(url, settings.store.busy_timeout_s, settings.store.idle_in_transaction_s)
        # the project folder first: migration 4131 stores the paths inside it relative to it
        media_paths.attach(engine, media_paths.MediaRoots(settings.root.resolve()))
        if upgrade:
            try:
                migrate(engine)
                media_paths.load(engine, settings.root)
            except Exception as exc:
                # one line: the driver's first (psycopg's "connection refused"), not SQLAlchemy's whole text
                orig = getattr(exc, "orig", None) or exc
                first = (str(orig).strip().splitlines() or [type(orig).__name__])[0]
                raise StoreError(f"cannot open or migrate the store at {redact(url)}: {first}") from exc
        else:
            try:
                media_paths.load(engine, settings.root)
            except Exception as exc:
                raise StoreError(f"cannot open the store at {redact(url)}: {exc}") from exc
        _engines[(url, settings.root)] = engine
    return engine


def forget_engines() -> None:
    """Dispose cached engines (tests; after fork)."""
    for engine in _engines.values():
        engine.dispose()
    _engines.clear()
