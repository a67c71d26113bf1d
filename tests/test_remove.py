"""Issue 14, undo: `remove` takes videos, playlists or domains out with everything built on them (and
`index` then recomputes what that invalidated, so the store is as if they had never been added);
`add` refuses content already in the collection elsewhere; a video skipped because of a setting is
tried again once the setting changed."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from sqlalchemy import func
from sqlmodel import Session, col, select, update

from playlisteval.actors.indexing import index_collection
from playlisteval.cli import main
from playlisteval.index.outcome import read_outcome
from playlisteval.store import open_store, transaction
from playlisteval.store.tables import (
    Chunk,
    ChunkVector,
    Domain,
    GateResult,
    Item,
    ModelCall,
    Playlist,
    Seed,
    Segment,
    Video,
)
from tests.helpers import env_for, project
from tests.index_helpers import make_video, settings_for, write_srt

pytestmark = pytest.mark.skipif(not shutil.which("ffmpeg"), reason="ffmpeg makes the test videos")

SHARED = "rivers carry sediment downstream toward the delta"
ENV = env_for(index__embedder="hash", index__ocr="none", index__chunk_s=30, index__segment_min_s=30,
              index__segment_max_s=60, index__seed_min_gap_s=0)
TABLES = (Domain, Playlist, Video, Chunk, ChunkVector, Segment, Seed, Item)


def _video(folder: Path, name: str, tag: str, rate: int) -> Path:
    """A 2-minute video (4 chunks, 2 segments) whose captions share a theme with its playlist; the frame rate
    makes each file's content (hash) its own."""
    path = make_video(folder / f"{name}.mp4", 120, rate=rate)
    write_srt(folder / f"{name}.srt", [(30 * k + 2, 30 * k + 8, f"{SHARED} {tag} chunk{k} alpha{tag}{k} beta{tag}{k} "
                                                               f"gamma{tag}{k}") for k in range(4)])
    return path


@pytest.fixture(scope="module")
def media(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("media")
    _video(root / "Rivers", "a1", "a1", rate=5)
    _video(root / "Rivers", "a2", "a2", rate=6)
    _video(root / "Deltas", "b1", "b1", rate=7)
    # the same talk as a1, another encoding (another file hash): a near-duplicate, not a copy
    _video(root / "wrong" / "Rivers copy", "a1 again", "a1", rate=4)
    return root


def _cli(root: Path, monkeypatch: pytest.MonkeyPatch, *args: str, code: int = 0) -> Result:
    for key, value in ENV.items():
        monkeypatch.setenv(key, value)
    result = CliRunner().invoke(main, ["--project", str(root), *args])
    assert result.exit_code == code, result.output
    return result


def _snapshot(root: Path) -> dict[str, object]:
    """Row counts, video states and the seeds' segment pairs by content (video file name, segment index)."""
    settings = project(root, **{k: v for k, v in (("index__embedder", "hash"),)})
    engine = open_store(settings)
    with Session(engine) as s:
        counts = {t.__name__: s.exec(select(func.count()).select_from(t)).one() for t in TABLES}
        where = {seg.id: (Path(path).name, seg.idx) for seg, path in s.exec(
            select(Segment, Video.path).join(Video, col(Video.id) == Segment.video_id))}
        pairs = sorted(tuple(sorted((where[a], where[b]))) for a, b in s.exec(select(Seed.segment1_id,
                                                                                   Seed.segment2_id)))
        videos = sorted((Path(p).name, st) for p, st in s.exec(select(Video.path, Video.status)))
        names = sorted(s.exec(select(Domain.name)))
    return {"counts": counts, "pairs": pairs, "videos": videos, "domains": names}


def _items(root: Path) -> None:
    """Items for every seed without one (what `build` creates first), without running them."""
    from playlisteval.store import items

    items.create_items(open_store(project(root)))


def test_remove_then_index_is_as_if_never_added(media: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mine, clean = tmp_path / "mine", tmp_path / "clean"
    project(mine), project(clean)
    # the mistake first: a copy added under a typo'd domain, before the real playlists
    _cli(mine, monkeypatch, "add", "geo", str(media / "wrong" / "Rivers copy"))
    _cli(mine, monkeypatch, "add", "Geo", str(media / "Rivers"), str(media / "Deltas"))
    out = _cli(mine, monkeypatch, "index").output
    assert "near-duplicate" in out and "a1.mp4 repeats" in out and "a1 again.mp4" in out  # paths, not reprs
    _items(mine)
    before = _snapshot(mine)
    assert ("a1.mp4", "duplicate") in before["videos"]  # type: ignore[operator]

    dry = json.loads(_cli(mine, monkeypatch, "remove", "--domain", "geo", "--dry-run", "--json").output)
    assert dry["removed"] is False and len(dry["videos"]) == 1 and dry["rechecked"]
    assert _snapshot(mine) == before  # a dry run changes nothing
    out = _cli(mine, monkeypatch, "remove", "--domain", "geo").output
    assert "removed 1 video(s)" in out and "domain geo" in out and "media files were not touched" in out
    assert (media / "wrong" / "Rivers copy" / "a1 again.mp4").is_file()
    _cli(mine, monkeypatch, "index")
    _items(mine)

    _cli(clean, monkeypatch, "add", "Geo", str(media / "Rivers"), str(media / "Deltas"))
    _cli(clean, monkeypatch, "index")
    _items(clean)
    after, reference = _snapshot(mine), _snapshot(clean)
    assert after == reference
    assert reference["videos"] == [("a1.mp4", "indexed"), ("a2.mp4", "indexed"), ("b1.mp4", "indexed")]
    assert len(reference["pairs"]) == 7  # type: ignore[arg-type]  # 6 in Rivers (4 segments), 1 in Deltas


def test_remove_refuses_finished_items_without_force(media: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "p"
    project(root)
    _cli(root, monkeypatch, "add", "Geo", str(media / "Rivers"), str(media / "Deltas"))
    _cli(root, monkeypatch, "index")
    _items(root)
    engine = open_store(project(root))
    with transaction(engine) as s:
        b1 = s.exec(select(Video.id).where(col(Video.path).endswith("b1.mp4"))).one()
        seg_ids = list(s.exec(select(Segment.id).where(Segment.video_id == b1)))
        item = s.exec(select(Item).join(Seed, col(Seed.id) == Item.seed_id)
                      .where(col(Seed.segment1_id).in_(seg_ids))).first()
        assert item is not None
        item.state, item.phase1_attempts, item.version = "accepted", 1, 3
        s.add(item)
        s.add(GateResult(item_id=item.id or 0, phase=1, attempt=1, gate="C1", verdict="pass"))
        s.add(ModelCall(request_hash="h", role="B", provider="sim", model="generator", item_id=item.id, usd=0.5))
    out = _cli(root, monkeypatch, "remove", "--playlist", "Geo/Deltas", code=1).output
    assert "finished item(s)" in out and "accepted" in out and "--force" in out and "Traceback" not in out
    with Session(engine) as s:
        assert s.exec(select(func.count()).select_from(Item)).one() == 7  # nothing removed
    # held right now (a worker on the item, an index on the video): refused even with --force
    with transaction(engine) as s:
        s.execute(update(Item).where(col(Item.id) == item.id).values(lease_owner="w", lease_expires=time.time() + 60))
    out = _cli(root, monkeypatch, "remove", "--playlist", "Geo/Deltas", "--force", code=1).output
    assert "being worked on right now" in " ".join(out.split())
    with transaction(engine) as s:
        s.execute(update(Item).values(lease_owner=None, lease_expires=None))
        s.execute(update(Video).where(col(Video.id) == b1).values(lease_owner="w", lease_expires=time.time() + 60))
    out = _cli(root, monkeypatch, "remove", "--playlist", "Geo/Deltas", "--force", code=1).output
    assert "is being indexed right now" in " ".join(out.split())
    with transaction(engine) as s:
        s.execute(update(Video).values(lease_owner="", lease_expires=0.0))
    out = _cli(root, monkeypatch, "remove", "--playlist", "Geo/Deltas", "--force").output
    assert "removed 1 video(s)" in out
    with Session(engine) as s:
        assert s.exec(select(func.count()).select_from(Item)).one() == 6
        assert s.exec(select(func.count()).select_from(GateResult)).one() == 0
        assert s.exec(select(func.count()).select_from(ModelCall)).one() == 1  # money spent stays on the ledger
        assert list(s.exec(select(Playlist.name))) == ["Rivers"]
    assert (media / "Deltas" / "b1.mp4").is_file()
    # a file path names a video; an unknown name is one clear line
    assert "removed 1 video(s)" in _cli(root, monkeypatch, "remove", str(media / "Rivers" / "a2.mp4")).output
    out = _cli(root, monkeypatch, "remove", "--domain", "geo", code=1).output
    assert "did you mean 'Geo'" in out


def test_add_refuses_content_already_in_the_collection(media: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "p"
    project(root)
    _cli(root, monkeypatch, "add", "Geo", str(media / "Rivers"))
    out = _cli(root, monkeypatch, "add", "geo", str(media / "Rivers")).output  # the case typo of the issue
    assert "0 added" in out and "not added: already in the collection" in out and "Geo/Rivers/" in out
    assert "--allow-duplicate" in out
    engine = open_store(project(root))
    with Session(engine) as s:
        assert s.exec(select(func.count()).select_from(Video)).one() == 2
        assert list(s.exec(select(Domain.name))) == ["Geo"]  # no empty domain left behind
    data = json.loads(_cli(root, monkeypatch, "add", "geo", str(media / "Rivers"), "--allow-duplicate",
                           "--json").output)
    assert len(data["added"]) == 2 and all(d["added"] for d in data["duplicates"])
    with Session(engine) as s:
        assert s.exec(select(func.count()).select_from(Video)).one() == 4


def test_a_video_skipped_by_a_setting_is_tried_again_once_it_changes(media: Path, tmp_path: Path) -> None:
    settings = settings_for(tmp_path, embedder="hash", segment_min_s=30, segment_max_s=60)
    from playlisteval.index.collection import add_paths

    engine = open_store(settings)
    add_paths(engine, "Geo", [media / "Deltas"])
    settings.index.chunk_s = 0  # what a config could say before values were range-checked
    report = index_collection(settings, engine)
    assert report.videos_indexed == 0 and len(report.skipped) == 1
    with Session(engine) as s:
        video = s.exec(select(Video)).one()
        assert video.status == "skipped" and read_outcome(video.index_report).cause == "error"  # type: ignore[union-attr]
    again = index_collection(settings, engine)  # same settings: not tried again
    assert again.retried == [] and again.videos_indexed == 0
    settings.index.chunk_s = 30
    fixed = index_collection(settings, engine)
    assert fixed.retried and fixed.videos_indexed == 1 and fixed.chunks == 4
    # a file that is broken stays skipped whatever the settings
    with transaction(engine) as s:
        s.execute(update(Video).values(status="skipped", index_report=json.dumps(
            {"run": "x", "status": "skipped", "reason": "corrupt", "cause": "file"})))
    settings.index.chunk_s = 20
    assert index_collection(settings, engine).retried == []
