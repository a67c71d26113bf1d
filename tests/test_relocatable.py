"""Relocatable projects (issue 41, deliverable 3): a copied or moved project reads its own media.

Media inside the project are stored relative to it, media elsewhere under a named root that one command
re-points; a store from before (absolute paths) is migrated. Each project is driven through the real CLI in
a subprocess, as a user would after `cp -a`.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import urllib.request
from functools import lru_cache
from http.cookiejar import CookieJar
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import text
from sqlmodel import select

from playlisteval.cli import main
from playlisteval.errors import ConfigError
from playlisteval.store import forget_engines, open_store, transaction
from playlisteval.store.media_paths import MediaRoots, check_name
from playlisteval.store.tables import Playlist, Video
from tests import analytics_fixtures
from tests.helpers import project
from tests.index_helpers import make_video

REPO = Path(__file__).resolve().parents[1]


@lru_cache(maxsize=2)
def _clip(seconds: float = 2.0) -> bytes:
    """A tiny real H.264 video (made once per length): its bytes are written wherever a test needs one."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        return make_video(Path(tmp) / "clip.mp4", seconds, audio=None).read_bytes()


def _run(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`playlisteval --project ROOT ARGS…` in its own process (nothing of this test's process reaches it)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
           "COLUMNS": "500"}  # messages on one line
    return subprocess.run([sys.executable, "-m", "playlisteval.cli", "--project", str(root), *args],
                          env=env, capture_output=True, text=True, timeout=300)


def _cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The same command in this process (quicker; each project is its own store), its output on one line."""
    result = CliRunner().invoke(main, ["--project", str(root), *args])
    return subprocess.CompletedProcess(args, result.exit_code, " ".join(result.stdout.split()) if not
                                       result.stdout.lstrip().startswith(("{", "[")) else result.stdout,
                                       " ".join(result.stderr.split()))


def _stored(root: Path) -> dict[int, str]:
    """video id → path as the store holds it (read with sqlite3: no column type, no resolving)."""
    with sqlite3.connect(root / "playlisteval.db") as db:
        return {int(i): str(p) for i, p in db.execute("SELECT id, path FROM video WHERE status = 'indexed'")}


def _project_with_media(root: Path, folder: Path) -> dict[int, Path]:
    """The analytics fixture's benchmark (bench-1) with a real video file in ``folder`` for each indexed
    video, written through the ORM as a file path: video id → file."""
    settings = project(root)
    engine = open_store(settings)
    analytics_fixtures.build(engine)
    files: dict[int, Path] = {}
    with transaction(engine) as s:
        for video in s.exec(select(Video).where(Video.status == "indexed")).all():
            path = folder / f"{video.id}.mp4"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(_clip())
            video.path, video.sha256, video.duration, video.codec = str(path), _sha(path), 2.0, "h264"
            s.add(video)
            files[int(video.id or 0)] = path
    forget_engines()
    return files


def _sha(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def _check(root: Path, *, apart: bool = True) -> tuple[int, dict[str, Any]]:
    done = (_run if apart else _cli)(root, "check", "--benchmark", "bench-1", "--json")
    return done.returncode, json.loads(done.stdout)


def _frame(root: Path, video_id: int) -> bytes:
    """A frame of ``video_id`` as `playlisteval view` serves it (a server process of its own)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    server = subprocess.Popen([sys.executable, "-m", "playlisteval.cli", "--project", str(root), "view", "--port", "0",
                               "--json"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              start_new_session=True)
    try:
        assert server.stdout is not None
        got = json.loads(server.stdout.readline())
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(CookieJar()))
        opener.open(got["link"], timeout=60).read()
        response = opener.open(f"{got['url']}frame/{video_id}/1.000", timeout=60)
        assert response.status == 200 and response.headers["content-type"] == "image/jpeg"
        return bytes(response.read())
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_a_copy_of_a_project_checks_and_serves_its_own_files(tmp_path: Path) -> None:
    original = tmp_path / "original"
    files = _project_with_media(original, original / "media" / "videos")
    assert set(_stored(original).values()) == {f"media/videos/{i}.mp4" for i in files}  # relative to the project

    copy = tmp_path / "elsewhere" / "copy"
    shutil.copytree(original, copy, symlinks=True)  # `cp -a`
    moved = tmp_path / "original-moved"
    original.rename(moved)  # the original's files are gone from where they were
    code, got = _check(copy)
    assert code == 0 and got["ok"] == got["videos"] == len(files) and got["problems"] == [], got
    assert _frame(copy, min(files))[:2] == b"\xff\xd8"  # decoded from the copy's file: the original is gone

    changed = copy / "media" / "videos" / f"{min(files)}.mp4"
    changed.write_bytes(b"re-encoded elsewhere")
    code, got = _check(copy)
    assert code == 3 and got["changed"] == 1, got
    assert [p["path"] for p in got["problems"]] == [str(changed)]  # the copy's file is the one read

    moved.rename(original)
    code, got = _check(original)  # the original was never touched by the copy
    assert code == 0 and got["problems"] == [], got


def test_an_old_store_with_absolute_paths_is_migrated_to_relative_ones(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    files = _project_with_media(root, root / "media")
    outside = tmp_path / "shared" / "far.mp4"
    outside.parent.mkdir()
    outside.write_bytes(_clip())
    with sqlite3.connect(root / "playlisteval.db") as db:  # as a store written before issue 41 holds them
        for video_id, path in files.items():
            db.execute("UPDATE video SET path = ?, captions_path = ? WHERE id = ?",
                       (str(path), str(path.with_suffix(".srt")), video_id))
        first = min(files)
        db.execute("UPDATE video SET path = ? WHERE id = ?", (str(outside), first))
        db.execute("UPDATE playlist SET source = ?", (str(root / "media"),))
        db.execute("DELETE FROM schema_migration WHERE name = '4131_media_paths_relative'")
    # an old store still reads: absolute paths are file paths
    assert set(_stored(root).values()) == {str(outside)} | {str(p) for i, p in files.items() if i != first}

    settings = project(root)
    engine = open_store(settings)  # migrates
    with engine.connect() as conn:
        assert conn.execute(text("SELECT 1 FROM schema_migration WHERE name = '4131_media_paths_relative'")).first()
        captions = {str(c) for (c,) in conn.execute(text("SELECT captions_path FROM video WHERE captions_path "
                                                         "IS NOT NULL"))}
        sources = {str(s) for (s,) in conn.execute(text("SELECT source FROM playlist"))}
    stored = _stored(root)
    assert stored[first] == str(outside)  # outside the project: absolute until a root holds it
    assert {stored[i] for i in files if i != first} == {f"media/{i}.mp4" for i in files if i != first}
    assert captions == {f"media/{i}.srt" for i in files} and sources == {"media"}
    with transaction(engine) as s:  # read back as file paths of this project
        paths = {int(v.id or 0): v.path for v in s.exec(select(Video).where(Video.status == "indexed")).all()}
        assert {p.source for p in s.exec(select(Playlist)).all()} == {str(root / "media")}
    assert paths == {i: str(outside) if i == first else str(p) for i, p in files.items()}
    forget_engines()
    code, got = _check(root, apart=False)
    assert code == 0 and got["problems"] == [], got


def test_a_media_root_outside_the_project_is_re_pointed_with_one_command(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    shared = tmp_path / "disk" / "videos"
    files = _project_with_media(root, shared)
    assert set(_stored(root).values()) == {str(p) for p in files.values()}  # outside: absolute

    done = _cli(root, "media-root", "set", "shared", str(shared), "--json")
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert (got["videos"], got["adopted"], got["missing"], got["previous"]) == (len(files), len(files), 0, None)
    assert set(_stored(root).values()) == {f"@shared/{i}.mp4" for i in files}

    mounted = tmp_path / "mnt" / "other-name"
    mounted.parent.mkdir()
    shared.rename(mounted)  # the disk is mounted elsewhere
    code, got = _check(root, apart=False)
    assert code == 3 and got["missing"] == len(files), got
    copy = tmp_path / "copy"
    forget_engines()  # the store closed, as `cp -a` of a project nobody is using
    shutil.copytree(root, copy, symlinks=True)
    done = _cli(copy, "media-root", "set", "shared", str(mounted), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["previous"] == str(shared)
    code, got = _check(copy, apart=False)
    assert code == 0 and got["ok"] == len(files), got
    listed = json.loads(_cli(copy, "media-root", "list", "--json").stdout)
    assert listed == [{"name": "shared", "folder": str(mounted), "videos": len(files), "missing": 0,
                       "missing_paths": [], "previous": None, "adopted": 0}]
    assert _check(root, apart=False)[0] == 3  # the copy's root is its own: the original still names the old folder

    # a root pointed at a folder without its videos says so (exit 3); a folder that is not there changes nothing
    empty = tmp_path / "empty"
    empty.mkdir()
    done = _cli(copy, "media-root", "set", "shared", str(empty))
    assert done.returncode == 3 and f"{len(files)} missing" in done.stdout
    done = _cli(copy, "media-root", "set", "shared", str(tmp_path / "nowhere"))
    assert done.returncode == 1 and "not a folder" in done.stderr
    done = _cli(copy, "media-root", "set", "inside", str(copy / "media"))
    assert done.returncode == 1 and "inside the project folder" in done.stderr


def test_check_names_a_media_root_the_store_has_no_folder_for(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    files = _project_with_media(root, root / "media")
    with sqlite3.connect(root / "playlisteval.db") as db:
        db.execute("UPDATE video SET path = '@gone/x.mp4' WHERE id = ?", (min(files),))
    code, got = _check(root, apart=False)
    assert code == 3 and got["missing"] == 1, got
    assert "media root 'gone' is not set: `playlisteval media-root set gone FOLDER`" in got["problems"][0]["error"]


def test_add_stores_paths_inside_the_project_relative_and_warns_of_others(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    project(root)
    inside = root / "videos" / "Lessons"
    inside.mkdir(parents=True)
    (inside / "a.mp4").write_bytes(_clip())
    done = _cli(root, "add", "Education", str(inside), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["warnings"] == []
    with sqlite3.connect(root / "playlisteval.db") as db:
        assert db.execute("SELECT path, source FROM video JOIN playlist ON playlist.id = video.playlist_id"
                          ).fetchall() == [("videos/Lessons/a.mp4", "videos/Lessons")]
    outside = tmp_path / "far" / "Talks"
    outside.mkdir(parents=True)
    (outside / "b.mp4").write_bytes(_clip(3.0))  # other content: not refused as a duplicate
    done = _cli(root, "add", "Drama", str(outside), "--json")
    assert done.returncode == 0, done.stderr
    assert any("outside the project folder" in w and "media-root set" in w for w in json.loads(done.stdout)["warnings"])
    assert _cli(root, "media-root", "set", "far", str(tmp_path / "far")).returncode == 0
    with sqlite3.connect(root / "playlisteval.db") as db:
        assert db.execute("SELECT path FROM video WHERE path LIKE '@%'").fetchall() == [("@far/Talks/b.mp4",)]
    # adding the same folder again finds it present (compared in its stored form)
    done = _cli(root, "add", "Drama", str(outside), "--json")
    assert json.loads(done.stdout)["unchanged"] == [str(outside / "b.mp4")]


def test_stored_forms_round_trip_and_the_deepest_root_wins(tmp_path: Path) -> None:
    roots = MediaRoots(tmp_path / "p", {"disk": tmp_path / "d", "deep": tmp_path / "d" / "x"})
    cases = {str(tmp_path / "p" / "m" / "a.mp4"): "m/a.mp4", str(tmp_path / "d" / "b.mp4"): "@disk/b.mp4",
             str(tmp_path / "d" / "x" / "c.mp4"): "@deep/c.mp4", "/else/e.mp4": "/else/e.mp4",
             str(tmp_path / "p2" / "f.mp4"): str(tmp_path / "p2" / "f.mp4")}  # a sibling is not inside
    for path, stored in cases.items():
        assert roots.portable(path) == stored and roots.resolve(stored) == path
    assert roots.portable(str(tmp_path / "p" / "m") + os.sep) == "m/"  # a folder prefix keeps its separator
    assert roots.resolve("@unknown/a.mp4") == "@unknown/a.mp4"  # no folder to guess: reported missing
    with pytest.raises(ConfigError):
        check_name("a/b")


@pytest.mark.parametrize("store", ["sqlite", "postgresql"])
def test_roots_are_kept_in_either_store_and_a_name_is_not_a_pattern(tmp_path: Path, store: str,
                                                                     request: pytest.FixtureRequest) -> None:
    from playlisteval.index.media_roots import list_roots, set_root
    from playlisteval.store.tables import Domain

    url = request.getfixturevalue("pg_url") if store == "postgresql" else f"sqlite:///{tmp_path}/s.db"
    root = tmp_path / "proj"
    engine = open_store(project(root, store__url=url))
    files = [root / "v" / "a.mp4", tmp_path / "my_disk" / "b.mp4", tmp_path / "myxdisk" / "c.mp4"]
    with transaction(engine) as s:
        domain = Domain(name="D")
        s.add(domain)
        s.flush()
        playlist = Playlist(domain_id=domain.id or 0, name="P", source=str(root / "v"))
        s.add(playlist)
        s.flush()
        for n, path in enumerate(files):
            path.parent.mkdir(parents=True)
            path.write_bytes(b"x")
            s.add(Video(playlist_id=playlist.id or 0, path=str(path), title=str(n), status="indexed"))
    assert set_root(engine, "myxdisk", tmp_path / "myxdisk").adopted == 1
    state = set_root(engine, "my_disk", tmp_path / "my_disk")
    assert (state.videos, state.adopted, state.missing) == (1, 1, [])  # "_" is no wildcard: c.mp4 is not counted
    with engine.connect() as conn:
        assert [p for (p,) in conn.execute(text("SELECT path FROM video ORDER BY id"))] == [
            "v/a.mp4", "@my_disk/b.mp4", "@myxdisk/c.mp4"]
    moved = tmp_path / "mnt" / "disk"
    moved.parent.mkdir()
    (tmp_path / "my_disk").rename(moved)
    state = set_root(engine, "my_disk", moved)
    assert (state.previous, state.missing, state.adopted) == (str(tmp_path / "my_disk"), [], 0)
    with transaction(engine) as s:
        assert [v.path for v in s.exec(select(Video).order_by(Video.id)).all()] == [  # type: ignore[arg-type]
            str(files[0]), str(moved / "b.mp4"), str(files[2])]
        assert s.exec(select(Video.id).where(Video.path == str(moved / "b.mp4"))).all() != []  # compared stored
    assert [(r.name, r.videos, len(r.missing)) for r in list_roots(engine)] == [("my_disk", 1, 0), ("myxdisk", 1, 0)]
