"""Issue 44, items 3 and 6: `add` takes files and manifests as they come.

Real files on disk (short ffmpeg videos, file names made of raw bytes) through the real command
(click's CliRunner, exceptions not caught: a traceback fails the test).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from sqlalchemy import text
from sqlalchemy.engine import Engine

from playlisteval.cli import main
from playlisteval.commands import exitcodes
from playlisteval.index.captions import find_sidecar
from playlisteval.store import open_store
from tests.helpers import project
from tests.index_helpers import make_video, write_srt

# macOS refuses file names that are not UTF-8; Linux (where collections are served from) takes any bytes
bytes_names = pytest.mark.skipif(sys.platform == "darwin", reason="the file system needs UTF-8 names")


def _add(root: Path, *args: str) -> Result:
    return CliRunner().invoke(main, ["--project", str(root), "add", *args], catch_exceptions=False)


def _said(result: Result) -> str:
    return " ".join(result.output.split())  # the console wraps long lines


def _videos(engine: Engine) -> list[tuple[str, str, str | None]]:
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(text("SELECT title, status, captions_path FROM video ORDER BY id"))]


def _rename(src: Path, name: bytes) -> bytes:
    """Move ``src`` to a sibling named by raw bytes; the new path, as bytes."""
    dst = os.fsencode(src.parent) + b"/" + name
    os.rename(os.fsencode(src), dst)
    return dst


@bytes_names
def test_names_that_are_not_utf8_are_skipped_escaped_and_the_rest_added(tmp_path: Path) -> None:
    project(tmp_path)
    show = tmp_path / "media" / "Show"
    good = make_video(show / "good.mp4", 1)
    for name in (b"bad\xff\xfe.mp4", b"caf\xe9.mp4"):  # undecodable bytes; a Latin-1 "café"
        shutil.copyfile(good, show / "copy.mp4")
        _rename(show / "copy.mp4", name)
    write_srt(show / "x.srt", [(0, 1, "hi")])
    _rename(show / "x.srt", b"good.\xe9.srt")  # a caption file of good.mp4 whose name the store cannot keep
    (show / "Sub").mkdir()
    shutil.copyfile(good, show / "Sub" / "inner.mp4")
    _rename(show / "Sub", b"S\xe9ries")  # a playlist folder

    result = _add(tmp_path, "Education", str(show.parent), "--json")
    assert result.exit_code == exitcodes.DONE, result.output
    report = json.loads(result.output)
    assert report["added"] == [str(good)]
    skipped = {s["path"]: s["reason"] for s in report["skipped"]}
    assert set(skipped) == {f"{show}/bad\\xff\\xfe.mp4", f"{show}/caf\\xe9.mp4", f"{show}/S\\xe9ries"}
    assert all("not valid UTF-8" in r and "rename it" in r for r in skipped.values())
    engine = open_store(project(tmp_path))
    assert _videos(engine) == [("good", "new", None)]  # the caption file with a bytes name is not used
    assert find_sidecar(good) is None  # nor at `index`, nor when a changed file is re-probed

    plain = _add(tmp_path, "Education", str(show))  # the text report: names escaped, nothing raw
    said = _said(plain)
    assert plain.exit_code == exitcodes.DONE and "1 already present, 3 skipped" in said
    joined = "".join(plain.output.split())  # a long path is folded mid-word at 80 columns
    assert "bad\\xff\\xfe.mp4:itsnameisnotvalidUTF-8" in joined and "\udcff" not in plain.output
    assert _videos(engine) == [("good", "new", None)]


@bytes_names
def test_a_folder_given_by_a_name_that_is_not_utf8_is_a_note_not_a_traceback(tmp_path: Path) -> None:
    project(tmp_path)
    make_video(tmp_path / "Show" / "a.mp4", 1)
    folder = os.fsdecode(_rename(tmp_path / "Show", b"Sh\xe9ow"))
    result = _add(tmp_path, "Education", folder)
    said = _said(result)
    assert result.exit_code == exitcodes.INCOMPLETE, result.output
    assert "Sh\\xe9ow:itsnameisnotvalidUTF-8" in "".join(result.output.split()) and "no video in" in said


def _media(tmp_path: Path) -> None:
    for name in ("a", "b"):
        make_video(tmp_path / "m" / f"{name}.mp4", 1, size="160x120" if name == "a" else "176x144")


def test_a_manifest_names_every_bad_row_at_once_and_adds_nothing(tmp_path: Path) -> None:
    project(tmp_path)
    _media(tmp_path)
    manifest = tmp_path / "list.csv"
    manifest.write_text(
        "domain,playlist,title,path,position\n"
        "History,Rome,Good,m/a.mp4,\n"  # 1: fine
        "History,,No playlist,m/b.mp4,\n"  # 2
        'History,Rome,"Bell\x07here",m/b.mp4,\n'  # 3: a control character
        f"History,Rome,{'x' * 100_000},m/b.mp4,\n"  # 4: a pasted novel
        "History,Rome,Other title,m/a.mp4,\n"  # 5: entry 1's file, another title
        "History,Rome,Lost,m/nothere.mp4,\n"  # 6: no such file
        "History,Rome,a, comma,m/b.mp4,\n"  # 7: an unquoted comma
        "History,Rome,Pos,m/b.mp4,first\n"  # 8
        'History,Rome,"two\nlines",m/b.mp4,\n'  # 9: a newline inside quotes
        "Edu\\cation,Rome,Sep,m/b.mp4,\n"  # 10: a path separator in the domain
        "History,Rome,Fine too,m/b.mp4,\n",  # 11: fine
        encoding="utf-8",
    )
    result = _add(tmp_path, "--manifest", str(manifest))
    said = _said(result)
    assert result.exit_code == exitcodes.ERROR, result.output
    assert "9 of 11 entries refused" in said and "nothing was added" in said
    for expected in ("entry 2: missing playlist", "entry 3: title contains a control character (U+0007)",
                     "entry 4: title is 100,000 characters long (at most 1,000)",
                     "entry 5: lists the same file as entry 1", "with another title",
                     "entry 6: no such file", "entry 7: has 6 fields, the header names 5",
                     "entry 8: position 'first' is not a whole number",
                     "entry 9: title contains a control character (U+000A)",
                     "entry 10: domain name 'Edu\\\\cation' contains a path separator"):
        assert expected in said, expected
    assert "entry 1:" not in said and "entry 11:" not in said
    assert "x" * 1_001 not in result.output  # the long title is measured, not echoed
    engine = open_store(project(tmp_path))
    with engine.connect() as conn:
        assert conn.execute(text("SELECT COUNT(*) FROM domain")).scalar() == 0
        assert conn.execute(text("SELECT COUNT(*) FROM video")).scalar() == 0


def test_a_repeated_row_is_merged_and_said(tmp_path: Path) -> None:
    project(tmp_path)
    _media(tmp_path)
    manifest = tmp_path / "list.csv"
    manifest.write_text("domain,playlist,title,path\nHistory,Rome,A,m/a.mp4\nHistory,Rome,B,m/b.mp4\n"
                        f"History,Rome,A,{tmp_path / 'm' / 'a.mp4'}\n")  # entry 1 again, by its absolute path
    result = _add(tmp_path, "--manifest", str(manifest), "--json")
    assert result.exit_code == exitcodes.DONE, result.output
    report = json.loads(result.output)
    assert len(report["added"]) == 2
    assert report["merged"] == [f"entry 3 repeats entry 1 (History/Rome: {tmp_path / 'm' / 'a.mp4'}); merged into it"]
    plain = _add(tmp_path, "--manifest", str(manifest))
    assert "repeated row entry 3 repeats entry 1" in _said(plain)
    assert [v[0] for v in _videos(open_store(project(tmp_path)))] == ["A", "B"]


def test_a_manifest_that_is_not_utf8_or_has_a_control_character_in_json_is_refused(tmp_path: Path) -> None:
    project(tmp_path)
    _media(tmp_path)
    latin = tmp_path / "latin.csv"
    latin.write_bytes(b"domain,playlist,title,path\nHistory,Rome,Caf\xe9,m/a.mp4\n")
    result = _add(tmp_path, "--manifest", str(latin))
    said = _said(result)
    assert result.exit_code == exitcodes.ERROR and "not UTF-8 (line 2" in said and "save it as UTF-8" in said
    js = tmp_path / "list.json"
    js.write_text(json.dumps([{"domain": "History", "playlist": "Rome", "title": "ok", "path": "m/a.mp4"},
                              {"domain": "History", "playlist": "Rome", "title": "\x1b[31mred", "path": "m/b.mp4"}]))
    result = _add(tmp_path, "--manifest", str(js))
    said = _said(result)
    assert result.exit_code == exitcodes.ERROR and "entry 2: title contains a control character (U+001B)" in said
    assert _videos(open_store(project(tmp_path))) == []
