"""Issue 41 item 2: `check`'s result (videos missing or changed, the pairs affected) and its date appear in
the report and in the dataset card `export` writes; a benchmark never checked says "not checked"; a later
check replaces the earlier one."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from playlisteval.store import open_store
from tests.judged_project import cli, copy_of, make_selected


@pytest.fixture(scope="module")
def selected(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_selected(tmp_path_factory.mktemp("checked"))


def _card(settings: Any, out: Path) -> str:
    cli(settings, "export", str(out), "--json")
    card = (out / "README.md").read_text(encoding="utf-8")
    return card.split("## Videos checked", 1)[1].split("##", 1)[0]


def _report_row(settings: Any, out: Path) -> str:
    cli(settings, "report", str(out))
    page = out.read_text(encoding="utf-8")
    section = page.split('<section id="check">', 1)[1]
    assert "Videos checked" in section
    return " ".join(re.sub(r"<[^>]+>", " ", section.split("</table>", 1)[0]).split())


def test_not_checked_then_the_problems_then_a_clean_check(selected: Path, tmp_path: Path) -> None:
    settings = copy_of(selected, tmp_path / "p")
    assert "Not checked" in _card(settings, tmp_path / "e0")
    assert "playlistbench not checked" in _report_row(settings, tmp_path / "r0.html")

    # the seeded collection's video files were never written: every one is missing
    got = json.loads(cli(settings, "check", "--json", code=3).output.strip().splitlines()[-1])
    assert got["missing"] == got["videos"] > 0 and got["affected_pairs"] and got["checked_at"] > 0
    card = _card(settings, tmp_path / "e1")
    assert f"0 of {got['videos']} video(s) as indexed, {got['missing']} missing" in card
    assert f"{len(got['affected_pairs'])} pair(s) affected" in card and "PROBLEMS" in card
    assert re.search(r"Checked \d{4}-\d\d-\d\d \d\d:\d\d UTC", card)
    assert "/" + "v0_0.mp4" not in card and str(tmp_path) not in card  # a published card names no path
    row = _report_row(settings, tmp_path / "r1.html")
    assert f"{got['videos']} 0 {got['missing']} 0 0 {len(got['affected_pairs'])} (pairs" in row

    # the files put back as they were indexed: the next check replaces the earlier result
    engine = open_store(settings)
    with engine.begin() as c:
        videos = c.execute(text("SELECT id, path FROM video")).all()
        for video_id, stored in videos:
            path = settings.root / stored  # stored relative to the project when inside it (issue 41)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(f"video {video_id}".encode())
            c.execute(text("UPDATE video SET sha256 = :h WHERE id = :i"),
                      {"h": hashlib.sha256(f"video {video_id}".encode()).hexdigest(), "i": video_id})
    got = json.loads(cli(settings, "check", "--json").output.strip().splitlines()[-1])
    assert got["ok"] == got["videos"]
    card = _card(settings, tmp_path / "e2")
    assert "every video as indexed" in card and "0 pair(s) affected" in card and "PROBLEMS" not in card
    assert f"{got['videos']} {got['videos']} 0 0 0 0" in _report_row(settings, tmp_path / "r2.html")
