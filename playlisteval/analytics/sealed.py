"""A sealed `playlisteval sql` (issue 25): what a user's query may read is listed, not what it may not.

DuckDB's file switch (``enable_external_access = false``) does not bind the scanners of extensions already
loaded: with the sqlite extension in the process (the report's copy uses it), ``sqlite_scan(…)`` and
``sqlite_attach`` opened any SQLite file (another project's store, this store's response cache), and on a
PostgreSQL store ``postgres_scan('host=… dbname=…')`` read any database on the server. So the query is
parsed (``json_serialize_sql``: DuckDB's own parser, the tree it would run) and allowed only when

- it is one SELECT (set operations, CTEs, subqueries and VALUES count);
- every table it names is unqualified and one of the connection's own tables and views (the store's tables
  copied in, the report's views, the query's own CTEs): no ``catalog.schema.table``, no file path as a
  table (``FROM 'x.csv'``), no system view (``duckdb_settings``, ``information_schema``, ``sqlite_master``);
- it calls no table function but a few that only make rows (``range``, ``generate_series``, ``unnest``):
  every scanner, reader, attach and catalog function of DuckDB and its extensions is refused, whatever
  its name, because none is on the list;
- it calls no scalar function that reaches outside the data: ``getenv`` (API keys live in the environment),
  ``current_setting``, ``json_execute_serialized_sql`` (a query hidden in a string), the table functions'
  names (some also exist as scalars).

A refusal names what was refused. The connection's file switch and configuration lock stay on as a second
wall (runner.py).
"""

from __future__ import annotations

import json
from typing import Any

import duckdb

from playlisteval.analytics.columns import AnalyticsError

#: table functions that read nothing: they make rows from their arguments
ROW_MAKERS = frozenset({"range", "generate_series", "unnest"})
#: scalar functions that reach outside the query's data
REFUSED_SCALARS = frozenset({"getenv", "current_setting", "json_execute_serialized_sql", "current_query",
                             "enable_logging", "disable_logging", "which_secret", "in_search_path"})
#: FROM-clause nodes that read nothing by themselves (their children are checked)
_QUIET_REFS = frozenset({"JOIN", "SUBQUERY", "EMPTY", "EXPRESSION_LIST", "PIVOT"})
_QUERY_NODES = frozenset({"SELECT_NODE", "SET_OPERATION_NODE", "CTE_NODE", "RECURSIVE_CTE_NODE"})


def own_names(con: duckdb.DuckDBPyConnection) -> set[str]:
    """The connection's own tables and views (lower case): what a user's query may read."""
    rows = con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE NOT internal AND database_name IN ('memory', 'temp') "
        "UNION SELECT view_name FROM duckdb_views() WHERE NOT internal AND database_name IN ('memory', 'temp')"
    ).fetchall()
    return {str(name).lower() for (name,) in rows}


def table_functions(con: duckdb.DuckDBPyConnection) -> set[str]:
    """Every table function this connection knows now (extensions loaded included), lower case."""
    rows = con.execute("SELECT DISTINCT function_name FROM duckdb_functions() "
                       "WHERE function_type IN ('table', 'table_macro')").fetchall()
    return {str(name).lower() for (name,) in rows}


def parse(con: duckdb.DuckDBPyConnection, sql: str) -> list[dict[str, Any]]:
    """The statements' trees as DuckDB's parser makes them; a statement it cannot serialise (anything
    but a SELECT) or parse is an AnalyticsError."""
    try:
        (raw,) = con.execute("SELECT json_serialize_sql(?::VARCHAR)", [sql]).fetchone() or ("",)
        tree = json.loads(raw)
    except (duckdb.Error, ValueError, TypeError) as exc:
        raise AnalyticsError(f"cannot parse the query: {exc}") from exc
    if tree.get("error"):
        raise AnalyticsError(f"cannot parse the query: {tree.get('error_message') or tree.get('error_type')}")
    statements: list[dict[str, Any]] = tree.get("statements") or []
    return statements


def check(con: duckdb.DuckDBPyConnection, sql: str) -> None:
    """Refuse (AnalyticsError, naming what) a query that could read anything but the connection's own
    tables and views; return quietly for one that cannot."""
    statements = parse(con, sql)
    if len(statements) != 1:
        raise AnalyticsError(f"give exactly one query, got {len(statements)}")
    node = statements[0].get("node") or {}
    if node.get("type") not in _QUERY_NODES:
        raise AnalyticsError(f"only SELECT queries run here, not {node.get('type')}")
    allowed = own_names(con) | {name.lower() for name in _cte_names(statements[0])}
    scalars_refused = REFUSED_SCALARS | (table_functions(con) - ROW_MAKERS)
    problems: list[str] = []
    _walk(statements[0], allowed, scalars_refused, problems)
    if problems:
        unique = list(dict.fromkeys(problems))
        raise AnalyticsError("refused: " + "; ".join(unique) + " (a query reads only the store's tables and "
                             "the views: `playlisteval sql --list`; no file, no other database, no system table)")


def _cte_names(tree: Any) -> list[str]:
    out: list[str] = []
    if isinstance(tree, dict):
        for entry in (tree.get("cte_map") or {}).get("map") or []:
            if isinstance(entry, dict) and entry.get("key"):
                out.append(str(entry["key"]))
        for value in tree.values():
            out.extend(_cte_names(value))
    elif isinstance(tree, list):
        for value in tree:
            out.extend(_cte_names(value))
    return out


def _walk(tree: Any, allowed: set[str], scalars_refused: frozenset[str] | set[str], problems: list[str]) -> None:
    if isinstance(tree, list):
        for value in tree:
            _walk(value, allowed, scalars_refused, problems)
        return
    if not isinstance(tree, dict):
        return
    kind = tree.get("type")
    if kind == "BASE_TABLE":
        name = str(tree.get("table_name", ""))
        where = ".".join(p for p in (tree.get("catalog_name"), tree.get("schema_name")) if p)
        if where:
            problems.append(f"table {where}.{name} (only unqualified names of this store's tables and views)")
        elif name.lower() not in allowed:
            problems.append(f"table {name!r} (not one of the store's tables or views)")
    elif kind == "TABLE_FUNCTION":
        function = tree.get("function") or {}
        name = str(function.get("function_name", ""))
        if name.lower() not in ROW_MAKERS or function.get("schema") or function.get("catalog"):
            problems.append(f"table function {name}()")
    elif kind == "SHOW_REF":
        problems.append("SHOW / DESCRIBE / SUMMARIZE")
    elif "sample" in tree and "alias" in tree and kind not in _QUIET_REFS and isinstance(kind, str) \
            and "query_location" in tree and tree.get("class") is None:
        problems.append(f"a FROM clause of kind {kind}")  # a table reference of a kind not known here
    if tree.get("class") == "FUNCTION":
        name = str(tree.get("function_name", ""))
        if name.lower() in scalars_refused or tree.get("catalog") or (tree.get("schema") or "") not in ("", "main"):
            problems.append(f"function {name}()")
    for value in tree.values():
        _walk(value, allowed, scalars_refused, problems)
