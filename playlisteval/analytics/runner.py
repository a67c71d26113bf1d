"""The DuckDB runner: the store's tables in Arrow, then every ``*.sql`` view of this package over them.

Each ``NN_name.sql`` file holds one SELECT; it becomes the view ``name``, created in file-name order
so a view may use the views before it. The file's leading ``--`` comment is the view's description.
A file without a number (``funnel.sql``) is a view created after the numbered ones. Files numbered
below 10 are the base facts every other view joins (one row per item, pair, judgment…): they are
computed once, as tables, rather than again inside each view that uses them.
Parameters that are settings (SPEC: every number is a setting) reach the SQL as the one-row table
``analytics_param``.

The DuckDB database lives in memory and holds copies: nothing done here can write to the store. A
user's query (``playlisteval sql``) must moreover be a single SELECT, and runs with DuckDB's file
access switched off, so it cannot read or write files either.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from types import TracebackType
from typing import Any

import duckdb
import pyarrow as pa
from sqlalchemy.engine import Engine

from playlisteval.analytics.loader import AnalyticsError, load_tables
from playlisteval.analytics.run_options import run_options_table
from playlisteval.config import Settings

_FILE = re.compile(r"^(?:(\d+)_)?([a-z][a-z0-9_]*)\.sql$")


MATERIALIZED_BELOW = 10  # NN_ prefixes under this are base facts, made tables once


@dataclass(frozen=True)
class View:
    name: str
    description: str
    sql: str
    materialized: bool = False


def views() -> list[View]:
    """The packaged views, in creation order."""
    found = []
    for entry in resources.files("playlisteval.analytics").iterdir():
        match = _FILE.match(entry.name)
        if not match:
            continue
        sql = entry.read_text(encoding="utf-8")
        comment = []
        for line in sql.splitlines():
            if not line.startswith("--"):
                break
            comment.append(line[2:].strip())
        number = int(match.group(1)) if match.group(1) else None
        order = (number is None, number or 0, entry.name)
        found.append((order, View(match.group(2), " ".join(comment).strip(), sql,
                                  materialized=number is not None and number < MATERIALIZED_BELOW)))
    return [view for _, view in sorted(found, key=lambda pair: pair[0])]


# What the views read; `playlisteval sql` loads every table, every column instead.
VIEW_TABLES = (
    "domain", "playlist", "video", "segment", "seed", "item", "qa", "distractor_set", "answer", "pair",
    "benchmark", "benchmark_pair", "benchmark_question", "judge_run", "judgment", "retrieval_run", "ranking",
    "model_call", "gate_result", "judge_error", "retrieval_error",
)


# Bulky columns no view reads: raw judge replies, evidence records, model payloads. At a million
# judgments they would be most of the bytes loaded.
HEAVY_COLUMNS = {
    "judgment": ("raw", "evidence"),
    "qa": ("payload",),
    "distractor_set": ("payload",),
    "answer": ("record",),
    "gate_result": ("details", "rejected_output"),
    "ranking": ("top_segments",),
    "judge_error": ("error",),
}


def _params(settings: Settings | None) -> pa.Table:
    from playlisteval.config import AnalyticsSettings

    section = settings.analytics if settings is not None else AnalyticsSettings()
    values = section.model_dump()
    return pa.table({key: [value] for key, value in values.items()})


class Analytics:
    """An in-memory DuckDB holding the store's tables and the views. Use as a context manager."""

    def __init__(self, engine: Engine, settings: Settings | None = None, *, all_tables: bool = False) -> None:
        self.con = duckdb.connect(":memory:")
        self.engine = engine  # the store the tables came from (what labels the report, e.g. simulated)
        self.tables = (load_tables(engine) if all_tables
                       else load_tables(engine, VIEW_TABLES, skip_columns=HEAVY_COLUMNS))
        for name, table in self.tables.items():
            self.con.register(name, table)
        self.con.register("analytics_param", _params(settings))
        self.views = views()
        # each judge run's options against the configured defaults: which run is a judge's main one
        self.con.register("judge_run_options", run_options_table(self.tables.get("judge_run"), settings))
        for view in self.views:
            try:
                kind = "TABLE" if view.materialized else "VIEW"
                self.con.execute(f"CREATE {kind} {view.name} AS {view.sql}")
            except duckdb.Error as exc:  # a packaged view that fails is a bug: say which
                raise AnalyticsError(f"view {view.name}: {exc}") from exc
        # from here on no file can be read or written, whatever a query asks
        self.con.execute("SET enable_external_access = false")
        self.con.execute("SET lock_configuration = true")

    def __enter__(self) -> Analytics:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        self.con.close()

    def view_names(self) -> list[str]:
        return [view.name for view in self.views]

    def table(self, sql: str, params: list[Any] | None = None) -> pa.Table:
        """Run one of our own queries (views, report) and return an Arrow table."""
        try:
            relation = self.con.sql(sql, params=params or None)
            if relation is None:  # not a query (our own SQL always is; user_query checks first)
                raise AnalyticsError("the statement returned no rows")
            # DuckDB 2 names it to_arrow_table; 1.x arrow()
            fetch = getattr(relation, "to_arrow_table", None) or relation.arrow
            return fetch()
        except duckdb.Error as exc:
            raise AnalyticsError(str(exc)) from exc

    def rows(self, sql: str, params: list[Any] | None = None) -> list[dict[str, Any]]:
        return self.table(sql, params).to_pylist()

    def user_query(self, sql: str) -> pa.Table:
        """A user's query: exactly one SELECT (WITH … SELECT, VALUES and set operations count)."""
        try:
            statements = self.con.extract_statements(sql)
        except duckdb.Error as exc:
            raise AnalyticsError(f"cannot parse the query: {exc}") from exc
        if len(statements) != 1:
            raise AnalyticsError(f"give exactly one query, got {len(statements)}")
        if statements[0].type != duckdb.StatementType.SELECT:
            raise AnalyticsError(
                f"only read-only SELECT queries run here, not {statements[0].type.name}: the views are a report"
                " of the store, which is changed only by playlisteval's own commands"
            )
        return self.table(sql)
