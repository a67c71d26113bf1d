"""The ledger's running money per purpose (``spend_total``), kept by database triggers on ``model_call``.

A budget check used to sum the whole ledger inside its write transaction (0.23–0.34 s per call at 1M
rows, issue 13). The triggers add each ledger change to its purpose's row in the same transaction as
the change, whoever writes it (the runner, batches, context caches, `remove`, a test's own rows), so
the total is exact under concurrency: on SQLite writers are serialized; on PostgreSQL the row lock on
the purpose's total orders them, and the runner's advisory lock still serializes reservations.

What each ledger row adds, by bucket (``models.budget.Spend``): ``paid`` its cost once it ran (ok, malformed,
error, interrupted); ``reserved`` its estimate while in flight; ``interrupted`` its estimate while it was
cut short and never finished (latency 0: its cost is unknown).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection

from playlisteval.store.direct import Direct

_PAID = "CASE WHEN {r}.status IN ('ok', 'malformed', 'error', 'interrupted') THEN COALESCE({r}.usd, 0) ELSE 0 END"
_RESERVED = "CASE WHEN {r}.status = 'in_flight' THEN COALESCE({r}.estimated_usd, 0) ELSE 0 END"
_INTERRUPTED = ("CASE WHEN {r}.status = 'interrupted' AND {r}.latency_s = 0 THEN COALESCE({r}.estimated_usd, 0) "
                "ELSE 0 END")
# the columns whose change can move money (an UPDATE of anything else leaves the totals alone)
_MONEY_COLUMNS = ("status", "usd", "estimated_usd", "latency_s", "purpose")


def _parts(r: str) -> tuple[str, str, str]:
    return _PAID.format(r=r), _RESERVED.format(r=r), _INTERRUPTED.format(r=r)


def _sqlite_add(r: str, sign: str) -> str:
    paid, reserved, interrupted = _parts(r)
    return (f"UPDATE spend_total SET paid = paid {sign} ({paid}), reserved = reserved {sign} ({reserved}), "
            f"interrupted = interrupted {sign} ({interrupted}) WHERE purpose = {r}.purpose;")


def _sqlite_row(r: str) -> str:
    return (f"INSERT INTO spend_total (purpose, paid, reserved, interrupted) SELECT {r}.purpose, 0, 0, 0 "
            f"WHERE NOT EXISTS (SELECT 1 FROM spend_total WHERE purpose = {r}.purpose);")


def _sqlite_triggers() -> list[str]:
    return [
        "CREATE TRIGGER IF NOT EXISTS spend_total_insert AFTER INSERT ON model_call WHEN NEW.status <> 'cached' "
        f"BEGIN {_sqlite_row('NEW')} {_sqlite_add('NEW', '+')} END",
        f"CREATE TRIGGER IF NOT EXISTS spend_total_update AFTER UPDATE OF {', '.join(_MONEY_COLUMNS)} ON model_call "
        f"BEGIN {_sqlite_add('OLD', '-')} {_sqlite_row('NEW')} {_sqlite_add('NEW', '+')} END",
        "CREATE TRIGGER IF NOT EXISTS spend_total_delete AFTER DELETE ON model_call "
        f"BEGIN {_sqlite_add('OLD', '-')} END",
    ]


def _postgres_triggers() -> list[str]:
    old_paid, old_reserved, old_interrupted = _parts("OLD")
    new_paid, new_reserved, new_interrupted = _parts("NEW")
    changed = " OR ".join(f"OLD.{c} IS DISTINCT FROM NEW.{c}" for c in _MONEY_COLUMNS)
    function = f"""
CREATE OR REPLACE FUNCTION spend_total_track() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        UPDATE spend_total SET paid = paid - ({old_paid}), reserved = reserved - ({old_reserved}),
            interrupted = interrupted - ({old_interrupted}) WHERE purpose = OLD.purpose;
    END IF;
    IF TG_OP <> 'DELETE' THEN
        INSERT INTO spend_total AS t (purpose, paid, reserved, interrupted)
            VALUES (NEW.purpose, {new_paid}, {new_reserved}, {new_interrupted})
            ON CONFLICT (purpose) DO UPDATE SET paid = t.paid + EXCLUDED.paid,
                reserved = t.reserved + EXCLUDED.reserved, interrupted = t.interrupted + EXCLUDED.interrupted;
    END IF;
    RETURN NULL;
END
$fn$"""
    run = "FOR EACH ROW {when} EXECUTE PROCEDURE spend_total_track()"
    return [
        function,
        "DROP TRIGGER IF EXISTS spend_total_insert ON model_call",
        "DROP TRIGGER IF EXISTS spend_total_update ON model_call",
        "DROP TRIGGER IF EXISTS spend_total_delete ON model_call",
        "CREATE TRIGGER spend_total_insert AFTER INSERT ON model_call "
        + run.format(when="WHEN (NEW.status <> 'cached')"),
        "CREATE TRIGGER spend_total_update AFTER UPDATE ON model_call " + run.format(when=f"WHEN ({changed})"),
        "CREATE TRIGGER spend_total_delete AFTER DELETE ON model_call " + run.format(when=""),
    ]


def install(conn: Connection) -> None:
    """Migration 0540: the table, its triggers, and the totals of the ledger as it stands (a backfill).
    Writers of the ledger wait meanwhile (PostgreSQL: a table lock; SQLite: the migration's write lock),
    so no change falls between the backfill and the triggers."""
    from sqlmodel import SQLModel  # filled with the table classes by migrations.migrate before any step runs

    SQLModel.metadata.tables["spend_total"].create(conn, checkfirst=True)
    if conn.dialect.name == "postgresql":
        conn.exec_driver_sql("LOCK TABLE model_call IN SHARE ROW EXCLUSIVE MODE")
        statements = _postgres_triggers()
    else:
        statements = _sqlite_triggers()
    for statement in statements:
        conn.exec_driver_sql(statement)
    paid, reserved, interrupted = _parts("model_call")
    conn.exec_driver_sql("DELETE FROM spend_total")
    conn.exec_driver_sql(
        "INSERT INTO spend_total (purpose, paid, reserved, interrupted) "
        f"SELECT purpose, SUM({paid}), SUM({reserved}), SUM({interrupted}) FROM model_call GROUP BY purpose")


# on the driver's cursor (store/direct.py): read before every paid call
_TOTAL = Direct(text("SELECT paid + reserved + interrupted FROM spend_total WHERE purpose = :p"))
# the total less this request's open rows, in one statement (a budget check runs before every paid call)
_TOTAL_LESS_OPEN = Direct(text(
    "SELECT COALESCE((SELECT paid + reserved + interrupted FROM spend_total WHERE purpose = :p), 0) - "
    "(SELECT COALESCE(SUM(estimated_usd), 0) FROM model_call WHERE request_hash = :h AND purpose = :p "
    "AND (status = 'in_flight' OR (status = 'interrupted' AND latency_s = 0)))"))


def committed(session: Any, purpose: str, exclude_hash: str | None = None) -> float:
    """Paid + reserved + interrupted of ``purpose`` (``Spend.committed``), from its running total: one row.
    ``exclude_hash``: the open rows of that request (in flight, or cut short) are left out (an indexed
    look-up by request hash)."""
    if exclude_hash is not None:
        row = _TOTAL_LESS_OPEN.first(session, {"p": purpose, "h": exclude_hash})
    else:
        row = _TOTAL.first(session, {"p": purpose})
    return float(row[0]) if row is not None and row[0] is not None else 0.0


_PARTS = text("SELECT paid, reserved, interrupted FROM spend_total WHERE purpose = :p")


def parts(session: Any, purpose: str) -> tuple[float, float, float]:
    """(paid, reserved, interrupted) of ``purpose`` from its running total: ``runner.spend_of`` without
    summing the ledger (`status` on a 1M-row ledger, issue 26)."""
    row = session.execute(_PARTS, {"p": purpose}).first()
    return (float(row[0]), float(row[1]), float(row[2])) if row is not None else (0.0, 0.0, 0.0)
