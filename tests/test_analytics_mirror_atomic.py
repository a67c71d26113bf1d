"""One sync, one DuckDB transaction (mirror.Mirror.sync): a copy that fails leaves the analytics file as it was,
the other tables' copy included."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from sqlalchemy import text

from playlisteval.analytics import Analytics
from playlisteval.analytics.runner import FILE_NAME
from playlisteval.store import transaction
from playlisteval.store.tables import ModelCall
from tests.test_analytics_arrow import _copy_run, _store


def test_a_copy_that_fails_rolls_back_the_whole_sync(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    settings, engine = _store(tmp_path, "sqlite", request)
    with Analytics(engine, settings) as an:
        assert an.sync is not None and an.sync.actions["judgment"] == "loaded"
        groups_before = an.rows("SELECT * FROM call_groups ORDER BY ALL")
    with engine.connect() as conn:
        last = conn.execute(text("SELECT max(id) FROM judge_run")).scalar_one()
        added = conn.execute(text("SELECT count(*) FROM judgment WHERE run_id = :r"), {"r": last}).scalar_one()
    _copy_run(engine, last, created_at=1e9)
    with transaction(engine) as s:  # and a ledger row: the groups' copy, made before the judgments', differs
        s.add(ModelCall(request_hash="new", role="G", provider="sim", model="later", purpose="eval", status="ok"))
    with engine.begin() as conn:  # a new judgment the scanner cannot read as the column's type
        conn.execute(text("UPDATE judgment SET a_is_better = 'lots' WHERE id = (SELECT max(id) FROM judgment)"))
    with Analytics(engine, settings) as an:  # the scanner's copy failed: the store read by the Python loader
        assert an.sync is None and an.file is None
    con = duckdb.connect(str(tmp_path / FILE_NAME))
    try:  # the file as it was: the ledger's groups copied before the failure were rolled back with it
        assert con.execute("SELECT * FROM call_groups ORDER BY ALL").fetchall() == [
            tuple(r.values()) for r in groups_before]
    finally:
        con.close()
    with engine.begin() as conn:
        conn.execute(text("UPDATE judgment SET a_is_better = 1 WHERE a_is_better = 'lots'"))
    with Analytics(engine, settings) as an:  # the judgments appended then were rolled back with the rest
        assert an.sync is not None and an.file is not None
        assert an.sync.actions["judgment"] == f"appended {added}"
        assert an.rows("SELECT calls FROM call_groups WHERE model = 'later'") == [{"calls": 1}]
