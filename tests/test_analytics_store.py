"""The loader: the same view rows from SQLite and PostgreSQL, new columns picked up, no write lock held."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import text

from playlisteval.analytics import Analytics, AnalyticsError, load_tables
from playlisteval.analytics.loader import _snapshot
from playlisteval.store import open_store
from tests import analytics_fixtures
from tests.helpers import project


def all_views(tmp_path: Path, **overrides: object) -> dict[str, list[tuple[object, ...]]]:
    settings = project(tmp_path, **overrides)
    engine = open_store(settings)
    analytics_fixtures.build(engine)
    out = {}
    with Analytics(engine, settings) as an:
        for name in an.view_names():
            table = an.table(f"SELECT * FROM {name}")
            rows = [tuple(round(v, 9) if isinstance(v, float) else v for v in row.values())
                    for row in table.to_pylist()]
            # ids differ between stores only if sequences do; sort for a stable comparison
            out[name] = sorted(rows, key=repr)
    return out


def test_postgresql_gives_the_same_rows_as_sqlite(tmp_path: Path, pg_url: str) -> None:
    on_sqlite = all_views(tmp_path / "lite")
    on_pg = all_views(tmp_path / "pg", store__url=pg_url)
    assert on_pg.keys() == on_sqlite.keys()
    for name in on_sqlite:
        assert on_pg[name] == on_sqlite[name], name


def test_types_blobs_and_columns_added_later(tmp_path: Path) -> None:
    settings = project(tmp_path)
    engine = open_store(settings)
    analytics_fixtures.build(engine)
    with engine.begin() as conn:  # what a later migration (add_column) does
        conn.execute(text("ALTER TABLE judge_run ADD COLUMN note TEXT NOT NULL DEFAULT 'n'"))
    tables = load_tables(engine)
    assert "vector" not in tables["segment"].column_names  # blobs stay behind
    assert "response_cache" not in tables
    assert str(tables["judgment"].schema.field("a_is_better").type) == "bool"
    assert str(tables["judge_run"].schema.field("settings").type) == "string"  # JSON as JSON text
    with Analytics(engine, settings, all_tables=True) as an:
        assert an.rows("SELECT DISTINCT note FROM judge_run") == [{"note": "n"}]
        # every run records its options; the one sweep changes the thinking level
        sweep = an.rows("SELECT settings->>'thinking' AS t FROM judge_run WHERE settings->>'thinking' <> ''")
        assert sweep == [{"t": "high"}]


def test_loading_holds_no_write_lock(tmp_path: Path) -> None:
    settings = project(tmp_path)
    engine = open_store(settings)
    analytics_fixtures.build(engine)
    database = str(engine.url.database)
    with _snapshot(engine) as cursor:
        cursor.execute("SELECT count(*) FROM judgment")
        before = cursor.fetchone()[0]
        writer = sqlite3.connect(database, timeout=0.5, isolation_level=None)
        writer.execute("BEGIN IMMEDIATE")  # would time out if the reader held a write lock
        writer.execute("DELETE FROM judgment")
        writer.execute("COMMIT")
        writer.close()
        cursor.execute("SELECT count(*) FROM judgment")
        assert cursor.fetchone()[0] == before  # and the reader keeps its snapshot


def test_sqlite_loose_typing_is_converted_or_named(tmp_path: Path) -> None:
    """SQLite stores whatever it is given; the fast path falls back column by column, and a value
    that cannot be read as its column's type is an error naming table and column."""
    settings = project(tmp_path)
    engine = open_store(settings)
    analytics_fixtures.build(engine)
    db = sqlite3.connect(str(engine.url.database), isolation_level=None)
    db.execute("UPDATE model_call SET input_tokens = 12.0, cache_hit = 2 WHERE id = 1")
    tables = load_tables(engine, ["model_call"])
    first = tables["model_call"].to_pylist()[0]
    assert (first["input_tokens"], first["cache_hit"]) == (12, True)
    db.execute("UPDATE model_call SET input_tokens = 'lots' WHERE id = 1")
    db.close()
    with pytest.raises(AnalyticsError, match=r"model_call\.input_tokens holds a value that is not int64"):
        load_tables(engine, ["model_call"])
