"""A sealed `playlisteval sql` (issue 25, deliverable 3): a query reads the store's tables and the views,
nothing else — every table function DuckDB and its loaded extensions offer is tried, and refused.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from playlisteval.analytics import Analytics, sealed
from playlisteval.analytics.loader import AnalyticsError
from playlisteval.cli import main
from playlisteval.store import forget_engines, open_store
from playlisteval.store.engine import transaction
from playlisteval.store.tables import ResponseCache
from tests.helpers import env_for, project, seeded_store

#: the functions that reach a file or another database, named here too: the enumeration below must hold them
REACHING = ("sqlite_scan", "sqlite_attach", "read_csv", "read_csv_auto", "read_parquet", "parquet_scan",
            "read_json", "read_json_auto", "read_ndjson", "read_text", "read_blob", "glob", "query", "query_table",
            "parquet_metadata", "sniff_csv", "json_execute_serialized_sql", "duckdb_settings", "duckdb_secrets")
POSTGRES = ("postgres_scan", "postgres_attach", "postgres_query", "postgres_execute", "postgres_scan_pushdown")


@pytest.fixture(params=["sqlite", "postgresql"])
def analytics(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Analytics, str, str]]:
    url = {"store__url": request.getfixturevalue("pg_url")} if request.param == "postgresql" else {}
    settings = project(tmp_path, **url)
    seeded_store(settings, 1)
    with transaction(open_store(settings)) as s:  # what the scanners were used to reach: the hidden cache
        s.add(ResponseCache(request_hash="h", provider="p", model="m", response={"secret": "cached reply"}))
    forget_engines()
    an = Analytics(open_store(settings), settings, all_tables=True)
    an.ensure_views()
    target = settings.store_url.removeprefix("sqlite:///") if request.param == "sqlite" else ""
    try:
        yield an, request.param, target
    finally:
        an.close()


def call_of(name: str, target: str) -> str:
    args = {"sqlite_scan": f"'{target}', 'response_cache'", "sqlite_attach": f"'{target}'",
            "postgres_scan": "'dbname=postgres host=127.0.0.1', 'public', 'pg_class'",
            "postgres_query": "'dbname=postgres host=127.0.0.1', 'SELECT 1'",
            "range": "3", "generate_series": "1, 3", "unnest": "[1, 2]", "query": "'SELECT 1'"}
    return f"SELECT * FROM {name}({args.get(name, repr(target or 'x'))})"


def test_every_table_function_but_the_row_makers_is_refused(analytics: tuple[Analytics, str, str]) -> None:
    an, store, target = analytics
    names = sealed.table_functions(an.con)
    assert set(REACHING) - {"json_execute_serialized_sql"} <= names | {"sqlite_scan", "sqlite_attach"}
    # the store's own scanner is loaded in this connection: the seal, not a missing extension, stops it
    assert ("sqlite_scan" in names) if store == "sqlite" else ("postgres_scan" in names)
    tried = sorted(names | set(REACHING) | set(POSTGRES))
    for name in tried:
        query = call_of(name, target)
        if name in sealed.ROW_MAKERS:
            assert an.user_query(query).num_rows > 0, name
            continue
        with pytest.raises(AnalyticsError, match=rf"refused: .*{name}\(\)"):
            an.user_query(query)
        with pytest.raises(AnalyticsError, match="refused"):  # hidden in a subquery, a CTE, a join
            an.user_query(f"WITH c AS ({query}) SELECT (SELECT count(*) FROM c) FROM item JOIN c ON true")
    assert len(tried) > 40, tried


def test_the_raw_connection_could_have_read_the_cache(analytics: tuple[Analytics, str, str]) -> None:
    """What the seal stops is real: the same connection, asked directly, reads the response cache."""
    an, store, target = analytics
    if store != "sqlite":
        pytest.skip("the SQLite scanner reads a file by name")
    assert an.con.execute(f"SELECT count(*) FROM sqlite_scan('{target}', 'response_cache')").fetchone() == (1,)
    with pytest.raises(AnalyticsError, match="refused: table function sqlite_scan"):
        an.user_query(f"SELECT count(*) FROM sqlite_scan('{target}', 'response_cache')")


@pytest.mark.parametrize(("query", "refused"), [
    ("SELECT getenv('OPENAI_API_KEY')", "function getenv()"),
    ("SELECT current_setting('extension_directory')", "function current_setting()"),
    ("SELECT * FROM 'playlisteval.toml'", "table 'playlisteval.toml'"),
    ("SELECT * FROM duckdb_settings", "table 'duckdb_settings'"),
    ("SELECT * FROM information_schema.tables", "table information_schema.tables"),
    ("SELECT * FROM sqlite_master", "table 'sqlite_master'"),
    ("SELECT * FROM store.main.item", "table store.main.item"),
    ("SELECT * FROM response_cache", "table 'response_cache'"),  # left out of the copy: not readable
    ("SELECT 1; SELECT 2", "exactly one query"),
    ("ATTACH 'x.db' AS x", "only read-only SELECT"),
    ("COPY item TO 'x.csv'", "only read-only SELECT"),
    ("DESCRIBE item", "refused: SHOW / DESCRIBE"),
    ("SUMMARIZE item", "refused: SHOW / DESCRIBE"),
])
def test_names_and_functions_outside_the_list_are_refused(analytics: tuple[Analytics, str, str], query: str,
                                                          refused: str) -> None:
    an, _store, _target = analytics
    with pytest.raises(AnalyticsError, match=refused.replace("(", r"\(").replace(")", r"\)")):
        an.user_query(query)


def test_the_store_and_the_views_still_read(analytics: tuple[Analytics, str, str]) -> None:
    an, _store, _target = analytics
    assert an.user_query("SELECT count(*) AS n FROM seed").to_pylist() == [{"n": 1}]
    assert an.user_query("WITH s AS (SELECT id FROM seed) SELECT count(*) AS n FROM s, range(2)").num_rows == 1
    assert an.user_query("SELECT * FROM leaderboard UNION ALL SELECT * FROM leaderboard").num_rows == 0
    assert an.user_query("FROM item_facts SELECT count(*)").num_rows == 1
    assert an.user_query("SELECT lower('A'), list_sum([1, 2]), unnest([1, 2]) AS u").num_rows == 2


def test_the_command_names_the_refusal(tmp_path: Path) -> None:
    settings = project(tmp_path)
    seeded_store(settings, 1)
    forget_engines()
    target = settings.store_url.removeprefix("sqlite:///")
    result = CliRunner().invoke(main, ["--project", str(tmp_path), "sql",
                                       f"SELECT * FROM sqlite_scan('{target}', 'model_call')"], env=env_for())
    assert result.exit_code == 1 and "refused: table function sqlite_scan()" in result.output, result.output
