"""A benchmark's own difficulty-gate records (issue 41, table ``benchmark_gate``): what its weak judges said
about every pair of its sampled questions, kept and dropped alike.

Pairs belong to items, not to a benchmark: drawing another benchmark with other weak judges gates the
same pairs again and rewrites ``pair.difficulty`` and ``pair.kept``. ``benchmark_pair.difficulty`` (2310)
keeps the drawn pairs' verdicts for the export's rows, but the dataset card's accuracy by rating gap is
taken over *every* pair of the sampled questions (SPEC F2: before the gate kept the hard ones), and its
provenance names the weak judges that gated the benchmark. Both read these records, copied when the
benchmark is drawn, so another draw changes neither.

Plain SQL text, no ORM: provenance (`status --json`) reads it without loading the table classes (issue 26).
"""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.engine import Connection

#: the gate's roles (select/difficulty.py ROLES; not imported: that module loads the evaluation stack)
ROLES = ("F_first", "F_second")

# The pairs of the benchmark's sampled questions with the gate's record as the pair holds it now. A drawn
# pair's verdicts are the benchmark's own copy when one was kept (benchmark_pair.difficulty, 2310) and it
# was kept by definition; the others' are the pair's, the best an older store has (the backfill).
_COPY = """
INSERT INTO benchmark_gate (benchmark_id, pair_id, difficulty, kept)
SELECT q.benchmark_id, p.id, {difficulty}, {kept}
FROM benchmark_question AS q
JOIN pair AS p ON p.item_id = q.item_id
LEFT JOIN benchmark_pair AS bp ON bp.benchmark_id = q.benchmark_id AND bp.pair_id = p.id
WHERE {where}
  AND NOT EXISTS (SELECT 1 FROM benchmark_gate AS g WHERE g.benchmark_id = q.benchmark_id AND g.pair_id = p.id)
"""


def copy_draw(conn: Connection, benchmark_id: int) -> None:
    """Keep the gate's record of every pair of ``benchmark_id``'s sampled questions as the pairs hold it now:
    called in the transaction that writes the draw, right after the gate decided them."""
    conn.execute(text(_COPY.format(difficulty="p.difficulty", kept="p.kept", where="q.benchmark_id = :bid")),
                 {"bid": benchmark_id})


def clear(conn: Connection, benchmark_id: int) -> None:
    """Drop a benchmark's records (a redraw writes its own in their place)."""
    conn.execute(text("DELETE FROM benchmark_gate WHERE benchmark_id = :bid"), {"bid": benchmark_id})


def backfill(conn: Connection) -> None:
    """Migration 2312 (after the table is made): each benchmark's records from what an older store has —
    its drawn pairs' own verdicts (2310) where kept, else the pair's (the last gate's, maybe another
    draw's: nothing better is left). A benchmark that has its records gets nothing twice (NOT EXISTS)."""
    conn.execute(text(_COPY.format(difficulty="coalesce(bp.difficulty, p.difficulty)",
                                   kept="CASE WHEN bp.id IS NOT NULL THEN TRUE ELSE p.kept END", where="TRUE")))


def _model_sql(dialect: str, role: str) -> str:
    if dialect == "postgresql":
        return f"CAST(difficulty AS JSON) -> '{role}' ->> 'model'"
    return f"json_extract(difficulty, '$.{role}.model')"


def weak_judges(conn: Connection, benchmark_id: int) -> dict[str, list[str]]:
    """Role → the models whose verdicts gated ``benchmark_id`` (sorted; roles with none left out)."""
    out: dict[str, list[str]] = {}
    for role in ROLES:  # roles are fixed names, never user text: safe in the SQL
        rows = conn.execute(text(f"SELECT DISTINCT {_model_sql(conn.dialect.name, role)} FROM benchmark_gate "
                                 "WHERE benchmark_id = :bid"), {"bid": benchmark_id}).all()
        models = sorted(str(m) for (m,) in rows if m is not None)
        if models:
            out[role] = models
    return out
