"""The store read by DuckDB's scanners (issue 13, deliverable 4): the same tables as the Python loader on
SQLite and PostgreSQL, and the analytics file kept up to date — new judgments appended, a dropped run,
a run made anew under a reused id, a changed item state and a ledger row finished later all reflected,
never a stale report."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from sqlalchemy import select, text
from sqlalchemy.engine import Engine

from playlisteval.analytics import Analytics, AnalyticsError, load_tables
from playlisteval.analytics.runner import FILE_NAME, HEAVY_COLUMNS, VIEW_TABLES
from playlisteval.config import Settings
from playlisteval.eval.runs import drop_run
from playlisteval.store import open_store, transaction
from playlisteval.store.tables import JudgeRun, Judgment, ModelCall
from tests import analytics_fixtures
from tests.helpers import project

STORES = ["sqlite", "postgresql"]


def _store(tmp_path: Path, kind: str, request: pytest.FixtureRequest) -> tuple[Settings, Engine]:
    url = request.getfixturevalue("pg_url") if kind == "postgresql" else f"sqlite:///{tmp_path}/store.db"
    settings = project(tmp_path, store__url=url)
    engine = open_store(settings)
    analytics_fixtures.build(engine)
    return settings, engine


def _sorted(table: pa.Table) -> list[dict[str, Any]]:
    rows = table.to_pylist()
    return sorted(rows, key=lambda r: r.get("id", repr(r)))


def _views(an: Analytics) -> dict[str, list[tuple[Any, ...]]]:
    out = {}
    for name in an.view_names():
        rows = [tuple(round(v, 9) if isinstance(v, float) else v for v in r.values())
                for r in an.table(f"SELECT * FROM {name}").to_pylist()]
        out[name] = sorted(rows, key=repr)
    return out


def _fresh_views(engine: Engine, settings: Settings) -> dict[str, list[tuple[Any, ...]]]:
    """What a report made from scratch (memory only, nothing reused) shows."""
    with Analytics(engine, settings, file=False) as an:
        return _views(an)


@pytest.mark.parametrize("kind", STORES)
def test_scanner_gives_the_python_loaders_tables(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    settings, engine = _store(tmp_path, kind, request)
    python = load_tables(engine, VIEW_TABLES, skip_columns=HEAVY_COLUMNS)
    with Analytics(engine, settings, file=False) as an:
        assert an.sync is not None, "the scanner path was not taken"
        assert "model_call" not in python and "call_groups" in python  # the ledger's sums, not its rows
        for name, expected in python.items():
            got = an.table(f"SELECT * FROM {name}")
            assert got.schema.names == expected.schema.names, name
            for field in expected.schema:  # the same types: ints, floats, booleans, JSON as text
                assert got.schema.field(field.name).type == field.type, f"{name}.{field.name}"
            assert _sorted(got) == _sorted(expected), name


def _copy_run(engine: Engine, source: int, created_at: float) -> int:
    """A new judge run holding the same judgments as run ``source`` (what a second `eval judge` adds)."""
    with transaction(engine) as s:
        run = s.get(JudgeRun, source)
        assert run is not None
        new = JudgeRun(**{**run.model_dump(exclude={"id"}), "created_at": created_at,
                          "judge": run.judge + "-again"})
        s.add(new)
        s.flush()
        assert new.id is not None
        for j in s.execute(select(Judgment).where(Judgment.run_id == source)).scalars().all():
            s.add(Judgment(**{**j.model_dump(exclude={"id"}), "run_id": new.id}))
        return new.id


@pytest.mark.parametrize("kind", STORES)
def test_the_file_appends_new_judgments(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    settings, engine = _store(tmp_path, kind, request)
    with Analytics(engine, settings) as an:
        assert an.sync is not None and an.sync.actions["judgment"] == "loaded"
    assert (tmp_path / FILE_NAME).exists()
    with Analytics(engine, settings) as an:  # nothing changed: nothing appended
        assert an.sync is not None and an.sync.actions["judgment"] == "unchanged"
        before = an.rows("SELECT count(*) AS n FROM judgment")[0]["n"]
    with engine.connect() as conn:
        last = conn.execute(text("SELECT max(id) FROM judge_run")).scalar_one()
        added = conn.execute(text("SELECT count(*) FROM judgment WHERE run_id = :r"), {"r": last}).scalar_one()
    _copy_run(engine, last, created_at=1e9)
    with Analytics(engine, settings) as an:
        assert an.sync is not None and an.sync.actions["judgment"] == f"appended {added}"
        assert an.rows("SELECT count(*) AS n FROM judgment")[0]["n"] == before + added
        assert _views(an) == _fresh_views(engine, settings)


def test_a_dropped_run_and_a_changed_item_state_are_never_stale(tmp_path: Path,
                                                                request: pytest.FixtureRequest) -> None:
    settings, engine = _store(tmp_path, "sqlite", request)
    with Analytics(engine, settings) as an:
        assert an.sync is not None
    with engine.connect() as conn:
        last = conn.execute(text("SELECT max(id) FROM judge_run")).scalar_one()
        first_run = conn.execute(text("SELECT min(id) FROM judge_run")).scalar_one()
    drop_run(engine, first_run)  # `eval drop`: the run's judgments deleted
    with engine.begin() as conn:  # an item leaves the selection
        conn.execute(text("UPDATE item SET state = 'rejected' WHERE id = (SELECT min(id) FROM item)"))
    with Analytics(engine, settings) as an:
        assert an.sync is not None and an.sync.actions["judgment"].startswith("reloaded")
        assert an.rows("SELECT count(*) AS n FROM judgment WHERE run_id = ?", [first_run])[0]["n"] == 0
        assert an.rows("SELECT state FROM item ORDER BY id LIMIT 1") == [{"state": "rejected"}]
        assert _views(an) == _fresh_views(engine, settings)

    # the latest run dropped and made again: SQLite reuses its ids (run and judgments), count and largest
    # id come out the same, only the verdicts differ
    drop_run(engine, last)
    again = _copy_run(engine, last - 1, created_at=2e9)
    assert again == last  # the id reused
    with engine.begin() as conn:
        conn.execute(text("UPDATE judgment SET verdict = CASE verdict WHEN 'A' THEN 'B' ELSE 'A' END "
                          "WHERE run_id = :r"), {"r": again})
    with Analytics(engine, settings) as an:
        assert an.sync is not None and an.sync.actions["judgment"].startswith("reloaded")
        assert _views(an) == _fresh_views(engine, settings)


def test_a_ledger_row_finished_after_the_copy_is_read_again(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    settings, engine = _store(tmp_path, "sqlite", request)
    with transaction(engine) as s:
        call = ModelCall(request_hash="late", role="G", provider="sim", model="late-judge", purpose="eval",
                         status="in_flight", estimated_usd=0.5)
        s.add(call)
        s.flush()
        call_id = call.id
    late = "SELECT status, usd, calls FROM call_groups WHERE model = 'late-judge'"
    with Analytics(engine, settings) as an:  # in its group of calls in flight
        assert an.rows(late) == [{"status": "in_flight", "usd": 0.0, "calls": 1}]
    with transaction(engine) as s:
        row = s.get(ModelCall, call_id)
        assert row is not None
        row.status, row.usd = "ok", 0.1 + 0.2  # moved by the store's triggers: exactly, to the last bit
    with Analytics(engine, settings) as an:
        assert an.sync is not None and an.sync.actions["call_groups"] == "whole"  # re-read: the store changed
        assert an.rows(late) == [{"status": "ok", "usd": 0.1 + 0.2, "calls": 1}]
        assert _views(an) == _fresh_views(engine, settings)


def test_a_busy_file_and_loose_types_fall_back(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """A second report while the first holds the file reads the store into memory; a value SQLite
    stored with another type than its column's goes to the Python loader, which names it."""
    settings, engine = _store(tmp_path, "sqlite", request)
    with Analytics(engine, settings) as first, Analytics(engine, settings) as second:
        assert first.file is not None and second.file is None and second.sync is not None  # memory, scanned
        assert _views(second) == _views(first)
    with engine.begin() as conn:
        conn.execute(text("UPDATE call_groups SET input_tokens = 'lots' "
                          "WHERE rowid = (SELECT min(rowid) FROM call_groups)"))
    with pytest.raises(AnalyticsError, match=r"call_groups\.input_tokens holds a value that is not int64"):
        Analytics(engine, settings, file=False)


def test_a_store_that_keeps_changing_during_the_copy_is_read_in_one_snapshot(
        tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """SQLite gives the scanner no snapshot across tables: a commit seen during the copy makes it copy
    again, and a store that never stops changing is read by the Python loader, in one snapshot."""
    import sqlite3

    from playlisteval.analytics import mirror

    settings, engine = _store(tmp_path, "sqlite", request)
    original = mirror.Mirror._sync_once
    attempts = []

    def busy(self: mirror.Mirror) -> mirror.SyncStats:
        stats = original(self)
        attempts.append(1)
        writer = sqlite3.connect(str(engine.url.database), isolation_level=None)
        writer.execute("UPDATE item SET phase1_attempts = phase1_attempts + 1")  # another process commits
        writer.close()
        return stats

    monkeypatch.setattr(mirror.Mirror, "_sync_once", busy)
    with Analytics(engine, settings) as an:
        assert len(attempts) == mirror.RETRIES and an.sync is None  # gave up on the scanner: Python loader
        assert _views(an) == _fresh_views(engine, settings)


def test_a_store_made_again_at_the_same_place_is_copied_afresh(tmp_path: Path,
                                                               request: pytest.FixtureRequest) -> None:
    """A store deleted and built again numbers its rows from 1 again: the file must not take the new
    rows past its watermark for the only ones that changed."""
    from playlisteval.store import forget_engines

    settings, engine = _store(tmp_path, "sqlite", request)
    with Analytics(engine, settings) as an:
        assert an.sync is not None
    engine.dispose()
    forget_engines()
    for suffix in ("", "-wal", "-shm"):
        (tmp_path / f"store.db{suffix}").unlink(missing_ok=True)
    engine = open_store(settings)
    analytics_fixtures.build(engine, judge_names={"alpha": "gamma"})  # other rows under the same ids
    with transaction(engine) as s:  # and one more ledger row, so that the count grows as appends do
        s.add(ModelCall(request_hash="more", role="G", provider="sim", model="judge", purpose="eval", status="ok"))
    with Analytics(engine, settings) as an:
        assert an.sync is not None
        assert an.sync.actions["judgment"].startswith("reloaded")
        assert an.rows("SELECT count(*) AS n FROM judge_run WHERE judge = 'alpha'") == [{"n": 0}]
        assert _views(an) == _fresh_views(engine, settings)


def test_sql_reads_every_table_in_memory_and_figures_keep_escaped_text(tmp_path: Path,
                                                                      request: pytest.FixtureRequest) -> None:
    from playlisteval.analytics.plots import grouped_bars

    settings, engine = _store(tmp_path, "sqlite", request)
    with Analytics(engine, settings, all_tables=True) as an:  # `playlisteval sql`: every table, no file
        assert an.sync is not None and an.file is None and "raw" in an.table("SELECT * FROM judgment").column_names
    assert not (tmp_path / FILE_NAME).exists()
    import base64

    uri = grouped_bars(["<b>judge</b>"], {"retrieved": [0.5]}, ylabel="%", title="t")
    svg = base64.b64decode(uri.split(",", 1)[1]).decode()
    assert "&lt;b&gt;judge&lt;/b&gt;" in svg and "<b>" not in svg  # drawn as SVG text, escaped
