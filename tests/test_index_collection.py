"""Adding playlists (SPEC A1–A3): folders, files, manifests; skips reported; re-adding is a no-op."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from playlisteval.errors import ConfigError
from playlisteval.index.collection import add_manifest, add_paths
from playlisteval.store.tables import Domain, Playlist, Video
from tests.index_helpers import make_video, settings_for, store, write_srt


def _snapshot(engine: Engine) -> list[tuple]:
    with Session(engine) as s:
        rows = s.exec(
            select(Video, Playlist, Domain)
            .join(Playlist, Playlist.id == Video.playlist_id)
            .join(Domain, Domain.id == Playlist.domain_id)
            .order_by(Video.id)
        ).all()
        return [(d.name, p.name, v.path, v.title, v.position, v.status, v.reason, v.sha256, v.captions_path)
                for v, p, d in rows]


@pytest.fixture
def engine(tmp_path: Path) -> Engine:
    return store(settings_for(tmp_path))


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    show = tmp_path / "media" / "My Show"
    for name in ("Episode 1", "Episode 10", "Episode 2"):
        make_video(show / f"{name}.mp4", 2)
    write_srt(show / "Episode 2.en.srt", [(0, 1, "hi")])
    (show / "Episode 3.mp4").write_bytes(b"garbage, not a video" * 50)  # corrupt
    (show / "notes.txt").write_text("ignored: not a video suffix in a folder scan")
    return show


def test_folder_is_a_playlist_in_episode_order(engine: Engine, folder: Path, tmp_path: Path) -> None:
    report = add_paths(engine, "Education", [folder, tmp_path / "nowhere" / "lost.mp4"])
    assert len(report.added) == 3
    assert report.playlists == ["Education/My Show"]
    reasons = {Path(s.path).name: s.reason for s in report.skipped}
    assert reasons["lost.mp4"] == "missing"
    assert reasons["Episode 3.mp4"].startswith("corrupt")
    rows = _snapshot(engine)
    # by name: 1, 10, 2, 3(corrupt) → by episode number: 1, 2, 3, 10
    assert [(r[3], r[4], r[5]) for r in sorted(rows, key=lambda r: r[4])] == [
        ("Episode 1", 0, "new"), ("Episode 2", 1, "new"), ("Episode 3", 2, "skipped"), ("Episode 10", 3, "new")
    ]
    ep2 = next(r for r in rows if r[3] == "Episode 2")
    assert ep2[8] == str(folder / "Episode 2.en.srt")
    assert ep2[7] == hashlib.sha256((folder / "Episode 2.mp4").read_bytes()).hexdigest()
    with Session(engine) as s:
        video = s.exec(select(Video).where(Video.title == "Episode 1")).one()
    assert video.codec == "h264" and video.duration == pytest.approx(2, abs=0.1) and video.width == 160


def test_re_adding_changes_nothing(engine: Engine, folder: Path) -> None:
    add_paths(engine, "Education", [folder])
    before = _snapshot(engine)
    again = add_paths(engine, "Education", [folder])
    assert again.added == [] and len(again.unchanged) == 3
    assert [Path(s.path).name for s in again.skipped] == ["Episode 3.mp4"]  # still reported
    single = add_paths(engine, "Education", [folder / "Episode 1.mp4"])
    assert single.added == [] and single.unchanged == [str(folder / "Episode 1.mp4")]
    assert _snapshot(engine) == before


def test_a_repaired_file_is_picked_up_and_order_kept(engine: Engine, folder: Path) -> None:
    add_paths(engine, "Education", [folder])
    make_video(folder / "Episode 3.mp4", 2)  # repaired
    make_video(folder / "Episode 4.mp4", 2)  # new
    report = add_paths(engine, "Education", [folder])
    assert sorted(Path(p).name for p in report.added) == ["Episode 3.mp4", "Episode 4.mp4"]
    rows = sorted(_snapshot(engine), key=lambda r: r[4])
    assert [r[3] for r in rows] == ["Episode 1", "Episode 2", "Episode 3", "Episode 4", "Episode 10"]
    assert {r[5] for r in rows} == {"new"}


def test_single_file_goes_to_its_folders_playlist(engine: Engine, tmp_path: Path) -> None:
    video = make_video(tmp_path / "Talks" / "one.mp4", 2)
    (tmp_path / "Talks" / "readme.txt").write_text("not a video")
    report = add_paths(engine, "Podcasts", [video, tmp_path / "Talks" / "readme.txt"])
    assert report.added == [str(video)] and report.playlists == ["Podcasts/Talks"]
    assert [s.reason for s in report.skipped] == ["not a video (unknown file type .txt)"]
    assert [r[3] for r in _snapshot(engine)] == ["one"]  # nothing recorded for a non-video
    assert add_paths(engine, "Podcasts", [tmp_path / "empty"]).skipped[0].reason == "missing"


def test_manifest_csv_and_json(engine: Engine, tmp_path: Path) -> None:
    media = tmp_path / "m"
    for name in ("a", "b", "c"):
        make_video(media / f"{name}.mp4", 2)
    csv = tmp_path / "list.csv"
    csv.write_text(
        "domain,playlist,title,path,url,position\n"
        "History,Rome,The Fall,m/a.mp4,https://example.org/a,2\n"
        "History,Rome,The Rise,m/b.mp4,,1\n"
        "History,Rome,Gone,,https://example.org/deleted,\n"
        "History,Rome,Lost,m/missing.mp4,,3\n"
    )
    report = add_manifest(engine, csv)
    assert len(report.added) == 2
    assert sorted(s.reason for s in report.skipped) == ["missing", "no local file (url only)"]
    rows = sorted(_snapshot(engine), key=lambda r: r[4])
    assert [(r[0], r[1], r[3]) for r in rows] == [("History", "Rome", "The Rise"), ("History", "Rome", "The Fall")]
    assert add_manifest(engine, csv).added == [] and sorted(_snapshot(engine), key=lambda r: r[4]) == rows
    js = tmp_path / "more.json"
    js.write_text(json.dumps({"videos": [{"domain": "History", "playlist": "Rome", "title": "Epilogue",
                                          "path": str(media / "c.mp4")}]}))
    assert len(add_manifest(engine, js).added) == 1
    assert [r[3] for r in sorted(_snapshot(engine), key=lambda r: r[4])] == ["The Rise", "The Fall", "Epilogue"]


def test_bad_manifest_is_a_config_error(engine: Engine, tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("domain,title,path\nHistory,x,y.mp4\n")
    with pytest.raises(ConfigError, match="has no playlist column"):
        add_manifest(engine, bad)
    with pytest.raises(ConfigError, match="does not exist"):
        add_manifest(engine, tmp_path / "none.csv")
