"""The analytics file: a DuckDB copy of the store's tables beside the project, brought up to date by
each report so that a second report reads only what changed.

Tables are kept by one of two policies:

* **append** (``judgment``: the big one, rows added and seldom changed) — rows past the id watermark
  are read through the store's own index and appended. Then the copy is checked against the store —
  same count, same largest id — and any difference (``eval drop`` deleted a run's judgments, an id
  reused after a delete) reloads the table whole; so does a judge run that vanished or was made anew
  under the same id (its ``created_at`` differs).
* **whole** — everything else (items change state, runs change status): small, re-read whenever the
  store changed. The ledger is one of them: the report reads its sums (``call_groups``, kept by the
  store's triggers: store/call_groups.py), a few thousand rows where the ledger holds a million.

A table whose columns changed (a migration), a file made from another store (or from one deleted and
made again at the same place), or a file DuckDB cannot open is rebuilt from scratch. Nothing here
writes to the store: it is attached read-only.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import duckdb
from sqlalchemy.engine import Engine

from playlisteval.analytics import scan, store_stamps
from playlisteval.analytics.scan import Column, quote
from playlisteval.analytics.store_stamps import Stamp
from playlisteval.logs import get_logger

log = get_logger(__name__)

META = "_mirror"  # per table: what was copied (signature, count, largest id; open_ids, left by earlier versions)
STORE_ROW = ".store"  # META's row for the whole store: the SQLite files' stamps the last sync ended at
RETRIES = 3  # syncs repeated while another process commits in between (SQLite: no shared snapshot)


@dataclass(frozen=True)
class Policy:
    """How an append-only table is kept: ``runs_checked``: rows belong to judge runs, and a run that
    disappeared or was made anew invalidates the copy."""

    runs_checked: bool = False


APPEND: dict[str, Policy] = {"judgment": Policy(runs_checked=True)}
#: where an earlier version kept a table's copy, by the store's name: the ledger's rows as the file's own
#: groups (before the store kept them, store/call_groups.py); dropped when the copy no longer holds the table
LEGACY_COPIES = {"model_call": ("model_call", "call_groups")}
#: the tables whose first row (id and creation time) tells a store made again at the same place from the
#: one copied, with the tables that stand for them in a report's copy (the ledger is read as its sums)
IDENTITY_TABLES = {"model_call": ("model_call", "call_groups"), "judge_run": ("judge_run",)}


@dataclass
class SyncStats:
    """What one sync did, per table: 'whole', 'appended N', 'reloaded (why)', 'unchanged'."""

    actions: dict[str, str]

    @property
    def reloaded(self) -> list[str]:
        return [name for name, action in self.actions.items() if action.startswith("reloaded")]


class Mirror:
    """Keeps the tables of ``columns`` in connection ``con`` (the analytics file, or memory) equal to the
    store attached as ``store`` (scan.attach)."""

    def __init__(self, con: duckdb.DuckDBPyConnection, engine: Engine, sqlite: bool,
                 columns: Mapping[str, list[Column]], *, ordered: bool = False) -> None:
        """``ordered``: each table's rows kept in the store's order (slower: one core writes them)."""
        self.con, self.engine, self.sqlite, self.columns = con, engine, sqlite, columns
        self.ordered = ordered
        self._side: threading.Thread | None = None  # sync's meanwhile, while a sync runs
        self.identity = self._identity()
        self.con.execute(f"CREATE TABLE IF NOT EXISTS {META} (name VARCHAR PRIMARY KEY, signature VARCHAR, "
                         "n BIGINT, max_id BIGINT, open_ids VARCHAR, runs VARCHAR)")

    def sync(self, meanwhile: Callable[[], object] | None = None) -> SyncStats:
        """Bring every table up to date, in one DuckDB transaction (a failed sync leaves the file as it
        was); repeated while another process commits to a SQLite store meanwhile. ``meanwhile`` runs on
        another thread while the rows are copied (DuckDB copies without the GIL, mostly on one core: the
        other is free for Python), only when there is something to copy; the sync returns after it."""
        database = _sqlite_file(self.engine, self.sqlite)
        if self.columns:  # the scanner's first read of a WAL store may make its -wal and -shm: read first
            self.con.execute(f"SELECT 1 FROM {scan.ALIAS}.{quote(next(iter(self.columns)))} LIMIT 1").fetchall()
        if database and self._unchanged_since(store_stamps.settled_stamp(database)):
            return SyncStats({name: "unchanged" for name in self.columns})
        side = None if meanwhile is None else threading.Thread(target=_quietly, args=(meanwhile,),
                                                                name="analytics-meanwhile", daemon=True)
        self._side = side  # started by _sync_once as the big tables' copy starts
        try:
            return self._copy_retried(database)
        finally:
            self._side = None
            if side is not None and side.is_alive():
                side.join()

    def _copy_retried(self, database: str | None) -> SyncStats:
        for _attempt in range(RETRIES):
            # the scanner holds no snapshot across tables on SQLite: a sync that saw a commit is done again
            before = store_stamps.settled_stamp(database) if database else ()
            stats = self._sync_once()
            if (store_stamps.stamp_of(database) if database else ()) == before:
                if database:
                    self._remember(before)
                return stats
            log.debug("analytics.sync_raced", attempt=_attempt)
        raise Raced(f"the store changed during each of {RETRIES} copies")

    def _store_state(self, stamp: Stamp) -> str:
        """The SQLite store's file stamps with every table's signature (store, identity, columns)."""
        return json.dumps([[list(part) if part else None for part in stamp],
                           {name: self._signature(columns) for name, columns in sorted(self.columns.items())}])

    def _unchanged_since(self, stamp: Stamp) -> bool:
        """Whether the last sync into this file ended at this very state of the store: its files'
        stamps (a commit changes the -wal's size or time, a checkpoint the file) and the same tables.
        Then every copy in the file is the store's, and the sync reads nothing (issue 26: a kept report
        or leaderboard at 100k items re-read 22 tables, 0.9 s, on every run)."""
        row = self.con.execute(f"SELECT signature FROM {META} WHERE name = {scan.literal(STORE_ROW)}").fetchone()
        return row is not None and row[0] == self._store_state(stamp)

    def _remember(self, stamp: Stamp) -> None:
        """After a sync that no commit raced: the state it copied (``_unchanged_since``)."""
        values = [scan.literal(STORE_ROW), scan.literal(self._store_state(stamp)), "0", "0", "'[]'", "'[]'"]
        self.con.execute(f"INSERT OR REPLACE INTO {META} VALUES ({', '.join(values)})")

    def _sync_once(self) -> SyncStats:
        """One copy of every table; ``_side`` (Mirror.sync's ``meanwhile``) is started as the big append-only
        tables' copy starts: those are a few long statements, where the small tables' many short ones would
        each wait for the GIL behind the side thread's Python."""
        actions: dict[str, str] = {}
        # rows written in whatever order DuckDB's threads finish them: the big tables' copy then uses both
        # cores (cold report at 1M + 1M: the copy 1.27 s -> 0.97 s, the same CPU, measured), where keeping
        # insertion order wrote on one. No view or query of ours reads rows in table order (ORDER BY, or
        # order-free sums; the section cache's content hash too); `playlisteval sql` keeps the order (runner.py).
        if not self.ordered:
            self.con.execute("SET preserve_insertion_order = false")
        self.con.execute("BEGIN")
        try:  # the state a previous sync remembered is not this one's until it has finished
            self.con.execute(f"DELETE FROM {META} WHERE name = {scan.literal(STORE_ROW)}")
            # what an earlier version kept and this one does not (the ledger's rows, kept as groups by the file
            # until the store kept them): no longer a table of the copy
            for name, in self.con.execute(f"SELECT name FROM {META} WHERE name <> {scan.literal(STORE_ROW)}"
                                          ).fetchall():
                if name not in self.columns:
                    self.con.execute(f"DELETE FROM {META} WHERE name = {scan.literal(name)}")
                    for table in LEGACY_COPIES.get(name, (name,)):
                        self.con.execute(f"DROP TABLE IF EXISTS {quote(table)}")
            runs = self._runs() if "judge_run" in self.columns else None
            # the small tables first, the big ones last (one transaction: the order changes nothing copied)
            for name in sorted(self.columns, key=lambda n: n in APPEND):
                if name in APPEND and self._side is not None and self._side.ident is None:
                    self._side.start()
                actions[name] = self._table(name, self.columns[name], runs)
            self.con.execute("COMMIT")
        except BaseException:
            self.con.execute("ROLLBACK")
            raise
        finally:
            self.con.execute("RESET preserve_insertion_order")
        return SyncStats(actions)

    def _identity(self) -> str:
        """Which store this is beyond its URL: a store deleted and made again at the same place (its
        rows numbered from 1 again) must not be taken for the one copied."""
        if self.sqlite:
            parts = [str(os.stat(str(self.engine.url.database)).st_ino)]
        else:
            parts = [str(scan.native_row(self.con, "SELECT oid FROM pg_database WHERE datname = current_database()",
                                         False)[0])]
        # a file system may give a new file the inode just freed: the first ledger row and the first
        # judge run, with their creation times, say it too (a ledger row is never deleted)
        for table, copied_as in IDENTITY_TABLES.items():
            if any(name in self.columns for name in copied_as):
                first = self.con.execute(f"SELECT * FROM {'sqlite_query' if self.sqlite else 'postgres_query'}"
                                         f"('{scan.ALIAS}', 'SELECT id, created_at FROM {table} ORDER BY id LIMIT 1')"
                                         ).fetchall()
                parts.append(repr(first))
        return "/".join(parts)

    def _signature(self, columns: list[Column]) -> str:
        """What a table's copy was made from: the store and its columns."""
        return json.dumps([str(self.engine.url.render_as_string(hide_password=True)), self.identity,
                           [(c.name, str(c.kind)) for c in columns]])

    def _runs(self) -> str:
        """The judge runs as they are in the store now: id and creation time (a run dropped and made
        again under the same id gets a new one)."""
        rows = self.con.execute(f"SELECT id, created_at FROM {scan.ALIAS}.judge_run ORDER BY id").fetchall()
        return json.dumps([[int(i), float(c)] for i, c in rows])

    def _meta(self, name: str) -> tuple[str, int, int, str, str] | None:
        # values written into the SQL (ours, quoted), not bound: DuckDB imports pandas to bind a parameter
        # (0.4 s of a report that has nothing else to do)
        row = self.con.execute(f"SELECT signature, n, max_id, open_ids, runs FROM {META} "
                               f"WHERE name = {scan.literal(name)}").fetchone()
        return None if row is None else (row[0], row[1], row[2], row[3], row[4])

    def _record(self, name: str, columns: list[Column], runs: str | None) -> None:
        n, max_id = self.con.execute(  # type: ignore[misc]
            f"SELECT count(*), coalesce(max(id), 0) FROM {quote(name)}").fetchone()
        values = [scan.literal(name), scan.literal(self._signature(columns)), str(int(n)), str(int(max_id)),
                  "'[]'", scan.literal(runs or "[]")]
        self.con.execute(f"INSERT OR REPLACE INTO {META} VALUES ({', '.join(values)})")

    def _table(self, name: str, columns: list[Column], runs: str | None) -> str:
        policy = APPEND.get(name)
        if policy is None:  # re-read whenever the store changed; kept in the file for a sync with nothing
            # to do (``_unchanged_since``: SQLite only; PostgreSQL's copies stay in memory, read every time)
            return self._whole(name, columns, "whole", temp=_sqlite_file(self.engine, self.sqlite) is None)
        meta = self._meta(name)
        if meta is None or meta[0] != self._signature(columns):
            action = self._whole(name, columns, "reloaded (another store, or new columns)" if meta else "loaded")
        else:
            action = self._append(name, columns, policy, meta, runs)
        self._record(name, columns, runs)
        return action

    def _whole(self, name: str, columns: list[Column], action: str, *, temp: bool = False) -> str:
        kind = "TEMP TABLE" if temp else "TABLE"
        self.con.execute(f"CREATE OR REPLACE {kind} {quote(name)} AS {scan.select_all(name, columns)}")
        return action

    def _append(self, name: str, columns: list[Column], policy: Policy, meta: tuple[str, int, int, str, str],
                runs: str | None) -> str:
        _signature, _n, max_id, _open, runs_before = meta
        table = quote(name)
        if policy.runs_checked and runs is not None:
            now = {tuple(r) for r in json.loads(runs)}
            gone = [r for r in json.loads(runs_before) if tuple(r) not in now]
            if gone:
                return self._whole(name, columns, f"reloaded (judge run {gone[0][0]} dropped or made anew)")
        before = self.con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]  # type: ignore[index]
        self.con.execute(f"INSERT INTO {table} {scan.select_where(name, columns, f'id > {int(max_id)}', self.sqlite)}")
        after = self.con.execute(f"SELECT count(*), coalesce(max(id), 0) FROM {table}").fetchone()
        n_store, max_store = scan.native_row(self.con, f"SELECT count(*), coalesce(max(id), 0) FROM {table}",
                                             self.sqlite)
        if after is None or (int(after[0]), int(after[1])) != (int(n_store), int(max_store)):
            return self._whole(name, columns, "reloaded (rows deleted or replaced in the store)")
        added = int(after[0]) - int(before)
        return f"appended {added}" if added else "unchanged"


def _quietly(work: Callable[[], object]) -> None:
    """``work`` on the side thread: what it prepares (imports) is prepared again where it is needed, so a
    failure here is logged, never raised (the caller's own work raises it where it belongs)."""
    try:
        work()
    except Exception as exc:  # noqa: BLE001 - see the docstring
        log.info("analytics.meanwhile_failed", error=str(exc).splitlines()[0] if str(exc) else type(exc).__name__)


class Raced(Exception):
    """Another process kept committing while the copy was made."""


def _sqlite_file(engine: Engine, sqlite: bool) -> str | None:
    """The SQLite store's file, whose stamps tell a commit (store_stamps.py); None for PostgreSQL, where the
    scanner reads every table in one REPEATABLE READ transaction: nothing to check."""
    database = engine.url.database if sqlite else None
    return str(database) if database and database != ":memory:" else None
