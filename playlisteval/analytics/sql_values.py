"""Python values written into DuckDB SQL as typed literals, so that no value is bound through DuckDB's
Python binding.

DuckDB's Python client imports pandas the first time it binds a parameter or registers a Python object
(and pyarrow does when it builds an array from Python values): 0.2–0.4 s of a report that otherwise
never needs pandas (issue 13). Our queries' parameters (benchmark ids, judge names, limits) and the
small tables made here (settings, run options) are therefore written as literals of the same types
the binding would give: an int as INTEGER (BIGINT past 32 bits), a float as DOUBLE (its repr, which
round-trips exactly), a str as VARCHAR. A query with parameters is prepared and executed in SQL
(``PREPARE`` / ``EXECUTE``), so DuckDB's parser places every value: no text is spliced into a query.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import duckdb

from playlisteval.analytics.scan import literal as _quoted  # a string as a quoted SQL string

_INT32 = 2**31
_INT64 = 2**63
_STATEMENT = "_playlisteval_query"  # the one prepared statement a query with parameters uses


class Unwritable(TypeError):
    """A value with no literal here (the caller binds it the ordinary way)."""


def literal(value: Any) -> str:
    """``value`` as a DuckDB literal of the type its Python binding has."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        kind = "INTEGER" if -_INT32 <= value < _INT32 else "BIGINT" if -_INT64 <= value < _INT64 else "HUGEINT"
        return f"CAST({value} AS {kind})"
    if isinstance(value, float):
        text = repr(value) if math.isfinite(value) else str(value)  # 'nan', 'inf', '-inf'
        return f"CAST({_quoted(text)} AS DOUBLE)"
    if isinstance(value, str):
        return f"CAST({_quoted(value)} AS VARCHAR)"
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return f"CAST([{', '.join(_quoted(v) for v in value)}] AS VARCHAR[])"
    raise Unwritable(f"no SQL literal for {type(value).__name__}")


def execute(con: duckdb.DuckDBPyConnection, sql: str, params: Sequence[Any]) -> duckdb.DuckDBPyConnection:
    """``con.execute(sql, params)`` without DuckDB's Python binding (see the module's doc)."""
    if not params:
        return con.execute(sql)
    try:
        values = [literal(v) for v in params]
    except Unwritable:
        return con.execute(sql, list(params))
    # one name, prepared anew by each query (PREPARE replaces it): the statement outlives this call, as
    # the result must (deallocating it would replace the connection's pending result)
    con.execute(f"PREPARE {_STATEMENT} AS {sql}")
    return con.execute(f"EXECUTE {_STATEMENT}({', '.join(values)})")


def temp_table(con: duckdb.DuckDBPyConnection, name: str, columns: Sequence[tuple[str, str]],
               rows: Sequence[Sequence[Any]]) -> None:
    """A TEMP table ``name`` of the given (column, SQL type) columns holding ``rows`` (a few hundred at
    most: runs, settings)."""
    names = ", ".join(f'"{column}" {kind}' for column, kind in columns)
    con.execute(f"CREATE OR REPLACE TEMP TABLE {name} ({names})")
    if rows:
        values = ", ".join("(" + ", ".join(literal(v) for v in row) + ")" for row in rows)
        con.execute(f"INSERT INTO {name} VALUES {values}")


def sql_type(value: Any) -> str:
    """The column type a setting's value gets (as pyarrow would infer it from one Python value)."""
    if isinstance(value, bool):
        return "BOOLEAN"
    if isinstance(value, int):
        return "BIGINT"
    if isinstance(value, float):
        return "DOUBLE"
    if isinstance(value, str):
        return "VARCHAR"
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return "VARCHAR[]"
    raise Unwritable(f"no SQL type for {type(value).__name__}")
