"""The DuckDB runner: the store's tables in DuckDB, then every ``*.sql`` view of this package over them.

The tables arrive through DuckDB's own sqlite / postgres scanners (scan.py) into the analytics file
``analytics.duckdb`` in the project's folder, which each report brings up to date (mirror.py: new rows
appended by id, small tables re-read, deletions reloaded); the store's Python driver (loader.py) is
the fallback when the scanners cannot be used.

Each ``NN_name.sql`` file holds one SELECT; it becomes the view ``name``, created in file-name order
so a view may use the views before it. The file's leading ``--`` comment is the view's description.
A file without a number (``funnel.sql``) is a view created after the numbered ones. Files numbered
below 10 are the base facts every other view joins (one row per item, pair, judgment…): they are
computed once, as tables, rather than again inside each view that uses them — unless the file carries
the line ``-- analytics: view``: judgment_facts is a view over the narrow table judgment_core, since a
million rows of repeated run and pair strings cost more to make once than to join in each query.
The views are made by the first query (``ensure_views``): a report whose sections come from the
cache (section_cache.py) makes none.
Parameters that are settings (SPEC: every number is a setting) reach the SQL as the one-row table
``analytics_param``.

The DuckDB database holds copies (the store is attached read-only, and detached before any query
runs): nothing done here can write to the store. The views are TEMP, never written to the file. A
user's query (``playlisteval sql``, always in memory) must moreover be a single SELECT, and runs with
DuckDB's file access switched off, so it cannot read or write files either.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

import duckdb
from sqlalchemy.engine import Engine

from playlisteval.analytics import file_lease, mirror, scan, sealed, sql_values
from playlisteval.analytics.columns import AnalyticsError
from playlisteval.analytics.mirror import Mirror, SyncStats
from playlisteval.analytics.run_options import COLUMNS, run_options_rows
from playlisteval.config import Settings
from playlisteval.eval import runkey
from playlisteval.logs import get_logger

if TYPE_CHECKING:  # pyarrow loads with the first Arrow table (duckdb imports it): not for a kept report
    import pyarrow as pa

log = get_logger(__name__)
T = TypeVar("T")

FILE_NAME = "analytics.duckdb"  # the analytics file, in the project's folder (mirror.py)
_FILE = re.compile(r"^(?:(\d+)_)?([a-z][a-z0-9_]*)\.sql$")


MATERIALIZED_BELOW = 10  # NN_ prefixes under this are base facts, made tables once
VIEW_MARK = "-- analytics: view"  # ...unless the file says so: a view over base facts, made by each query


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
                                  materialized=number is not None and number < MATERIALIZED_BELOW
                                  and VIEW_MARK not in sql)))
    return [view for _, view in sorted(found, key=lambda pair: pair[0])]


# What the views read; `playlisteval sql` loads every table, every column instead.
VIEW_TABLES = (
    "domain", "playlist", "video", "segment", "seed", "item", "qa", "distractor_set", "answer", "pair",
    "benchmark", "benchmark_pair", "benchmark_question", "judge_run", "judgment", "retrieval_run", "ranking",
    # the ledger as the report reads it: its sums per kind of call, kept by the store (store/call_groups.py)
    "call_groups", "gate_result", "judge_error", "retrieval_error",
    "benchmark_protocol", "benchmark_version",  # issue 22: main runs by the stored protocol; versions
    "external_score",  # issue 20: the last `eval correlate` input, drawn by the report's scatter
    "benchmark_gate",  # issue 41: each benchmark's own weak-judge verdicts (accuracy by gap)
)


# Bulky columns no view reads: raw judge replies, evidence records, model payloads. At a million
# judgments they would be most of the bytes loaded.
HEAVY_COLUMNS = {
    # (outcome is read: verdict_health tells refusals and ties from other replies without a verdict, issue 40;
    # a column of four values, dictionary-compressed)
    "judgment": ("raw", "evidence", "call_id"),
    "qa": ("payload",),
    "distractor_set": ("payload",),
    "answer": ("record",),
    "gate_result": ("details", "rejected_output"),
    "ranking": ("top_segments",),
    "judge_error": ("error",),
    "benchmark_version": ("snapshot",),  # a superseded version's frozen export: read from the store itself
}


def _params(con: duckdb.DuckDBPyConnection, settings: Settings | None) -> None:
    """The one-row table ``analytics_param``: the ``[analytics]`` settings."""
    from playlisteval.config import AnalyticsSettings

    section = settings.analytics if settings is not None else AnalyticsSettings()
    values = section.model_dump()
    sql_values.temp_table(con, "analytics_param", [(k, sql_values.sql_type(v)) for k, v in values.items()],
                          [list(values.values())])


def analytics_file(settings: Settings | None) -> Path | None:
    """``analytics.duckdb`` beside the project's config; None for settings that are not a project's."""
    from playlisteval.config import CONFIG_NAME

    if settings is None or not (settings.root / CONFIG_NAME).exists():
        return None
    return settings.root / FILE_NAME


def _copy(engine: Engine, names: tuple[str, ...] | None, skip: dict[str, tuple[str, ...]],
          path: Path | None, meanwhile: Callable[[], object] | None = None,
          ) -> tuple[duckdb.DuckDBPyConnection, SyncStats | None, Path | None]:
    """The store's tables in DuckDB: through DuckDB's scanners into the analytics file (or memory), else
    (no scanner for this store, a value SQLite stored with another type than its column's, a store
    that kept changing) through the store's Python driver in one snapshot. ``meanwhile``: see Mirror.sync."""
    con, used = file_lease.connect(path)
    try:
        # reflected through the store's Python driver first: inside the attachment it may not connect
        columns = scan.store_columns(engine, None if names is None else list(names),
                                     {t: set(c) for t, c in skip.items()})
        with scan.attached(con, engine) as sqlite:
            # a user's `playlisteval sql` (every table) sees rows in the store's order; our views need none
            stats = Mirror(con, engine, sqlite, columns, ordered=names is None).sync(meanwhile)
        return con, stats, used
    except (scan.ScanUnavailable, mirror.Raced, duckdb.Error) as exc:
        log.info("analytics.python_loader", reason=(str(exc) or type(exc).__name__).splitlines()[0])
        con.close()
        file_lease.release(used)
    from playlisteval.analytics.loader import load_tables  # the fallback: pyarrow only here

    con = duckdb.connect(":memory:")
    tables = load_tables(engine) if names is None else load_tables(engine, names, skip_columns=skip)
    for name, table in tables.items():
        con.register(name, table)
    return con, None, None


class Analytics:
    """An in-memory DuckDB holding the store's tables and the views. Use as a context manager."""

    def __init__(self, engine: Engine, settings: Settings | None = None, *, all_tables: bool = False,
                 file: Path | None | bool = True, meanwhile: Callable[[], object] | None = None) -> None:
        """``file``: the analytics file to keep up to date (True: ``analytics.duckdb`` in the project's
        folder when ``settings`` come from a project; False / None: memory only). ``all_tables``
        (`playlisteval sql`): every table and column, always in memory. ``meanwhile``: Python work (the
        report's imports) run on another thread while DuckDB copies rows, only when the sync copies any
        (mirror.Mirror.sync)."""
        self.engine = engine  # the store the tables came from (what labels the report, e.g. simulated)
        names = None if all_tables else VIEW_TABLES
        skip = {} if all_tables else HEAVY_COLUMNS
        path = None if all_tables else analytics_file(settings) if file is True else file or None
        self.con, self.sync, self.file = _copy(engine, names, skip, path, meanwhile)
        # one query at a time on the connection: its result is the connection's own until fetched, so
        # threads computing report sections side by side (report.build_sections) run execute and fetch under
        # this lock; DuckDB releases the GIL meanwhile, so another thread's Python goes on
        self._query_lock = threading.RLock()
        self._shared: dict[Hashable, Any] = {}  # what several sections read, made once (``shared``)
        self._shared_lock = threading.Lock()
        self.settings = settings
        self.views = views()
        self._views_made = False  # made by the first query: a report whose sections are cached needs none

    def ensure_views(self) -> None:
        """The views (and the tables under them) made, once; before any query of ours or a user's."""
        if self._views_made:
            return
        try:
            self._views(self.settings)
        except BaseException:
            self.close()  # the file is free again for the next report
            raise
        self._views_made = True

    def _views(self, settings: Settings | None) -> None:
        # written as SQL, not registered from Python objects (sql_values.py: no pandas import)
        _params(self.con, settings)
        # each judge run's options against the configured defaults: which run is a judge's main one
        try:
            judge_run: list[tuple[Any, ...]] | None = self.con.execute(
                "SELECT id, evidence, settings, benchmark_id FROM judge_run").fetchall()
        except duckdb.CatalogException:  # a store without the table (very old): no runs
            judge_run = None
        try:  # each benchmark's stored main-run protocol (issue 22): main or sweep never by this shell's settings
            protocols = {int(b): runkey.parse_settings(p) or {} for b, p in self.con.execute(
                "SELECT benchmark_id, protocol FROM benchmark_protocol").fetchall()}
        except duckdb.CatalogException:
            protocols = {}
        sql_values.temp_table(self.con, "judge_run_options", COLUMNS,
                              run_options_rows(judge_run, settings, protocols))
        for view in self.views:
            try:  # TEMP: the analytics file keeps the store's tables only, never the views
                kind = "TEMP TABLE" if view.materialized else "TEMP VIEW"
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
        file_lease.release(self.file)
        self.file = None

    def shared(self, key: Hashable, make: Callable[[], T]) -> T:
        """``make()``'s value, made once for this connection's data and kept: what several report sections
        read (judgment_matrix.py). A section on another thread asking meanwhile waits for the one being made."""
        with self._shared_lock:
            if key not in self._shared:
                self._shared[key] = make()
            value: T = self._shared[key]
            return value

    def view_names(self) -> list[str]:
        return [view.name for view in self.views]

    def _fetched(self, sql: str, params: list[Any] | None, fetch: Callable[[duckdb.DuckDBPyConnection], T]) -> T:
        """One of our own queries run and ``fetch``ed under the query lock, a DuckDB error as AnalyticsError.
        Execute + fetch, not sql(): a relation made with parameters runs its query twice (measured: 0.16 s
        against 0.03 s for an aggregate over a million judgments)."""
        self.ensure_views()
        try:
            with self._query_lock:
                cursor = sql_values.execute(self.con, sql, params or [])
                if cursor.description is None:  # not a query (our own SQL always is; user_query checks first)
                    raise AnalyticsError("the statement returned no rows")
                return fetch(cursor)
        except duckdb.Error as exc:
            raise AnalyticsError(str(exc)) from exc

    def table(self, sql: str, params: list[Any] | None = None) -> pa.Table:
        """Run one of our own queries (views, report) and return an Arrow table."""
        table: pa.Table = self._fetched(sql, params, lambda cursor: cursor.fetch_arrow_table())
        return table

    def arrays(self, sql: str, params: list[Any] | None = None) -> dict[str, Any]:
        """Run one of our own queries and return its columns as NumPy arrays (masked where NULL): what
        numbers go on to NumPy fetch this way, since pyarrow's ``to_numpy`` imports pandas (issue 13)."""
        columns: dict[str, Any] = self._fetched(sql, params, lambda cursor: cursor.fetchnumpy())
        return columns

    def rows(self, sql: str, params: list[Any] | None = None) -> list[dict[str, Any]]:
        """Run one of our own queries and return its rows as dicts of Python values, fetched by DuckDB
        itself: a report's few hundred small queries then never load pyarrow (~0.1 s of a cold report's
        critical path, issue 43). A sum of integers (HUGEINT) comes back as an int where Arrow gave a
        Decimal; every reader formats or converts the number, never its type."""
        def as_dicts(cursor: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
            names = [column[0] for column in cursor.description or []]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

        return self._fetched(sql, params, as_dicts)

    def user_query(self, sql: str) -> pa.Table:
        """A user's query: exactly one SELECT (WITH … SELECT, VALUES and set operations count) that reads
        only this connection's own tables and views (sealed.py: an allow-list, issue 25)."""
        try:
            statements = self.con.extract_statements(sql)
        except duckdb.Error as exc:
            raise AnalyticsError(f"cannot parse the query: {exc}") from exc
        if len(statements) != 1:
            raise AnalyticsError(f"give exactly one query, got {len(statements)}")
        if statements[0].type != duckdb.StatementType.SELECT:  # type: ignore[attr-defined,unused-ignore]
            raise AnalyticsError(
                f"only read-only SELECT queries run here, not {statements[0].type.name}: the views are a report"
                " of the store, which is changed only by playlisteval's own commands"
            )
        self.ensure_views()
        sealed.check(self.con, sql)
        return self.table(sql)
