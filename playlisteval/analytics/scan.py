"""The store read by DuckDB's own scanners: its tables reach DuckDB without passing through Python.

SQLite stores are attached with DuckDB's ``sqlite`` extension, PostgreSQL stores with ``postgres``;
both ship on PyPI as ``duckdb-ext-sqlite`` / ``duckdb-ext-postgres``, built for one DuckDB version (hence
the pin in pyproject.toml), and are loaded from the wheel's folder: DuckDB cannot download them here.
Measured against ADBC's SQLite and PostgreSQL drivers (README, "Analytics report over 1M judgments"),
the scanners read the same rows with as little or less CPU, straight into DuckDB's own tables, typed
by the store's declared column types rather than guessed from the first rows.

Every column is cast to the type the reflected SQL type says (SQLite keeps booleans as 0/1 and JSON
as text; JSON ``null`` becomes SQL NULL), so the views see the same types on either store and the
same types as the Python loader (loader.py) gives, which stays as the fallback.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

import duckdb
from sqlalchemy import inspect
from sqlalchemy.engine import Engine

from playlisteval.analytics import extensions
from playlisteval.analytics.columns import BOOL, FLOAT, INT, JSON, SKIPPED_TABLES, kind_of
from playlisteval.store.engine import SqliteFileBusy, foreign_sqlite, is_sqlite

ALIAS = "store"  # the attached store's catalog name inside DuckDB


class ScanUnavailable(Exception):
    """The scanners cannot read this store (extension missing or of another DuckDB version, in-memory
    store): the caller falls back to the Python loader."""


@dataclass(frozen=True)
class Column:
    name: str
    kind: str  # columns.py's kind of the reflected type

    def expression(self) -> str:
        """The column cast to its analytics type (from the scanner's type, or from the text
        ``sqlite_query`` hands back: REAL columns then come as 20-digit text, which round-trips exactly)."""
        q = quote(self.name)
        if self.kind == JSON:
            return f"nullif(CAST({q} AS VARCHAR), 'null') AS {q}"
        sql_type = {BOOL: "BOOLEAN", INT: "BIGINT", FLOAT: "DOUBLE"}.get(self.kind, "VARCHAR")
        return f"CAST({q} AS {sql_type}) AS {q}"

    def native(self, sqlite: bool) -> str:
        """The column as the store's own SQL selects it for a filtered read (``sqlite_query``)."""
        q = quote(self.name)
        if sqlite and self.kind == FLOAT:
            # '!' lifts SQLite's printf past 16 digits; 20 round-trip every double (17 did not, measured)
            return f"CASE WHEN {q} IS NULL THEN NULL ELSE printf('%!.20g', {q}) END AS {q}"
        return q


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def extension_directory() -> str:
    """The folder the duckdb-ext-* wheels install their extensions into (extensions.py)."""
    try:
        return extensions.directory()
    except extensions.ExtensionUnavailable as exc:
        raise ScanUnavailable(str(exc)) from None


def _libpq(engine: Engine) -> str:
    """A libpq connection string for the store's PostgreSQL URL (the password only as the URL gives it)."""
    url = engine.url
    parts = {"host": url.host, "port": url.port, "dbname": url.database, "user": url.username,
             "password": url.password}
    parts.update({k: v for k, v in url.query.items() if isinstance(v, str)})  # sslmode and the like

    def value(v: Any) -> str:
        return "'" + str(v).replace("\\", "\\\\").replace("'", "\\'") + "'"

    return " ".join(f"{k}={value(v)}" for k, v in parts.items() if v not in (None, ""))


def attach(con: duckdb.DuckDBPyConnection, engine: Engine) -> bool:
    """Attach the store read-only as catalog ``store``; True for SQLite, False for PostgreSQL."""
    url = str(engine.url)
    sqlite = is_sqlite(url)
    if sqlite:
        database = engine.url.database
        if not database or database == ":memory:" or not os.path.exists(database):
            raise ScanUnavailable(f"no SQLite file to attach ({database!r})")
        extension, target = "sqlite", os.path.abspath(database)
    elif engine.dialect.name == "postgresql":
        extension, target = "postgres", _libpq(engine)
    else:
        raise ScanUnavailable(f"no DuckDB scanner for {engine.dialect.name} stores")
    try:
        extensions.load(con, extension)
        con.execute(f"ATTACH {literal(target)} AS {ALIAS} (TYPE {extension}, READ_ONLY)")
    except extensions.ExtensionUnavailable as exc:
        raise ScanUnavailable(str(exc)) from exc
    except duckdb.Error as exc:
        raise ScanUnavailable(f"DuckDB's {extension} scanner: {exc}") from exc
    return sqlite


def detach(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(f"DETACH {ALIAS}")


@contextmanager
def attached(con: duckdb.DuckDBPyConnection, engine: Engine) -> Iterator[bool]:
    """The store attached (``attach``) for the block, detached after it. A SQLite file is handed to DuckDB's
    own SQLite library meanwhile (store/engine.py, foreign_sqlite): this process's Python connections to it
    are closed first and none may open inside, since closing either library's descriptor drops the other's
    locks. DuckDB's SQLite holds the file only inside a query or transaction and not past DETACH (checked
    in /proc/self/fd); a detach that fails closes the connection, which closes the file too."""
    database = str(engine.url.database or "")
    with ExitStack() as stack:
        if is_sqlite(str(engine.url)) and database not in ("", ":memory:") and os.path.exists(database):
            try:
                stack.enter_context(foreign_sqlite(database))
            except SqliteFileBusy as exc:  # a connection of ours is in use: the Python loader reads instead
                raise ScanUnavailable(str(exc)) from exc
        sqlite = attach(con, engine)
        try:
            yield sqlite
        finally:
            try:
                detach(con)
            except duckdb.Error:
                con.close()
                raise


def store_columns(engine: Engine, names: list[str] | None,
                  skip: dict[str, set[str]]) -> dict[str, list[Column]]:
    """The loaded columns of each named table present in the store (default: every table but the
    skipped ones), by one reflection of the whole schema; binary columns are left out."""
    inspector = inspect(engine)
    present = set(inspector.get_table_names())
    wanted = sorted((present - SKIPPED_TABLES) if names is None else set(names) & present)
    reflected = inspector.get_multi_columns(filter_names=wanted)
    out: dict[str, list[Column]] = {}
    for (_schema, table), columns in reflected.items():
        out[table] = [Column(c["name"], kind) for c in columns
                      if (kind := kind_of(c["type"])) is not None and c["name"] not in skip.get(table, ())]
    return {name: out[name] for name in wanted if name in out}


def select_all(table: str, columns: list[Column]) -> str:
    """Every row of a store table, typed."""
    return f"SELECT {', '.join(c.expression() for c in columns)} FROM {ALIAS}.{quote(table)}"


def select_where(table: str, columns: list[Column], where: str, sqlite: bool) -> str:
    """The rows ``where`` (the store's SQL, over its indexes) picks, typed. Run by the store itself
    (``sqlite_query`` / ``postgres_query``): a filter on the attached table would scan it whole."""
    native = f"SELECT {', '.join(c.native(sqlite) for c in columns)} FROM {quote(table)} WHERE {where}"
    function = "sqlite_query" if sqlite else "postgres_query"
    return (f"SELECT {', '.join(c.expression() for c in columns)} "
            f"FROM {function}({literal(ALIAS)}, {literal(native)})")


def native_row(con: duckdb.DuckDBPyConnection, sql: str, sqlite: bool) -> tuple[Any, ...]:
    """One row of a query the store runs itself (counts, maxima); SQLite hands every value back as text."""
    function = "sqlite_query" if sqlite else "postgres_query"
    row = con.execute(f"SELECT * FROM {function}({literal(ALIAS)}, {literal(sql)})").fetchone()
    if row is None:
        raise duckdb.InvalidInputException(f"no row from {sql}")
    return tuple(row)
