"""The ledger's sums per kind of call (``call_groups``), kept by database triggers on ``model_call``.

Every report view that reads the ledger (the cost tables, each judge run's cost) wants sums: calls, tokens,
GPU-seconds and dollars per purpose, role, model, item, run, status and cache hit. A cold report used to
read the million ledger rows under those sums into DuckDB and group them there: at 1M rows, 0.5–0.65 s of
a cold report's ~4 s and ~1.1 CPU-s on a 2-core host, for a few thousand groups (issue 43). As
store/spend_totals.py does for the budget and store/counts.py for `status`, triggers now add each ledger
change to its group in the same transaction as the change, whoever writes it (the runner, batches,
context caches, `remove`, a bench's raw inserts), and the report copies the groups, not the rows.

A group is one key (``KEY``). Its ``calls`` and token sums are exact; its ``gpu_seconds`` and ``usd`` are
sums of floats in the order the changes committed. A row that changes (a call in flight finished, one
marked interrupted) leaves its old group and joins its new one; a group left with no calls is deleted, so
an in-flight group does not linger with a residue of rounding. A row deleted or changed while its group
holds other rows is subtracted: the sum can then differ from summing the remaining rows afresh in its
last bits (~1e-16 of it), as any running total does.

Concurrency: on SQLite writers are serialized. On PostgreSQL a group's row lock orders the writers of
that group until they commit; every paid call already takes its purpose's ``spend_total`` row the same
way, so this adds no new wait to a paid call. PostgreSQL fires a row's triggers in the order of their
names: these are named to fire after the purpose's total and the counters (``TRIGGER``), so a paid
change takes its purpose's total before any group, and a transaction that writes several ledger rows
(a batch's) cannot hold one group while another writer holds the total and waits for that group (a
deadlock, with the groups' triggers first). An update that moves a row takes its two groups in key
order, the one order every writer takes. A value SQLite stored with another type than its
column's (only a raw write can make one) adds as SQLite's arithmetic reads it, as the other totals do.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Boolean, Column, Float, Index, Integer, MetaData, String, Table, func
from sqlalchemy.engine import Connection

TABLE = "call_groups"
SOURCE = "model_call"
KEY = ("purpose", "role", "provider", "model", "item_id", "run_id", "status", "cache_hit")
SUMMED = ("input_tokens", "output_tokens", "thinking_tokens", "gpu_seconds", "usd")
TRIGGER = "tally_call_groups"  # after spend_total_* and store_count_* in name order (see above)
_NONE = -1  # item_id / run_id NULL in the unique key (ids start at 1): NULLs never conflict in an index
#: not on SQLModel's metadata: created by its migration, which also installs the triggers
METADATA = MetaData()
CALL_GROUPS = Table(
    TABLE, METADATA,
    Column("purpose", String, nullable=False), Column("role", String, nullable=False),
    Column("provider", String, nullable=False), Column("model", String, nullable=False),
    Column("item_id", Integer), Column("run_id", Integer),
    Column("status", String, nullable=False), Column("cache_hit", Boolean, nullable=False),
    Column("calls", BigInteger, nullable=False),
    Column("input_tokens", BigInteger, nullable=False), Column("output_tokens", BigInteger, nullable=False),
    Column("thinking_tokens", BigInteger, nullable=False),
    Column("gpu_seconds", Float(53), nullable=False), Column("usd", Float(53), nullable=False),
)
Index("ux_call_groups_key", CALL_GROUPS.c.purpose, CALL_GROUPS.c.role, CALL_GROUPS.c.provider,
      CALL_GROUPS.c.model, func.coalesce(CALL_GROUPS.c.item_id, _NONE), func.coalesce(CALL_GROUPS.c.run_id, _NONE),
      CALL_GROUPS.c.status, CALL_GROUPS.c.cache_hit, unique=True)


def _key(r: str) -> list[str]:
    """The key's columns of row ``r`` as the unique index holds them (NULL ids as ``_NONE``)."""
    return [f"coalesce({r}.{c}, {_NONE})" if c in ("item_id", "run_id") else f"{r}.{c}" for c in KEY]


# (an expression of the index in parentheses: PostgreSQL's inference asks for them, SQLite reads the same)
_CONFLICT = "(" + ", ".join(
    f"(coalesce({c}, {_NONE}))" if c in ("item_id", "run_id") else c for c in KEY) + ")"
_COLUMNS = ", ".join([*KEY, "calls", *SUMMED])


def _add(r: str, sign: str, postgres: bool) -> str:
    """Row ``r``'s call added to (sign +) or taken from (sign −) its group."""
    values = ", ".join([*(f"{r}.{c}" for c in KEY), f"{sign}1", *(f"{sign}{r}.{c}" for c in SUMMED)])
    target, held = (f"{TABLE} AS g", "g") if postgres else (TABLE, TABLE)
    sums = ", ".join(f"{c} = {held}.{c} + excluded.{c}" for c in ("calls", *SUMMED))
    return (f"INSERT INTO {target} ({_COLUMNS}) SELECT {values} WHERE true "
            f"ON CONFLICT {_CONFLICT} DO UPDATE SET {sums};")


def _drop_if_empty(r: str) -> str:
    """Row ``r``'s group deleted if it has no call left."""
    held = [f"coalesce({c}, {_NONE})" if c in ("item_id", "run_id") else c for c in KEY]
    where = " AND ".join(f"{h} = {k}" for h, k in zip(held, _key(r), strict=True))
    return f"DELETE FROM {TABLE} WHERE {where} AND calls = 0;"


def _sqlite_triggers() -> list[str]:
    columns = (*KEY, *SUMMED)
    changed = " OR ".join(f"OLD.{c} IS NOT NEW.{c}" for c in columns)
    minus = _add("OLD", "-", False) + " " + _drop_if_empty("OLD")
    return [
        *(f"DROP TRIGGER IF EXISTS {TRIGGER}_{op}" for op in ("insert", "delete", "update")),
        f"CREATE TRIGGER {TRIGGER}_insert AFTER INSERT ON {SOURCE} BEGIN {_add('NEW', '+', False)} END",
        f"CREATE TRIGGER {TRIGGER}_delete AFTER DELETE ON {SOURCE} BEGIN {minus} END",
        f"CREATE TRIGGER {TRIGGER}_update AFTER UPDATE OF {', '.join(columns)} ON {SOURCE} WHEN {changed} "
        f"BEGIN {minus} {_add('NEW', '+', False)} END",
    ]


def _pg_triggers() -> list[str]:
    plus, minus = _add("NEW", "+", True), _add("OLD", "-", True) + " " + _drop_if_empty("OLD")
    old, new = ", ".join(_key("OLD")), ", ".join(_key("NEW"))
    changed = " OR ".join(f"OLD.{c} IS DISTINCT FROM NEW.{c}" for c in (*KEY, *SUMMED))
    function = f"""
CREATE OR REPLACE FUNCTION call_groups_track() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    IF TG_OP = 'INSERT' THEN {plus}
    ELSIF TG_OP = 'DELETE' THEN {minus}
    ELSIF ROW({old}) <= ROW({new}) THEN {minus} {plus}
    ELSE {plus} {minus}
    END IF;
    RETURN NULL;
END
$fn$"""
    run = "FOR EACH ROW {when} EXECUTE PROCEDURE call_groups_track()"
    return [
        function,
        *(f"DROP TRIGGER IF EXISTS {TRIGGER}_{op} ON {SOURCE}" for op in ("insert", "delete", "update")),
        f"CREATE TRIGGER {TRIGGER}_insert AFTER INSERT ON {SOURCE} " + run.format(when=""),
        f"CREATE TRIGGER {TRIGGER}_delete AFTER DELETE ON {SOURCE} " + run.format(when=""),
        f"CREATE TRIGGER {TRIGGER}_update AFTER UPDATE ON {SOURCE} " + run.format(when=f"WHEN ({changed})"),
    ]


def install(conn: Connection) -> None:
    """Migration 4300: the table, its triggers, and the groups of the ledger as it stands (a backfill).
    Writers of the ledger wait meanwhile (PostgreSQL: a table lock; SQLite: the migration's write lock),
    so no change falls between the backfill and the triggers."""
    CALL_GROUPS.create(conn, checkfirst=True)
    postgres = conn.dialect.name == "postgresql"
    if postgres:
        conn.exec_driver_sql(f"LOCK TABLE {SOURCE} IN SHARE ROW EXCLUSIVE MODE")
    for statement in _pg_triggers() if postgres else _sqlite_triggers():
        conn.exec_driver_sql(statement)
    conn.exec_driver_sql(f"DELETE FROM {TABLE}")
    sums = ", ".join(f"sum({c})" for c in SUMMED)
    conn.exec_driver_sql(f"INSERT INTO {TABLE} ({_COLUMNS}) SELECT {', '.join(KEY)}, count(*), {sums} "
                         f"FROM {SOURCE} GROUP BY {', '.join(KEY)}")
