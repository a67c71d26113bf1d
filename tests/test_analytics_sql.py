"""`playlisteval sql`: a user's query over the same views, read-only, in three output formats."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from playlisteval.analytics import Analytics, AnalyticsError
from playlisteval.cli import main
from playlisteval.store import open_store
from playlisteval.store.tables import Judgment
from tests import analytics_fixtures
from tests.helpers import project


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    settings = project(tmp_path)
    analytics_fixtures.build(open_store(settings))
    return tmp_path


def run(proj: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["--project", str(proj), "sql", *args])
    return result.exit_code, result.output


def test_select_over_views_in_each_format(proj: Path) -> None:
    query = "SELECT judge, retrieved, uniform FROM leaderboard WHERE domain = 'All' ORDER BY judge"
    code, out = run(proj, query, "--format", "json")
    assert code == 0, out
    rows = [json.loads(line) for line in out.splitlines()]
    assert rows == [{"judge": "alpha", "retrieved": 0.625, "uniform": 0.5},
                    {"judge": "beta", "retrieved": 1.0, "uniform": None}]
    code, out = run(proj, query, "--format", "csv")
    assert list(csv.reader(io.StringIO(out)))[:2] == [["judge", "retrieved", "uniform"], ["alpha", "0.625", "0.5"]]
    code, out = run(proj, query)
    assert code == 0 and "alpha" in out and "2 row(s)" in out


def test_every_table_is_there_for_the_user(proj: Path) -> None:
    code, out = run(proj, "SELECT count(*) AS n FROM chunk", "--format", "json")
    assert code == 0 and json.loads(out) == {"n": 0}


@pytest.mark.parametrize("query, message", [
    ("DELETE FROM judgment", "only read-only SELECT"),
    ("CREATE TABLE t AS SELECT 1", "only read-only SELECT"),
    ("SELECT 1; SELECT 2", "exactly one query"),
    ("COPY (SELECT 1) TO 'x.csv'", "only read-only SELECT"),
    ("SELECT * FROM read_csv('/etc/hostname')", "refused: table function read_csv()"),  # sealed (issue 25)
    ("SET lock_configuration = false", "only read-only SELECT"),
    ("SELECT * FROM no_such_view", "no_such_view"),
])
def test_anything_but_one_select_is_refused(proj: Path, query: str, message: str) -> None:
    code, out = run(proj, query)
    assert code == 1
    assert message in " ".join(out.split())


def test_the_store_is_untouched(proj: Path) -> None:
    run(proj, "DELETE FROM judgment")
    settings = project(proj)
    engine = open_store(settings)
    with Analytics(engine, settings) as an:
        with pytest.raises(AnalyticsError):
            an.user_query("DROP VIEW leaderboard")
        assert an.rows("SELECT count(*) AS n FROM leaderboard")[0]["n"] == 6
    from sqlmodel import Session, select

    with Session(engine) as s:
        assert len(s.exec(select(Judgment)).all()) == 26


def test_list_describes_the_views(proj: Path) -> None:
    code, out = run(proj, "--list")
    assert code == 0 and "position_bias" in out and "cost_by_domain" in out
    code, out = run(proj)
    assert code == 2 and "QUERY" in out


def test_a_wide_result_piped_at_80_columns_is_records_not_ellipses(proj: Path) -> None:
    """Issue 44: `sql "SELECT * FROM leaderboard"` piped at 80 columns printed rows of "…"."""
    from playlisteval.commands import support

    fixed = support.console._width  # None: the console follows COLUMNS; restored as it was, not as a number
    support.console.width = 80  # CliRunner's output is a pipe; the width a piped terminal gets
    try:
        code, out = run(proj, "SELECT * FROM leaderboard WHERE domain = 'All' ORDER BY judge")
    finally:
        support.console._width = fixed
    assert code == 0, out
    assert "one record each" in out and "-[ row 1 ]" in out
    assert "judge" in out and "alpha" in out and "retrieved" in out
    assert not any(set(line.strip()) <= {"…", "│", "┃", " ", "┏", "━", "┳", "┓"} and "…" in line
                   for line in out.splitlines())
