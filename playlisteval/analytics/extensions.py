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
"""

from __future__ import annotations

import json
import os

import duckdb

TABLE = "_verified_extensions"  # in the analytics file: the stamps of the extension files DuckDB verified
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
        return con.execute(f"SELECT 1 FROM {TABLE} WHERE stamp = {_literal(stamp)}").fetchone() is not None
    except duckdb.Error:  # none kept yet
        return False


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
