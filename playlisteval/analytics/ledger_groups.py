"""The ledger as the report reads it: ``call_groups``, the model calls counted and summed per kind of call.

Every view that reads the ledger (the cost tables, each judge run's cost) wants sums: calls, tokens,
GPU-seconds and dollars per purpose, role, model, item, run, status and cache hit. So the analytics
file keeps those sums rather than the million rows under them (issue 43: copying 1M ledger rows into the
file was 1.6 of a cold report's ~9.5 CPU-s; grouped as they are read, 0.8, and the cost views read a few
thousand rows instead of a million).

A group holds the rows of one key that are final (mirror.FINAL_CALL_STATUSES). A row that may still
change — a call in flight, one marked interrupted — is a group of its own, marked with its id in
``open_id``, so the next sync can delete it and read it again. A sync appends the groups of the rows it
read; one key may then have several groups, which every reader sums, like the rows they stand for.
``calls`` and ``max_id`` (the largest id in a group) let the mirror check the copy against the store:
the same count of rows, the same largest id.

Where the ledger arrives as rows (the Python loader, `playlisteval sql`'s copy of every table), the same
groups are made from them (``ensure``), so the views read ``call_groups`` on every path.
"""

from __future__ import annotations

import duckdb

TABLE = "call_groups"
SOURCE = "model_call"  # the store's table whose rows the groups sum
KEY = ("purpose", "role", "provider", "model", "item_id", "run_id", "status", "cache_hit")
SUMMED = ("input_tokens", "output_tokens", "thinking_tokens", "gpu_seconds", "usd")
#: a row that is not final keeps a group of its own, its id here (NULL for a group of final rows)
OPEN_ID = "open_id"
COUNT = "sum(calls)"  # the rows the groups stand for ...
LARGEST = "max(max_id)"  # ... and the largest id among them (mirror.py's check against the store)


def grouped(rows_sql: str, final_statuses: tuple[str, ...]) -> str:
    """The groups of the ledger rows ``rows_sql`` selects (their key, sums and ``id``)."""
    final = ", ".join(f"'{s}'" for s in final_statuses)
    sums = ", ".join(f"sum({c}) AS {c}" for c in SUMMED)
    return (f"SELECT {', '.join(KEY)}, CASE WHEN status IN ({final}) THEN NULL ELSE id END AS {OPEN_ID}, "
            f"count(*) AS calls, {sums}, max(id) AS max_id FROM ({rows_sql}) GROUP BY ALL")


def ensure(con: duckdb.DuckDBPyConnection, final_statuses: tuple[str, ...]) -> None:
    """``call_groups`` made (TEMP) from the ledger's rows where the rows, not the groups, were loaded."""
    present = {name for (name,) in con.execute("SELECT table_name FROM duckdb_tables() "
                                               "UNION ALL SELECT view_name FROM duckdb_views()").fetchall()}
    if TABLE in present or SOURCE not in present:
        return
    con.execute(f"CREATE TEMP TABLE {TABLE} AS {grouped(f'SELECT * FROM {SOURCE}', final_statuses)}")
