"""Videos no query can reach (issue 44): indexed, but with no speech, captions or on-screen text, so every
vector of theirs is zero — `index` names them and `search` warns when the domain searched holds any."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from playlisteval.cli import main
from playlisteval.config import write_project
from tests.index_helpers import make_video, write_srt

ROME = "the roman legions marched along stone roads built by engineers across the empire"


def test_index_lists_and_search_warns_about_videos_with_nothing_to_embed(tmp_path: Path) -> None:
    write_project(tmp_path)
    talk = make_video(tmp_path / "media" / "History" / "talk.mp4", 35, rate=5)
    write_srt(talk.with_suffix(".srt"), [(3, 8, ROME)])
    make_video(tmp_path / "media" / "History" / "silent film.mp4", 35, audio=None, rate=7)
    make_video(tmp_path / "media" / "Art" / "captioned.mp4", 35, rate=9)
    write_srt(tmp_path / "media" / "Art" / "captioned.srt", [(3, 8, "oil paint dries slowly")])
    runner, env = CliRunner(), {"PLAYLISTEVAL_INDEX__OCR": "none"}
    for domain in ("History", "Art"):
        added = runner.invoke(main, ["--project", str(tmp_path), "add", domain, str(tmp_path / "media" / domain)],
                              env=env)
        assert added.exit_code == 0, added.output

    indexed = runner.invoke(main, ["--project", str(tmp_path), "index"], env=env)
    assert indexed.exit_code == 0, indexed.output
    assert "1 indexed video(s) have no vector" in indexed.output and "silent film.mp4" in indexed.output
    again = runner.invoke(main, ["--project", str(tmp_path), "index", "--json"], env=env)
    assert [Path(u["path"]).name for u in json.loads(again.output)["unreachable"]] == ["silent film.mp4"]

    history = runner.invoke(main, ["--project", str(tmp_path), "search", "roman roads", "--domain", "History",
                                   "--json"], env=env)
    assert history.exit_code == 0, history.output
    assert "warning: 1 indexed video(s) of domain 'History' have no vector" in history.stderr
    assert "silent film.mp4" in history.stderr
    # the answer is the other video (their zero vectors score 0 at best): the warning says what cannot be found
    hits = json.loads(history.stdout)
    assert Path(hits[0]["path"]).name == "talk.mp4"
    assert all(h["score"] == 0 for h in hits if Path(h["path"]).name == "silent film.mp4")
    art = runner.invoke(main, ["--project", str(tmp_path), "search", "paint", "--domain", "Art"], env=env)
    assert art.exit_code == 0 and "have no vector" not in art.output
