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


def test_unchanged_store_file_prints_the_board_before_duckdb_starts(root: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A SQLite store whose files are as they were: the board comes from leaderboard.kept.json, with
    neither the analytics file nor the store opened (analytics/board_file.py)."""
    from playlisteval.commands import analytics as commands

    # the first board recorded version 1 (a commit), and the WAL it wrote is folded into the file when the
    # last connection closes: the files differ from the stamps taken before, so the second one is kept
    first, first_json = _run(root), _run(root, "--json")
    assert (_run(root), _run(root, "--json")) == (first, first_json)
    assert (root / "leaderboard.kept.json").is_file()

    def opened(*_a: Any, **_k: Any) -> None:
        raise AssertionError("the store was opened for an unchanged leaderboard")

    monkeypatch.setattr(commands, "_open", opened)
    monkeypatch.setattr(commands, "_ensure_versions", opened)
    assert _run(root) == first and _run(root, "--json") == first_json
    monkeypatch.undo()
    _add_run(root, "judge-98")  # a commit: the files' stamps change, the board is computed again
    assert "judge-98" in _run(root)


def test_a_commit_while_the_board_is_computed_keeps_nothing_in_the_file(root: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from playlisteval.commands import analytics as commands

    label = commands._label_simulated

    def commit_meanwhile(settings: Any) -> None:
        con = sqlite3.connect(root / "playlisteval.db")
        con.execute("INSERT INTO kv (key, value) VALUES ('written meanwhile', 'x')")
        con.commit()
        con.close()
        label(settings)

    monkeypatch.setattr(commands, "_label_simulated", commit_meanwhile)
    _run(root)
    assert not (root / "leaderboard.kept.json").exists()
    monkeypatch.undo()
    _run(root)
    _run(root)
    assert (root / "leaderboard.kept.json").is_file()
