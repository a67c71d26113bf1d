"""Read the store's tables into Arrow (DESIGN "Analytics").

DuckDB cannot download its sqlite or postgres extensions offline, so the rows travel through the
store's own driver: one consistent read snapshot, fetched in batches, typed by the reflected column
types (SQLite hands back booleans as 0/1 and JSON as text; PostgreSQL hands back Python objects), so
the SQL sees the same types on either store. Binary columns (vectors) are left out: no view needs them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import pyarrow as pa
from sqlalchemy import inspect
from sqlalchemy.engine import Engine

from playlisteval.analytics.columns import BOOL, FLOAT, INT, JSON, SKIPPED_TABLES, TEXT, AnalyticsError, kind_of
from playlisteval.store.engine import is_sqlite

__all__ = ["AnalyticsError", "load_tables", "table_names"]

BATCH_ROWS = 50_000  # rows per fetch: bounded memory in the driver, few Python round trips

_ARROW = {BOOL: pa.bool_(), INT: pa.int64(), FLOAT: pa.float64(), TEXT: pa.string(), JSON: pa.string()}


def _arrow(kind: str) -> pa.DataType:
    """The Arrow type a column of ``kind`` is loaded as (JSON as its text)."""
    return _ARROW[kind]


def _convert(values: tuple[Any, ...], kind: str, json_as_text: bool, where: str) -> pa.Array:
    """One column of a batch. pyarrow converts plain ints, floats, strings and None in C; only what
    needs it (JSON from PostgreSQL, booleans stored as 0/1, odd types) goes through Python."""
    if kind == JSON:
        if json_as_text:  # SQLite hands back the stored JSON text; JSON null becomes SQL NULL
            return _finish(pa.array(values, type=pa.string()), JSON)
        return pa.array([None if v is None else json.dumps(v) for v in values], type=pa.string())
    try:
        if kind == BOOL:
            return pa.array(values).cast(pa.bool_())  # 0/1 (SQLite) or True/False (PostgreSQL)
        return pa.array(values, type=_arrow(kind))
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        pass  # SQLite's loose typing: a value stored with another type than its column's
    cast: Any = {TEXT: str, BOOL: bool, FLOAT: float}.get(kind, int)
    try:
        return pa.array([None if v is None else cast(v) for v in values], type=_arrow(kind))
    except (ValueError, TypeError) as exc:
        raise AnalyticsError(f"{where} holds a value that is not {kind}: {exc}") from None


@contextmanager
def _snapshot(engine: Engine) -> Iterator[Any]:
    """A DBAPI cursor inside one read-only snapshot that takes no write lock.

    The store's SQLite engine begins every SQLAlchemy transaction IMMEDIATE (a write lock); a report
    over a million rows must not hold that while workers build, so it uses the raw connection with a
    plain deferred BEGIN, which in WAL mode is a snapshot that blocks nobody.
    """
    raw = engine.raw_connection()
    try:
        cursor = raw.cursor()
        if is_sqlite(str(engine.url)):
            cursor.execute("BEGIN")
        else:
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        try:
            yield cursor
        finally:
            raw.rollback()
            cursor.close()
    finally:
        raw.close()


def table_names(engine: Engine) -> list[str]:
    return sorted(name for name in inspect(engine).get_table_names() if name not in SKIPPED_TABLES)


def _raw_type(kind: str) -> pa.DataType:
    """The type a driver value has before _finish: SQLite booleans are 0/1, JSON is text."""
    return pa.int64() if kind == BOOL else _arrow(kind)


def _finish(column: pa.Array, kind: str) -> pa.Array:
    if kind == JSON:
        import pyarrow.compute as pc  # here: the fallback loader alone needs it (0.02 s of every report)

        return pc.if_else(pc.equal(column, "null"), pa.scalar(None, pa.string()), column)
    return column.cast(pa.bool_()) if kind == BOOL else column


def _batch(table: str, rows: list[tuple[Any, ...]], kept: list[tuple[str, str]], schema: pa.Schema,
           json_as_text: bool) -> pa.RecordBatch:
    if json_as_text:
        # fast path: the whole batch converted in C as one struct array, then split into columns
        raw = pa.struct([pa.field(name, _raw_type(kind)) for name, kind in kept])
        try:
            columns = pa.array(rows, type=raw).flatten()
            return pa.RecordBatch.from_arrays([_finish(c, k) for c, (_, k) in zip(columns, kept, strict=True)],
                                              schema=schema)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            pass  # a value of another type than its column's (SQLite allows it): column by column
    by_column = list(zip(*rows, strict=True))
    arrays = [_convert(values, kind, json_as_text, f"{table}.{name}")
              for values, (name, kind) in zip(by_column, kept, strict=True)]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def load_tables(engine: Engine, names: Iterable[str] | None = None,
                skip_columns: Mapping[str, Iterable[str]] | None = None) -> dict[str, pa.Table]:
    """The named tables (default: every table but the skipped ones) as Arrow tables, without the
    columns ``skip_columns`` names per table (bulky text no view reads)."""
    skip = {table: set(cols) for table, cols in (skip_columns or {}).items()}
    inspector = inspect(engine)
    wanted = table_names(engine) if names is None else sorted(set(names))
    quote = engine.dialect.identifier_preparer.quote
    json_as_text = is_sqlite(str(engine.url))
    out: dict[str, pa.Table] = {}
    with _snapshot(engine) as cursor:
        for name in wanted:
            columns = [(c["name"], kind_of(c["type"])) for c in inspector.get_columns(name)]
            kept = [(col, kind) for col, kind in columns if kind is not None and col not in skip.get(name, ())]
            schema = pa.schema([pa.field(col, _arrow(kind)) for col, kind in kept])
            cursor.execute(f"SELECT {', '.join(quote(c) for c, _ in kept)} FROM {quote(name)}")
            batches = []
            while rows := cursor.fetchmany(BATCH_ROWS):
                batches.append(_batch(name, rows, kept, schema, json_as_text))
            out[name] = pa.Table.from_batches(batches, schema=schema)
    return out
