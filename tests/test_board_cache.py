"""`leaderboard` on an unchanged store prints the board it printed last (issue 26): nothing is computed
again, the text is the same, and a new judge run makes the next leaderboard compute and show it."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from bench.report_store import build_store
from playlisteval.analytics import rates
from playlisteval.cli import main


def _run(root: Path, *args: str) -> str:
    result = CliRunner().invoke(main, ["--project", str(root), "leaderboard", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def _add_run(root: Path, judge: str) -> None:
    """A second judge's main run (run 1's options) that got every pair right."""
    con = sqlite3.connect(root / "playlisteval.db")
    con.row_factory = sqlite3.Row
    run = dict(con.execute("SELECT * FROM judge_run WHERE id = 1").fetchone())
    run.update(id=2, judge=judge)
    con.execute(f"INSERT INTO judge_run ({', '.join(run)}) VALUES ({', '.join('?' * len(run))})", list(run.values()))
    rows = [dict(r) for r in con.execute("SELECT * FROM judgment WHERE run_id = 1")]
    for r in rows:
        r.update(id=None, run_id=2, score=1.0, verdict="A" if r["a_is_better"] else "B")
        con.execute(f"INSERT INTO judgment ({', '.join(r)}) VALUES ({', '.join('?' * len(r))})", list(r.values()))
    con.commit()
    con.close()


@pytest.fixture()
def root(tmp_path: Path) -> Path:
    return build_store(tmp_path / "p", 20, 1, 50, seed=5)


def test_unchanged_store_prints_the_kept_board(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = _run(root)
    assert "judge-00" in first and "Leaderboard" in first
    first_json = _run(root, "--json")

    def computed(*_a: Any, **_k: Any) -> None:
        raise AssertionError("the leaderboard was computed again on an unchanged store")

    monkeypatch.setattr(rates, "leaderboard", computed)
    assert _run(root) == first
    assert _run(root, "--json") == first_json
    assert json.loads(first_json)["rows"][0]["judge"] == "judge-00"


def test_a_new_run_is_computed_and_shown(root: Path) -> None:
    before = _run(root)
    before_json = json.loads(_run(root, "--json"))
    _add_run(root, "judge-99")
    after = _run(root)
    assert "judge-99" not in before and "judge-99" in after
    rows = {r["judge"]: r for r in json.loads(_run(root, "--json"))["rows"]}
    assert set(rows) == {"judge-00", "judge-99"} and len(before_json["rows"]) == 1
    assert rows["judge-99"]["retrieved"] == 1.0
