"""The last leaderboard's printed text in a file beside the analytics file, found without DuckDB (issue 26).

board_cache.py keeps the board inside the analytics file and finds it once DuckDB has started, synced
the store and hashed every table: on an unchanged store that is most of the command (DuckDB's and
pyarrow's start, the sync check, the ORM's first query). This file is checked before any of it: when the
store is a SQLite file whose files (main and -wal: inode, size, modification time; stamps.py) are exactly
as they were when the board was printed, and the settings, the code and what was asked are the same,
no row can differ, and the text kept is printed as it is.

A board is written here only when the store's files were the same before and after it was computed (a
commit meanwhile leaves nothing written: the next leaderboard computes). Any commit changes the stamps.
A PostgreSQL store, or a store in memory, has no such stamps and always takes board_cache.py's path.
Writes are whole (a temporary file renamed); a file that cannot be read or written is only a miss.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from playlisteval.analytics.code_version import code_version
from playlisteval.analytics.stamps import settled

if TYPE_CHECKING:
    from playlisteval.config import Settings

log = structlog.get_logger(__name__)

FILE_NAME = "leaderboard.kept.json"  # beside analytics.duckdb (runner.FILE_NAME), in the project's folder
_SQLITE = "sqlite:///"


def store_file(settings: Settings) -> str | None:
    """The SQLite store's file, or None (PostgreSQL, memory, a URL with options: no stamps to trust)."""
    url = settings.store_url
    if not url.startswith(_SQLITE) or "?" in url or url == _SQLITE + ":memory:":
        return None
    return url[len(_SQLITE):]


def _path(settings: Settings) -> Path | None:
    root = getattr(settings, "root", None)
    return Path(root) / FILE_NAME if root is not None else None


def key(settings: Settings, asked: list[Any]) -> str | None:
    """The key of a board for ``asked`` on the store as its files are now; None where there is none."""
    database = store_file(settings)
    if database is None or not os.path.exists(database):
        return None
    blob = json.dumps([code_version(), settings.model_dump_json(), asked, database, settled(database)],
                      default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def load(settings: Settings, kind: str, board_key: str | None) -> str | None:
    path = _path(settings)
    if board_key is None or path is None:
        return None
    try:
        kept = json.loads(path.read_text())
        entry = kept.get(kind) if isinstance(kept, dict) else None
    except (OSError, ValueError):
        return None
    if not isinstance(entry, dict) or entry.get("key") != board_key or not isinstance(entry.get("text"), str):
        return None
    log.debug("leaderboard.reused_from_file", kind=kind, key=board_key[:12])
    return str(entry["text"])


def save(settings: Settings, kind: str, before: str | None, text: str, asked: list[Any]) -> None:
    """Keep ``text`` for ``kind`` when the store's files are as they were at ``before`` (the key taken
    before the board was computed); otherwise nothing is kept."""
    path = _path(settings)
    if before is None or path is None or key(settings, asked) != before:
        return
    try:
        kept = json.loads(path.read_text()) if path.exists() else {}
        kept = kept if isinstance(kept, dict) else {}
    except (OSError, ValueError):
        kept = {}
    kept[kind] = {"key": before, "text": text}
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    try:
        partial.write_text(json.dumps(kept))
        os.replace(partial, path)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        log.warning("leaderboard.not_kept_in_file", error=str(exc))
