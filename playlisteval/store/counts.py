"""Running counts of the store (``store_count``), kept by database triggers: items per state, attempts, ledger
rows, cache hits and tokens per purpose, the sim's models, gate verdicts and reason kinds, seeds.

`status` on a store of 100k items and 1M ledger rows took 8.3 s as a whole command (issue 26): it counted
and summed the whole ledger, the items and the gate results at every call, and `funnel` read every
rejection's text. As store/spend_totals.py does for money, the triggers add each row's change to its
counters in the same transaction as the change, whoever writes it (the step loop, batches, `remove`, a
bench's raw inserts), so the counts are exact and reading them costs the same at any size.

A counter is (kind, key, shard): the shard (the row's id mod ``SHARDS``) spreads concurrent writers over
several rows, so on PostgreSQL two items moving at once rarely wait on one counter row; a reader sums
the shards. Each trigger touches its counters in one order (kind, then key), so two transactions never
take two counter rows in opposite orders (no deadlock between them). Amounts of 0 write nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import BigInteger, Column, Integer, MetaData, PrimaryKeyConstraint, String, Table, text
from sqlalchemy.engine import Connection

SHARDS = 16
#: not on SQLModel's metadata: created by its migration (2600), which also installs the triggers
METADATA = MetaData()
STORE_COUNT = Table(
    "store_count", METADATA,
    Column("kind", String, nullable=False), Column("key", String, nullable=False),
    Column("shard", Integer, nullable=False), Column("n", BigInteger, nullable=False, default=0),
    PrimaryKeyConstraint("kind", "key", "shard"),
)


@dataclass(frozen=True)
class Counter:
    """One counter of a table's rows: its kind, the key and the amount as SQL over the row ``{r}``."""

    kind: str
    key: str
    amount: str


def _reason_kind(r: str) -> str:
    """commands/funnel.py's ``reason_kind`` in SQL (both dialects): the text before the first ": "."""
    head = f"CASE WHEN instr({r}.reason, ': ') > 0 THEN substr({r}.reason, 1, instr({r}.reason, ': ') - 1) " \
           f"ELSE COALESCE({r}.reason, '') END"
    return f"COALESCE(NULLIF(trim({head}), ''), '(no reason)')"


def _fault_kind(r: str) -> str:
    """commands/funnel.py's ``fault_kind``: the second ": "-part (the role) + " reply unusable", else the kind."""
    rest = f"substr({r}.reason, instr({r}.reason, ': ') + 2)"
    second = f"trim(CASE WHEN instr({rest}, ': ') > 0 THEN substr({rest}, 1, instr({rest}, ': ') - 1) ELSE {rest} END)"
    return (f"CASE WHEN instr(COALESCE({r}.reason, ''), ': ') > 0 AND {second} <> '' "
            f"THEN {second} || ' reply unusable' ELSE {_reason_kind(r)} END")


#: table -> (the columns whose change moves a count, its counters in the order they are taken)
COUNTED: dict[str, tuple[tuple[str, ...], tuple[Counter, ...]]] = {
    "item": (("state", "phase1_attempts", "phase2_attempts"), (
        Counter("item_attempts", "'phase1'", "{r}.phase1_attempts"),
        Counter("item_attempts", "'phase2'", "{r}.phase2_attempts"),
        Counter("item_state", "{r}.state", "1"),
    )),
    "model_call": (("purpose", "cache_hit", "input_tokens", "output_tokens", "thinking_tokens", "provider",
                    "model", "role"), (
        Counter("call_cache_hits", "{r}.purpose", "CASE WHEN {r}.cache_hit THEN 1 ELSE 0 END"),
        Counter("call_tokens", "{r}.purpose", "{r}.input_tokens + {r}.output_tokens + {r}.thinking_tokens"),
        Counter("calls", "{r}.purpose", "1"),
        # "role provider model" of every call: the models each role called (provenance) without a GROUP BY
        Counter("role_model", "{r}.role || ' ' || {r}.provider || ' ' || {r}.model", "1"),
        # "purpose model" of the sim's calls: is_simulated without a DISTINCT over the ledger
        Counter("sim_model", "{r}.purpose || ' ' || {r}.model", "CASE WHEN {r}.provider = 'sim' THEN 1 ELSE 0 END"),
    )),
    "gate_result": (("gate", "verdict", "reason"), (
        Counter("gate_fault_kind", "{r}.gate || ' ' || " + _fault_kind("{r}"),
                "CASE WHEN {r}.verdict = 'fault' THEN 1 ELSE 0 END"),
        Counter("gate_reject_kind", "{r}.gate || ' ' || " + _reason_kind("{r}"),
                "CASE WHEN {r}.verdict = 'reject' THEN 1 ELSE 0 END"),
        Counter("gate_verdict", "{r}.gate || ' ' || {r}.verdict", "1"),
    )),
    "seed": ((), (Counter("seeds", "''", "1"),)),
}


def _shard(r: str, dialect: str) -> str:
    """The row's shard: ``mod()`` on PostgreSQL (psycopg reads a bare % as a placeholder), % on SQLite."""
    return f"mod({r}.id, {SHARDS})" if dialect == "postgresql" else f"{r}.id % {SHARDS}"


def _add(counter: Counter, r: str, sign: str, dialect: str) -> str:
    key, amount = counter.key.format(r=r), counter.amount.format(r=r)
    target = "store_count AS t" if dialect == "postgresql" else "store_count"
    n = "t.n" if dialect == "postgresql" else "store_count.n"
    return (f"INSERT INTO {target} (kind, key, shard, n) SELECT '{counter.kind}', {key}, {_shard(r, dialect)}, "
            f"{sign}({amount}) WHERE ({amount}) <> 0 "
            f"ON CONFLICT (kind, key, shard) DO UPDATE SET n = {n} + excluded.n;")


def _sqlite_triggers(table: str) -> list[str]:
    columns, counters = COUNTED[table]
    plus = " ".join(_add(c, "NEW", "+", "sqlite") for c in counters)
    minus = " ".join(_add(c, "OLD", "-", "sqlite") for c in counters)
    # dropped first: a later migration that adds a counter installs the triggers again with it
    out = [f"DROP TRIGGER IF EXISTS store_count_{table}_{op}" for op in ("insert", "delete", "update")]
    out += [f"CREATE TRIGGER store_count_{table}_insert AFTER INSERT ON {table} BEGIN {plus} END",
            f"CREATE TRIGGER store_count_{table}_delete AFTER DELETE ON {table} BEGIN {minus} END"]
    if columns:
        changed = " OR ".join(f"OLD.{c} IS NOT NEW.{c}" for c in columns)
        both = " ".join(_add(c, "OLD", "-", "sqlite") + " " + _add(c, "NEW", "+", "sqlite") for c in counters)
        out.append(f"CREATE TRIGGER store_count_{table}_update AFTER UPDATE OF {', '.join(columns)} "
                   f"ON {table} WHEN {changed} BEGIN {both} END")
    return out


def _pg_ordered(c: Counter) -> str:
    """An update's two changes to one counter, the smaller key first (the one order every writer takes)."""
    old, new = c.key.format(r="OLD"), c.key.format(r="NEW")
    minus, plus = _add(c, "OLD", "-", "postgresql"), _add(c, "NEW", "+", "postgresql")
    return f"IF ({old}) <= ({new}) THEN {minus} {plus} ELSE {plus} {minus} END IF;"


def _pg_triggers(table: str) -> list[str]:
    columns, counters = COUNTED[table]
    plus = " ".join(_add(c, "NEW", "+", "postgresql") for c in counters)
    minus = " ".join(_add(c, "OLD", "-", "postgresql") for c in counters)
    both = " ".join(_pg_ordered(c) for c in counters)
    function = f"""
CREATE OR REPLACE FUNCTION store_count_{table}() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    IF TG_OP = 'INSERT' THEN {plus}
    ELSIF TG_OP = 'DELETE' THEN {minus}
    ELSE {both}
    END IF;
    RETURN NULL;
END
$fn$"""
    run = f"FOR EACH ROW {{when}} EXECUTE PROCEDURE store_count_{table}()"
    out = [function]
    for op in ("insert", "delete", "update"):
        out.append(f"DROP TRIGGER IF EXISTS store_count_{table}_{op} ON {table}")
    out.append(f"CREATE TRIGGER store_count_{table}_insert AFTER INSERT ON {table} " + run.format(when=""))
    out.append(f"CREATE TRIGGER store_count_{table}_delete AFTER DELETE ON {table} " + run.format(when=""))
    if columns:
        changed = " OR ".join(f"OLD.{c} IS DISTINCT FROM NEW.{c}" for c in columns)
        out.append(f"CREATE TRIGGER store_count_{table}_update AFTER UPDATE ON {table} "
                   + run.format(when=f"WHEN ({changed})"))
    return out


def install(conn: Connection) -> None:
    """Migrations 2600 and 2603 (the role_model counter): the table, its triggers (made again with today's
    counters), and the counts of the store as it stands (a backfill).
    Writers of the counted tables wait meanwhile (PostgreSQL: table locks; SQLite: the migration's write
    lock), so no change falls between the backfill and the triggers."""
    STORE_COUNT.create(conn, checkfirst=True)
    postgres = conn.dialect.name == "postgresql"
    if postgres:
        conn.exec_driver_sql(f"LOCK TABLE {', '.join(COUNTED)} IN SHARE ROW EXCLUSIVE MODE")
        # SQLite's instr(): PostgreSQL's strpos() under the same name, for the reason kinds' SQL
        conn.exec_driver_sql("CREATE OR REPLACE FUNCTION instr(s text, sub text) RETURNS integer "
                             "LANGUAGE sql IMMUTABLE AS $$ SELECT strpos(s, sub) $$")
    for table in COUNTED:
        for statement in (_pg_triggers(table) if postgres else _sqlite_triggers(table)):
            conn.exec_driver_sql(statement)
    conn.exec_driver_sql("DELETE FROM store_count")
    for table, (_columns, counters) in COUNTED.items():
        for c in counters:
            key, amount, shard = c.key.format(r=table), c.amount.format(r=table), _shard(table, conn.dialect.name)
            conn.exec_driver_sql(
                f"INSERT INTO store_count (kind, key, shard, n) SELECT '{c.kind}', {key}, {shard}, "
                f"SUM({amount}) FROM {table} GROUP BY 2, 3 HAVING SUM({amount}) <> 0")


_BY_KEY = text("SELECT key, SUM(n) FROM store_count WHERE kind = :kind GROUP BY key")


def by_key(session: Any, kind: str) -> dict[str, int]:
    """Every key of ``kind`` with its count (shards summed; keys whose count went back to 0 left out)."""
    return {str(key): int(n) for key, n in session.execute(_BY_KEY, {"kind": kind}).all() if int(n)}


def total(session: Any, kind: str, key: str = "") -> int:
    return by_key(session, kind).get(key, 0)
