"""The analytics file lent to one report at a time (mirror.py keeps its tables; runner.py opens it): DuckDB
would share one instance between two connections of this process, and another process holding the file
gets its lock error, so a report that cannot have it reads the store into memory instead."""

from __future__ import annotations

from pathlib import Path

import duckdb

from playlisteval.analytics import extensions
from playlisteval.logs import get_logger

log = get_logger(__name__)

_IN_USE: set[Path] = set()  # analytics files open in this process (DuckDB would share one instance)


def connect(path: Path | None) -> tuple[duckdb.DuckDBPyConnection, Path | None]:
    """The analytics file (made if missing) and its path, or memory and None when there is none to
    use: no path, the file held by another report right now (in this process or another), or a file
    DuckDB cannot open (another version: it is remade). ``release(path)`` when done."""
    if path is None or path.resolve() in _IN_USE:
        return duckdb.connect(":memory:"), None
    try:  # extensions whose file DuckDB verified before load unchecked (extensions.py)
        con = duckdb.connect(str(path), config=extensions.FILE_CONFIG)
    except duckdb.IOException as exc:  # another process holds the file's lock: this report reads the store
        log.info("analytics.file_busy", path=str(path), error=str(exc).splitlines()[0])
        return duckdb.connect(":memory:"), None
    except duckdb.Error as exc:
        log.warning("analytics.file_remade", path=str(path), error=str(exc).splitlines()[0])
        for stale in (path, path.with_name(path.name + ".wal")):
            stale.unlink(missing_ok=True)
        con = duckdb.connect(str(path), config=extensions.FILE_CONFIG)
    _IN_USE.add(path.resolve())
    return con, path


def release(path: Path | None) -> None:
    if path is not None:
        _IN_USE.discard(path.resolve())
