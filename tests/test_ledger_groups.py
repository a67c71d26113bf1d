"""The ledger kept in the analytics file as its sums (analytics/ledger_groups.py, issue 43): what the report reads
of it is what the rows say, through appends, calls finished later and a file an earlier version wrote."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text

from playlisteval.analytics import Analytics, file_lease, ledger_groups, mirror, scan
from playlisteval.analytics.runner import FILE_NAME, HEAVY_COLUMNS, VIEW_TABLES
from playlisteval.store import transaction
from playlisteval.store.tables import ModelCall
from tests.test_analytics_arrow import STORES, _fresh_views, _store, _views

COST_VIEWS = ("cost_by_domain", "cost_by_model", "cost_by_role", "eval_cost_by_judge")


def _calls(engine: object, n: int, status: str = "ok", start: int = 0) -> list[int]:
    """``n`` ledger rows of a few kinds (build and eval, hits and misses), their ids."""
    ids = []
    with transaction(engine) as s:  # type: ignore[arg-type]
        for i in range(start, start + n):
            call = ModelCall(request_hash=f"g{i}", role=("G", "D", "judge")[i % 3], provider="sim",
                             model=("m1", "m2")[i % 2], purpose=("build", "eval")[i % 2], status=status,
                             item_id=1 + i % 2 if i % 2 == 0 else None, run_id=1 if i % 2 else None,
                             cache_hit=i % 5 == 0, input_tokens=100 + i, output_tokens=7 * i, thinking_tokens=i % 3,
                             gpu_seconds=0.25 * i, usd=0.001 * (i + 1), estimated_usd=0.002)
            s.add(call)
            s.flush()
            assert call.id is not None
            ids.append(call.id)
    return ids


def _totals_from_rows(engine: object) -> list[tuple[object, ...]]:
    """Calls, tokens and dollars per purpose and role, summed from the store's rows by its own SQL."""
    with engine.connect() as conn:  # type: ignore[attr-defined]
        rows = conn.execute(text("SELECT purpose, role, count(*), sum(input_tokens + output_tokens + thinking_tokens), "
                                 "sum(usd) FROM model_call GROUP BY purpose, role ORDER BY purpose, role")).all()
    return [(p, r, int(n), int(t), round(float(u), 9)) for p, r, n, t, u in rows]


def _totals(an: Analytics) -> list[tuple[object, ...]]:
    return [(r["purpose"], r["role"], int(r["calls"]), int(r["tokens"]), round(float(r["spend"]), 9))
            for r in an.rows("SELECT * FROM cost_by_role ORDER BY purpose, role")]


@pytest.mark.parametrize("kind", STORES)
def test_the_groups_follow_appends_and_calls_finished_later(kind: str, tmp_path: Path,
                                                           request: pytest.FixtureRequest) -> None:
    settings, engine = _store(tmp_path, kind, request)
    with Analytics(engine, settings) as an:
        assert an.sync is not None and an.sync.actions["model_call"] == "loaded"
        assert an.sync.held_as("model_call") == ledger_groups.TABLE
        assert _totals(an) == _totals_from_rows(engine)
    _calls(engine, 40)
    late = _calls(engine, 3, status="in_flight", start=40)
    with Analytics(engine, settings) as an:
        assert an.sync is not None and an.sync.actions["model_call"] == "appended 43"
        kept_open = an.rows("SELECT open_id FROM call_groups WHERE open_id IS NOT NULL ORDER BY open_id")
        assert [r["open_id"] for r in kept_open] == late
        assert _totals(an) == _totals_from_rows(engine)
        assert _views(an) == _fresh_views(engine, settings)
    with engine.begin() as conn:  # the calls in flight finish; more arrive
        conn.execute(text("UPDATE model_call SET status = 'ok', usd = 0.5 WHERE status = 'in_flight'"))
    _calls(engine, 10, start=43)
    with Analytics(engine, settings) as an:
        assert an.sync is not None and an.sync.actions["model_call"] == "appended 13"
        assert an.rows("SELECT count(*) AS n FROM call_groups WHERE open_id IS NOT NULL") == [{"n": 0}]
        # several groups of one key (one per sync that read its rows): every reader sums them
        assert an.rows(f"SELECT max(n) AS most FROM (SELECT count(*) AS n FROM call_groups "
                       f"GROUP BY {', '.join(ledger_groups.KEY)})")[0]["most"] >= 2
        assert _totals(an) == _totals_from_rows(engine)
        views = _views(an)
        assert views == _fresh_views(engine, settings)
        assert all(views[name] for name in COST_VIEWS)


def test_a_file_holding_the_ledgers_rows_is_loaded_again_as_groups(tmp_path: Path,
                                                                  request: pytest.FixtureRequest) -> None:
    """An analytics file an earlier version wrote (the ledger as rows) is not taken for a copy of the groups."""
    settings, engine = _store(tmp_path, "sqlite", request)
    path = tmp_path / FILE_NAME
    con, used = file_lease.connect(path)
    try:  # the earlier way: the ledger's rows in the file
        columns = scan.store_columns(engine, list(VIEW_TABLES), {t: set(c) for t, c in HEAVY_COLUMNS.items()})
        with scan.attached(con, engine) as sqlite:
            mirror.Mirror(con, engine, sqlite, columns, groups=False).sync()
        assert con.execute("SELECT count(*) FROM model_call").fetchone()[0] > 0
    finally:
        con.close()
        file_lease.release(used)
    with Analytics(engine, settings) as an:
        assert an.sync is not None and an.sync.actions["model_call"].startswith("reloaded")
        tables = {name for (name,) in an.con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        assert ledger_groups.TABLE in tables and "model_call" not in tables  # the rows dropped from the file
        assert _totals(an) == _totals_from_rows(engine)
        assert _views(an) == _fresh_views(engine, settings)


def test_sql_still_reads_the_ledgers_rows(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """`playlisteval sql` copies every table as it is: the ledger's rows, and its groups beside them for the views."""
    settings, engine = _store(tmp_path, "sqlite", request)
    with Analytics(engine, settings, all_tables=True) as an:
        n = an.rows("SELECT count(*) AS n FROM model_call")[0]["n"]
        assert n > 0 and an.rows("SELECT sum(calls) AS n FROM call_groups")[0]["n"] == n
        assert _totals(an) == _totals_from_rows(engine)
