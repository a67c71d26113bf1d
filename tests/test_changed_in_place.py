"""Issue 22: a video whose file changed in place (same path, new bytes) is noticed by `add` and `index`,
re-indexed by `index` with what its old content made dropped (as `remove` drops it), the selected
benchmark gets its next version and the old one stays readable; a build over the stale index refuses."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from sqlmodel import Session, col, select

from playlisteval.actors.build_run import build
from playlisteval.actors.indexing import index_collection
from playlisteval.cli import main
from playlisteval.config import Settings
from playlisteval.index.changes import detect
from playlisteval.index.collection import add_paths
from playlisteval.index.search import search
from playlisteval.select.sampling import select_benchmark
from playlisteval.store import open_store
from playlisteval.store.tables import Chunk, Seed, Segment, Video
from playlisteval.world.synth.make import make_collection
from playlisteval.world.synth.world import load_world
from tests.helpers import QUIET_SIM, env_for, project

OVERRIDES: dict[str, object] = dict(
    index__embedder="hash", index__ocr="none", index__segment_min_s=60, index__segment_max_s=90,
    eval__materialize_frames=False, eval__frames=8, eval__workers=1, select__difficulty_evidence="oracle",
    select__questions_per_domain=0, select__pairs_per_domain=10, runner__max_attempts=1,
    runner__backoff_base_s=0.01, **QUIET_SIM)


def cli(root: Path, *args: str, code: int | None = 0) -> Result:
    result = CliRunner().invoke(main, ["--project", str(root), *args], env=env_for(**OVERRIDES),
                                catch_exceptions=False)
    assert code is None or result.exit_code == code, result.output
    return result


@pytest.fixture(scope="module")
def selected(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three 2-minute synthetic videos, added, indexed, built and selected (a benchmark version 1)."""
    root = tmp_path_factory.mktemp("changed")
    settings = project(root, **OVERRIDES)
    make_collection(root / "videos", domains=1, playlists=1, videos=3, minutes=2, seed=0, vp9=0)
    engine = open_store(settings)
    for domain in sorted(p for p in (root / "videos").iterdir() if p.is_dir()):
        add_paths(engine, domain.name, sorted(domain.iterdir()))
    index_collection(settings, engine)
    build(settings)
    assert select_benchmark(project(root, **OVERRIDES)).pairs >= 1
    # other content for the same names: another seed, shorter
    make_collection(root / "other", domains=1, playlists=1, videos=3, minutes=1, seed=7, vp9=0)
    return root


def _copy(root: Path, tmp_path: Path) -> Settings:
    """The project moved to ``tmp_path`` (its videos and its store, with the video paths rewritten)."""
    shutil.copytree(root, tmp_path, dirs_exist_ok=True)
    settings = project(tmp_path, **OVERRIDES)
    engine = open_store(settings)
    with Session(engine) as s:
        for video in s.exec(select(Video)).all():
            video.path = video.path.replace(str(root), str(tmp_path))
            video.captions_path = (video.captions_path or "").replace(str(root), str(tmp_path)) or None
            st = Path(video.path).stat()  # copytree keeps mtimes: the stamps still hold
            assert (video.file_size, video.file_mtime) == (st.st_size, st.st_mtime)
            s.add(video)
        s.commit()
    return settings


def _replace(settings: Settings) -> Path:
    """Video 2's file (and its captions and world) replaced in place by other content; its path."""
    engine = open_store(settings)
    with Session(engine) as s:
        target = Path(s.exec(select(Video.path).order_by(col(Video.position))).all()[1])
    other = next((settings.root / "other").rglob(target.name[:2] + "*.mp4"))
    for suffix in (".mp4", ".vtt", ".world.json"):
        src, dst = other.with_name(other.stem + suffix), target.with_name(target.stem + suffix)
        if src.exists():
            shutil.copyfile(src, dst)  # new bytes, new mtime
    return target


def _chunks(settings: Settings, path: Path) -> list[Chunk]:
    with Session(open_store(settings)) as s:
        vid = s.exec(select(Video.id).where(Video.path == str(path))).one()
        return list(s.exec(select(Chunk).where(Chunk.video_id == vid).order_by(col(Chunk.idx))))


def test_add_says_changed_and_index_reindexes_the_new_content(selected: Path, tmp_path: Path) -> None:
    settings = _copy(selected, tmp_path)
    engine = open_store(settings)
    old_board = json.loads(cli(tmp_path, "leaderboard", "--json").output)
    out1 = tmp_path / "v1"
    cli(tmp_path, "export", str(out1))
    assert not detect(engine), "nothing changed yet"
    target = _replace(settings)
    old_chunks = _chunks(settings, target)
    added = json.loads(cli(tmp_path, "add", "Education", str(target.parent), "--json").output)
    assert added["changed"] == [str(target)] and str(target) not in added["unchanged"]
    text = cli(tmp_path, "add", "Education", str(target.parent)).output
    assert "changed on disk" in text and "1 changed on disk" in text

    result = cli(tmp_path, "index", "--json", code=None)
    doc = json.loads(result.output)
    assert doc["changed"]["reindexed"] == [str(target)], doc
    assert doc["videos_indexed"] == 1
    new_chunks = _chunks(settings, target)
    world = load_world(target)
    assert world is not None and len(new_chunks) == 2 and len(old_chunks) == 4  # 1 minute now, 2 before
    assert new_chunks[0].transcript != old_chunks[0].transcript
    assert world.scenes[0].narration.split()[0] in new_chunks[0].transcript
    hits = search(settings, engine, world.scenes[0].narration, k=3)
    assert hits and hits[0].path == str(target)
    with Session(engine) as s:  # what the old content made is gone; what the new one makes is there
        vid = s.exec(select(Video).where(Video.path == str(target))).one()
        assert vid.status == "indexed" and vid.file_size == target.stat().st_size
        segs = s.exec(select(Segment).where(Segment.video_id == vid.id)).all()
        assert segs and all(seg.end <= 60.0 + 1e-6 for seg in segs)
        ids = [seg.id for seg in segs]
        for seed in s.exec(select(Seed).where(col(Seed.segment1_id).in_(ids) | col(Seed.segment2_id).in_(ids))):
            assert seed.id is not None
    # the benchmark: a new version (cause index) when its pairs changed, the first one readable as it was
    listed = json.loads(cli(tmp_path, "versions", "--json").output)["versions"]
    assert doc["changed"]["finished_items"] > 0, "the replaced video held selected items"
    assert [v["version"] for v in listed] == [1, 2] and listed[1]["reason"] == "index", listed
    assert listed[1]["pairs"] < listed[0]["pairs"]
    assert doc["benchmark_versions"] and doc["benchmark_versions"][0]["version"] == 2
    assert json.loads(cli(tmp_path, "leaderboard", "--json", "--version", "1").output) == old_board
    again = tmp_path / "v1-again"
    cli(tmp_path, "export", str(again), "--version", "1")
    assert (again / "data/test.jsonl").read_bytes() == (out1 / "data/test.jsonl").read_bytes()
    # nothing changed since: a second index finds nothing, re-indexes nothing
    again_doc = json.loads(cli(tmp_path, "index", "--json", code=None).output)
    assert again_doc["changed"]["reindexed"] == [] and again_doc["videos_indexed"] == 0


def test_a_touched_file_with_the_same_bytes_is_not_changed(selected: Path, tmp_path: Path) -> None:
    settings = _copy(selected, tmp_path)
    engine = open_store(settings)
    with Session(engine) as s:
        path = Path(s.exec(select(Video.path)).first() or "")
    os.utime(path, (1_000_000_000, 1_000_000_000))
    assert not detect(engine)  # hashed: the same content; the new mtime is stamped
    with Session(engine) as s:
        assert s.exec(select(Video.file_mtime).where(Video.path == str(path))).one() == 1_000_000_000
    assert json.loads(cli(tmp_path, "add", "Education", str(path.parent), "--json").output)["changed"] == []


def test_a_build_over_a_stale_index_is_a_clear_error(selected: Path, tmp_path: Path) -> None:
    settings = _copy(selected, tmp_path)
    target = _replace(settings)
    result = cli(tmp_path, "build", code=None)
    said = " ".join(result.output.split())
    assert result.exit_code != 0 and "IndexError" not in said
    assert "changed on disk since they were indexed" in said and target.name in said
    assert "nothing was built: run `playlisteval index` first" in said
