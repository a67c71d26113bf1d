"""The ledger's sums kept by the store's triggers (store/call_groups.py, issue 43): every change to a ledger row
moves its group, on SQLite and PostgreSQL, under concurrent writers, after a backfill; and the report reads
the groups as the rows say, a file an earlier version wrote included."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import duckdb
import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine

from playlisteval.analytics import Analytics
from playlisteval.analytics.mirror import META
from playlisteval.analytics.runner import FILE_NAME
from playlisteval.store import migrate, transaction
from playlisteval.store.call_groups import KEY, SUMMED, TABLE, TRIGGER
from playlisteval.store.tables import ModelCall
from tests.test_analytics_arrow import STORES, _fresh_views, _store, _views

COST_VIEWS = ("cost_by_domain", "cost_by_model", "cost_by_role", "eval_cost_by_judge")


def _calls(engine: Engine, n: int, status: str = "ok", start: int = 0) -> list[int]:
    """``n`` ledger rows of a few kinds (build and eval, hits and misses, with and without item or run), their ids."""
    ids = []
    with transaction(engine) as s:
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


def _grouped(engine: Engine) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """(the ledger's rows grouped now by the store's own SQL, the groups the triggers kept): key, calls and
    token sums exact, floats to 1e-9."""
    keys, sums = ", ".join(KEY), ", ".join(f"sum({c})" for c in SUMMED)
    with engine.connect() as conn:
        fresh = conn.execute(text(f"SELECT {keys}, count(*), {sums} FROM model_call GROUP BY {keys}")).all()
        kept = conn.execute(text(f"SELECT {keys}, calls, {', '.join(SUMMED)} FROM {TABLE}")).all()

    def rows(got: Any) -> list[tuple[Any, ...]]:
        k = len(KEY)  # the key (cache_hit as a boolean on both stores), calls and tokens, then the floats
        return sorted(((*r[:k - 1], bool(r[k - 1]), *(int(v) for v in r[k:k + 4]), round(float(r[k + 4]), 9),
                        round(float(r[k + 5]), 9)) for r in got), key=repr)

    return rows(fresh), rows(kept)


def _empty_groups(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(text(f"SELECT count(*) FROM {TABLE} WHERE calls = 0")).scalar_one())


@pytest.mark.parametrize("kind", STORES)
def test_every_change_to_a_ledger_row_moves_its_group(kind: str, tmp_path: Path,
                                                      request: pytest.FixtureRequest) -> None:
    _settings, engine = _store(tmp_path, kind, request)
    fresh, kept = _grouped(engine)
    assert fresh == kept and kept  # the fixture's own rows, written through the runner's tables
    late = _calls(engine, 12, status="in_flight")
    _calls(engine, 30, start=12)
    fresh, kept = _grouped(engine)
    assert fresh == kept and any(r[6] == "in_flight" for r in kept)
    with engine.begin() as conn:  # the calls in flight finish, as the runner finishes them
        conn.execute(text("UPDATE model_call SET status = 'ok', usd = 0.5, output_tokens = 9 "
                          "WHERE status = 'in_flight'"))
    fresh, kept = _grouped(engine)
    assert fresh == kept and not any(r[6] == "in_flight" for r in kept)  # the emptied group is gone
    with engine.begin() as conn:  # a key changed, a sum changed, rows removed
        conn.execute(text("UPDATE model_call SET item_id = NULL WHERE id = :i"), {"i": late[0]})
        conn.execute(text("UPDATE model_call SET item_id = 2 WHERE id = :i"), {"i": late[1]})
        conn.execute(text("UPDATE model_call SET gpu_seconds = gpu_seconds + 1.5 WHERE id = :i"), {"i": late[2]})
        conn.execute(text("UPDATE model_call SET worker = 'w9' WHERE id = :i"), {"i": late[3]})  # not a group's
        conn.execute(text("DELETE FROM model_call WHERE id IN (:a, :b)"), {"a": late[4], "b": late[5]})
    fresh, kept = _grouped(engine)
    assert fresh == kept and _empty_groups(engine) == 0
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM model_call"))
    assert _grouped(engine) == ([], [])


def test_concurrent_writers_on_postgresql_keep_the_sums(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """Workers writing and finishing calls of the same groups at once: no lost update, no deadlock."""
    _settings, engine = _store(tmp_path, "postgresql", request)
    errors: list[BaseException] = []

    def worker(w: int) -> None:
        try:
            for i in range(15):
                with transaction(engine) as s:
                    call = ModelCall(request_hash=f"w{w}-{i}", role="judge", provider="sim", model="m",
                                     purpose="eval", status="in_flight", run_id=1 + i % 2, estimated_usd=0.1)
                    s.add(call)
                    s.flush()
                    call_id = call.id
                with transaction(engine) as s:
                    row = s.get(ModelCall, call_id)
                    assert row is not None
                    row.status, row.usd, row.input_tokens = ("ok", "error")[i % 3 == 0], 0.01 * w, 10 + i
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    fresh, kept = _grouped(engine)
    assert fresh == kept and _empty_groups(engine) == 0


def test_a_batch_of_ledger_rows_beside_a_paid_call_never_deadlocks(tmp_path: Path,
                                                                    request: pytest.FixtureRequest) -> None:
    """PostgreSQL: a transaction writing two paid calls (as a batch writes its rows) and another writing one
    paid call into the second's group, interleaved. Each takes its purpose's total before any group, so the
    second waits for the first; with the groups taken first they would wait for each other (a deadlock)."""
    _settings, engine = _store(tmp_path, "postgresql", request)
    first_written, errors = threading.Event(), []

    def call(s: Any, item: int) -> None:
        s.add(ModelCall(request_hash=f"b{item}", role="G", provider="sim", model="m", purpose="build",
                        status="ok", item_id=item, usd=0.25))
        s.flush()

    def batch() -> None:
        try:
            with transaction(engine) as s:
                call(s, 1)
                first_written.set()
                time.sleep(0.5)  # the other writer reaches its row meanwhile
                call(s, 2)
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    def single() -> None:
        first_written.wait(10)
        try:
            with transaction(engine) as s:
                call(s, 2)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=batch), threading.Thread(target=single)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    fresh, kept = _grouped(engine)
    assert fresh == kept


@pytest.mark.parametrize("kind", STORES)
def test_a_ledger_written_before_the_groups_is_backfilled(kind: str, tmp_path: Path,
                                                          request: pytest.FixtureRequest) -> None:
    _settings, engine = _store(tmp_path, kind, request)
    on = " ON model_call" if kind == "postgresql" else ""
    with engine.begin() as conn:  # the store as an earlier version left it: no groups, no triggers
        for op in ("insert", "update", "delete"):
            conn.execute(text(f"DROP TRIGGER {TRIGGER}_{op}{on}"))
        conn.execute(text(f"DROP TABLE {TABLE}"))
        conn.execute(text("DELETE FROM schema_migration WHERE name = '4300_call_groups'"))
    _calls(engine, 20)
    assert migrate(engine) == ["4300_call_groups"]
    fresh, kept = _grouped(engine)
    assert fresh == kept and sum(r[len(KEY)] for r in kept) >= 20  # calls
    _calls(engine, 5, start=20)  # and kept from then on
    assert _grouped(engine)[0] == _grouped(engine)[1]


def _totals_from_rows(engine: Engine) -> list[tuple[object, ...]]:
    """Calls, tokens and dollars per purpose and role, summed from the store's rows by its own SQL."""
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT purpose, role, count(*), sum(input_tokens + output_tokens + thinking_tokens), "
                                 "sum(usd) FROM model_call GROUP BY purpose, role ORDER BY purpose, role")).all()
    return [(p, r, int(n), int(t), round(float(u), 9)) for p, r, n, t, u in rows]


def _totals(an: Analytics) -> list[tuple[object, ...]]:
    return [(r["purpose"], r["role"], int(r["calls"]), int(r["tokens"]), round(float(r["spend"]), 9))
            for r in an.rows("SELECT * FROM cost_by_role ORDER BY purpose, role")]


@pytest.mark.parametrize("kind", STORES)
def test_the_report_reads_the_groups_as_the_rows_say(kind: str, tmp_path: Path,
                                                     request: pytest.FixtureRequest) -> None:
    settings, engine = _store(tmp_path, kind, request)
    with Analytics(engine, settings) as an:
        assert an.sync is not None and an.sync.actions[TABLE] == "whole" and "model_call" not in an.sync.actions
        assert _totals(an) == _totals_from_rows(engine)
    _calls(engine, 40)
    _calls(engine, 3, status="in_flight", start=40)
    with Analytics(engine, settings) as an:
        assert _totals(an) == _totals_from_rows(engine)
        assert _views(an) == _fresh_views(engine, settings)
    with engine.begin() as conn:  # the calls in flight finish; more arrive
        conn.execute(text("UPDATE model_call SET status = 'ok', usd = 0.5 WHERE status = 'in_flight'"))
    _calls(engine, 10, start=43)
    with Analytics(engine, settings) as an:
        assert _totals(an) == _totals_from_rows(engine)
        views = _views(an)
        assert views == _fresh_views(engine, settings)
        assert all(views[name] for name in COST_VIEWS)


def test_a_file_an_earlier_version_wrote_is_read_again(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """An analytics file that kept the ledger's rows as its own groups (before the store kept them): its copy
    is dropped, never read for the store's."""
    settings, engine = _store(tmp_path, "sqlite", request)
    with Analytics(engine, settings):
        pass
    con = duckdb.connect(str(tmp_path / FILE_NAME))
    try:  # the earlier way: groups with the rows' open ids and largest id, recorded under the ledger's name
        con.execute(f"CREATE OR REPLACE TABLE {TABLE} AS SELECT *, NULL::BIGINT AS open_id, 0::BIGINT AS max_id, "
                    f"FROM {TABLE}")
        con.execute(f"UPDATE {TABLE} SET usd = usd + 1")
        con.execute(f"DELETE FROM {META} WHERE name = '.store'")
        con.execute(f"INSERT INTO {META} VALUES ('model_call', '[]', 1, 1, '[]', '[]')")
    finally:
        con.close()
    with Analytics(engine, settings) as an:
        assert an.rows(f"SELECT name FROM {META} WHERE name = 'model_call'") == []
        columns = [r[0] for r in an.con.execute(f"DESCRIBE {TABLE}").fetchall()]
        assert "open_id" not in columns and "max_id" not in columns
        assert _totals(an) == _totals_from_rows(engine)
        assert _views(an) == _fresh_views(engine, settings)


def test_sql_reads_the_ledgers_rows_and_its_groups(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """`playlisteval sql` copies every table as it is: the ledger's rows, and the groups beside them."""
    settings, engine = _store(tmp_path, "sqlite", request)
    with Analytics(engine, settings, all_tables=True) as an:
        n = an.rows("SELECT count(*) AS n FROM model_call")[0]["n"]
        assert n > 0 and an.rows(f"SELECT sum(calls) AS n FROM {TABLE}")[0]["n"] == n
        assert _totals(an) == _totals_from_rows(engine)
