"""DuckDB's sqlite / postgres extensions loaded from the duckdb-ext-* wheels, their signature checked once.

DuckDB checks an extension's signature every time it loads it: for these 50 MB files that is ~0.1 s of
every report, leaderboard and `sql`, a sixth of a leaderboard with nothing changed (issue 26). The check
protects a file fetched from elsewhere; these come from an installed wheel and are the same file from
one command to the next. So the analytics file keeps the stamp (path, size, modification time, inode)
of each extension file DuckDB has verified: while the file's stamp is the one kept, the analytics
connection (opened with ``allow_unsigned_extensions``) loads it without checking again; any other file
(a new version, a file replaced or touched) is verified first, in a connection of its own that allows
no unsigned extension, and an extension that fails the check is not loaded (the Python loader reads the
store instead, as when the wheel is missing). Whoever can rewrite the wheel's file in place keeping its
stamp can rewrite the rest of the installed packages too. A connection kept in memory (no analytics
file) allows no unsigned extension and is checked by DuckDB on every load, as before.

The stamps verified are also kept in the user's cache (``$XDG_CACHE_HOME/playlisteval``, config/user_cache.py),
since the extension files are the machine's, not a project's: a project's first report, or one whose
analytics file was deleted, then skips the check too (~0.1 s before its copy starts, issue 43). That file
is as much the user's as the analytics file and the installed packages; one that cannot be read or
written only means checking again.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import duckdb

from playlisteval.config import user_cache

TABLE = "_verified_extensions"  # in the analytics file: the stamps of the extension files DuckDB verified
CACHE_FILE = "duckdb-extensions-verified.json"  # in the user's cache: the same stamps, for any project
CACHE_KEPT = 16  # stamps kept there (the newest): a wheel upgraded many times leaves no long list
#: the connection settings of the analytics file (file_lease.connect): stamped extensions load unchecked
FILE_CONFIG: dict[str, str | bool | int | float | list[str]] = {"allow_unsigned_extensions": "true"}


class ExtensionUnavailable(Exception):
    """The extension is not installed, or not as DuckDB can load it (another version, a failed check)."""


def directory() -> str:
    """The folder the duckdb-ext-* wheels install their extensions into."""
    try:
        import duckdb_ext  # type: ignore[import-not-found,unused-ignore]  # no type hints
    except ImportError as exc:
        raise ExtensionUnavailable("the duckdb-ext-sqlite / duckdb-ext-postgres wheels are not installed") from exc
    for path in duckdb_ext.__path__:
        folder = os.path.join(path, "extensions")
        if os.path.isdir(folder):
            return folder
    raise ExtensionUnavailable("the duckdb_ext package has no extensions folder")


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _stamp(folder: str, name: str) -> str | None:
    """The stamp of every file DuckDB could load as ``name`` from ``folder`` (<version>/<platform>/)."""
    files = []
    for version in sorted(os.listdir(folder)):
        for platform in sorted(os.listdir(os.path.join(folder, version))) if os.path.isdir(
                os.path.join(folder, version)) else ():
            for file in (f"{name}.duckdb_extension", f"{name}_scanner.duckdb_extension"):
                path = os.path.join(folder, version, platform, file)
                if os.path.isfile(path):
                    st = os.stat(path)
                    files.append([path, st.st_size, st.st_mtime_ns, st.st_ino])
    return json.dumps(files) if files else None


def _unsigned_allowed(con: duckdb.DuckDBPyConnection) -> bool:
    row = con.execute("SELECT current_setting('allow_unsigned_extensions')").fetchone()
    return bool(row and row[0])


def _verified(con: duckdb.DuckDBPyConnection, stamp: str) -> bool:
    try:
        if con.execute(f"SELECT 1 FROM {TABLE} WHERE stamp = {_literal(stamp)}").fetchone() is not None:
            return True
    except duckdb.Error:  # none kept yet
        pass
    return stamp in _cached()


def _cached() -> list[str]:
    """The stamps the user's cache holds ([] when there is none, or it cannot be read)."""
    try:
        kept = json.loads((user_cache.root() / CACHE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [s for s in kept if isinstance(s, str)] if isinstance(kept, list) else []


def _cache(stamp: str) -> None:
    """``stamp`` added to the user's cache, written whole and moved into place (a reader never sees half)."""
    written = None
    try:
        folder = user_cache.root()
        folder.mkdir(parents=True, exist_ok=True)
        kept = [s for s in _cached() if s != stamp][-(CACHE_KEPT - 1):] + [stamp]
        with tempfile.NamedTemporaryFile("w", dir=folder, prefix=".extensions-", suffix=".tmp", delete=False,
                                         encoding="utf-8") as out:
            written = out.name
            json.dump(kept, out)
        os.replace(written, folder / CACHE_FILE)
    except OSError:  # the next command without the stamp in its analytics file checks again: never less safe
        if written is not None:
            Path(written).unlink(missing_ok=True)


def _verify(folder: str, name: str) -> None:
    """DuckDB's own signature check, in a connection that loads nothing unsigned."""
    check = duckdb.connect(":memory:")
    try:
        check.execute(f"SET extension_directory = {_literal(folder)}")
        check.execute(f"LOAD {name}")
    except duckdb.Error as exc:
        raise ExtensionUnavailable(f"DuckDB's {name} extension: {exc}") from exc
    finally:
        check.close()


def _keep(con: duckdb.DuckDBPyConnection, stamp: str) -> None:
    try:
        con.execute(f"CREATE TABLE IF NOT EXISTS {TABLE} (stamp VARCHAR)")
        con.execute(f"INSERT INTO {TABLE} VALUES ({_literal(stamp)})")
    except duckdb.Error:  # the next command checks the signature again: slower, never less safe
        pass
    if stamp not in _cached():
        _cache(stamp)


def load(con: duckdb.DuckDBPyConnection, name: str) -> None:
    """``LOAD name`` from the wheels' folder: checked by DuckDB unless this very file was checked before."""
    folder = directory()
    try:
        con.execute(f"SET extension_directory = {_literal(folder)}")
        if _unsigned_allowed(con):
            stamp = _stamp(folder, name)
            if stamp is None or not _verified(con, stamp):
                _verify(folder, name)
                if stamp is not None:
                    _keep(con, stamp)
        con.execute(f"LOAD {name}")
    except duckdb.Error as exc:
        raise ExtensionUnavailable(f"DuckDB's {name} extension: {exc}") from exc
