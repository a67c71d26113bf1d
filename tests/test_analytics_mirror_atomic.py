"""One sync, one DuckDB transaction (mirror.Mirror.sync): a ledger copy that fails leaves the analytics file
as it was, the other tables' copy included."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text

from playlisteval.analytics import Analytics, AnalyticsError
from tests.test_analytics_arrow import _copy_run, _store


def test_a_ledger_copy_that_fails_rolls_back_the_whole_sync(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    settings, engine = _store(tmp_path, "sqlite", request)
    with Analytics(engine, settings) as an:
        assert an.sync is not None and an.sync.actions["model_call"] == "loaded"
    with engine.connect() as conn:
        last = conn.execute(text("SELECT max(id) FROM judge_run")).scalar_one()
        added = conn.execute(text("SELECT count(*) FROM judgment WHERE run_id = :r"), {"r": last}).scalar_one()
    _copy_run(engine, last, created_at=1e9)
    with engine.begin() as conn:  # a new ledger row the scanner cannot read as the column's type
        columns = [r[1] for r in conn.execute(text("PRAGMA table_info(model_call)")) if r[1] != "id"]
        picked = ", ".join("'lots'" if c == "input_tokens" else c for c in columns)
        conn.execute(text(f"INSERT INTO model_call ({', '.join(columns)}) SELECT {picked} FROM model_call "
                          "WHERE id = (SELECT min(id) FROM model_call)"))
    with pytest.raises(AnalyticsError, match="input_tokens"):  # the scanner's copy failed; the Python loader names it
        Analytics(engine, settings)
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM model_call WHERE input_tokens = 'lots'"))
    with Analytics(engine, settings) as an:  # the judgments appended then were rolled back with the ledger
        assert an.sync is not None and an.file is not None
        assert an.sync.actions["judgment"] == f"appended {added}"
        assert an.sync.actions["model_call"] == "unchanged"
