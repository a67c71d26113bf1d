"""Keyframe-aware sampling and kept frames (issue 13, deliverable 1): a sample moves onto a keyframe only
inside its own slice of the chunk and is otherwise exact; the frames `index` reads are kept once and then
serve OCR on a re-index and judge evidence without decoding the video; chunk boundaries stay exact."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image
from sqlmodel import Session, col, select

from playlisteval.actors.indexing import index_collection
from playlisteval.config import Settings
from playlisteval.errors import MediaError
from playlisteval.eval.corpus import Corpora, GoldSegment, Question
from playlisteval.eval.evidence import Evidence, chunk_frames, select_evidence
from playlisteval.eval.media import image_parts
from playlisteval.index import chunk_frames as frames_of_chunks
from playlisteval.index import work
from playlisteval.index.chunking import chunk_spans
from playlisteval.index.collection import add_paths
from playlisteval.index.outcome import read_outcome
from playlisteval.media.frames import FrameReader, frames_at, keyed_sample_times, keyframe_times, sample_times
from playlisteval.media.kept import KeptFrames, kept_root
from playlisteval.media.probe import probe
from playlisteval.store.tables import Chunk, Domain, Video
from tests.index_helpers import settings_for, store


def _keyed_video(path: Path, duration: int, gop_s: int, rate: int = 10) -> Path:
    """H.264 with a keyframe exactly every ``gop_s`` seconds (fixed GOP, no scene-cut keyframes)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    gop = str(gop_s * rate)
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi",
                    "-i", f"testsrc=size=320x240:rate={rate}:duration={duration}",
                    "-f", "lavfi", "-i", f"sine=frequency=440:sample_rate=16000:duration={duration}",
                    "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-g", gop,
                    "-keyint_min", gop, "-sc_threshold", "0", "-c:a", "aac", "-b:a", "24k", str(path)],
                   check=True)
    return path


def _same(a: Image.Image, b: Image.Image) -> bool:
    return a.size == b.size and bool(np.array_equal(np.asarray(a), np.asarray(b)))


def test_samples_move_to_a_keyframe_of_their_quarter_first_then_of_their_chunk(tmp_path: Path) -> None:
    video = _keyed_video(tmp_path / "gop15.mp4", 40, 15)
    keys = keyframe_times(video)
    assert keys == [0.0, 15.0, 30.0]
    spans = [(0.0, 20.0), (20.0, 40.0)]
    keyed = keyed_sample_times(spans, 4, keys)
    # quarters of 5 s: a keyframe at 0 (first quarter), 15 (fourth; 15 is not inside [10, 15)), 30;
    # every other sample is exact, at the start of its quarter: the nearest frame to the keyframe before it
    assert keyed == [[0.0, 5.0, 10.0, 15.0], [20.0, 25.0, 30.0, 35.0]]
    for (start, end), row in zip(spans, keyed, strict=True):
        for i, t in enumerate(row):
            assert start + (end - start) * i / 4 <= t < start + (end - start) * (i + 1) / 4
    assert keyed_sample_times(spans, 4, []) == sample_times(spans, 4)
    # a sample with no keyframe in its quarter takes a free one elsewhere in its chunk, never one of another
    # chunk nor one another sample of its chunk has (issue 43)
    assert keyed_sample_times([(0.0, 20.0)], 4, [0.0, 1.0, 2.0, 19.0, 20.0]) == [[0.0, 1.0, 2.0, 19.0]]
    assert keyed_sample_times([(0.0, 20.0)], 4, [0.5, 21.0]) == [[0.5, 5.0, 10.0, 15.0]]
    assert keyed_sample_times([(0.0, 20.0)], 2, [0.0, 4.0, 6.0]) == [[4.0, 6.0]]
    # the keyed reader returns the very frames an exact decode shows at those times, in either order of modes
    flat = [t for row in keyed for t in row]
    exact = frames_at(video, flat, None, (160, 160))
    with FrameReader(video, "h264", (160, 160), (320, 240), keyframes=keys) as reader:
        got = [image for row in keyed for image in reader.read(row)]
        assert reader.backend == "pyav"
    assert all(_same(a, b) for a, b in zip(exact, got, strict=True))
    with pytest.raises(MediaError, match="keyframes"):
        keyframe_times(tmp_path / "missing.mp4")


class _SizeOcr:
    """An OCR that 'reads' a frame's size and brightness class: enough to see which frames it was given."""

    name = "size"

    def __init__(self) -> None:
        self.calls = 0

    def read(self, image: Image.Image) -> list[str]:
        self.calls += 1
        return [f"frame {image.width}x{image.height}"]


def _no_decoding(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("the video was decoded")


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("kept")
    video = _keyed_video(tmp / "media" / "Course" / "Talk.mp4", 70, 8)
    settings = settings_for(tmp, embedder="hash", segment_min_s=30, segment_max_s=60)
    settings.index.ocr = "rapidocr"  # the engine itself is replaced below
    engine = store(settings)
    add_paths(engine, "Education", [video.parent])
    ocr = _SizeOcr()
    mp = pytest.MonkeyPatch()
    mp.setattr(work, "get_ocr", lambda cfg: ocr)
    try:
        index_collection(settings, engine)
    finally:
        mp.undo()
    return {"settings": settings, "engine": engine, "video": video, "ocr": ocr}


def test_index_keeps_the_frames_it_read_once_and_keeps_chunks_exact(indexed: dict[str, Any]) -> None:
    settings, engine, video = indexed["settings"], indexed["engine"], indexed["video"]
    with Session(engine) as s:
        row = s.exec(select(Video)).one()
        chunks = list(s.exec(select(Chunk).order_by(col(Chunk.idx))))
    outcome = read_outcome(row.index_report)
    assert outcome is not None and outcome.frames == 12 and outcome.frames_kept == 0
    # chunk boundaries are the exact spans, whatever the samples did
    assert [(c.start, c.end) for c in chunks] == chunk_spans(probe(video).duration, 30, 5)
    kept = KeptFrames(kept_root(settings.media_dir), video)
    expected = keyed_sample_times([(c.start, c.end) for c in chunks], 4, keyframe_times(video))
    assert kept.times() == [round(t, 3) for row in expected for t in row]
    assert all(max(Image.open(kept.path(t)).size) <= 640 for t in kept.times())
    assert all(c.ocr_text for c in chunks)


def test_a_reindex_reads_the_kept_frames_without_decoding(indexed: dict[str, Any], tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    first, video = indexed["settings"], indexed["video"]
    kept = KeptFrames(kept_root(first.media_dir), video)
    written = {t: kept.path(t).stat().st_mtime_ns for t in kept.times()}
    again = settings_for(tmp_path, embedder="hash", segment_min_s=30, segment_max_s=60)
    again.index.ocr = "rapidocr"
    again.media.dir = str(first.media_dir)  # a fresh store, the same media folder
    engine = store(again)
    add_paths(engine, "Education", [video.parent])
    ocr = _SizeOcr()
    monkeypatch.setattr(work, "get_ocr", lambda cfg: ocr)
    monkeypatch.setattr(frames_of_chunks, "FrameReader", _no_decoding)
    index_collection(again, engine)
    with Session(engine) as s:
        outcome = read_outcome(s.exec(select(Video)).one().index_report)
        texts = [c.ocr_text for c in s.exec(select(Chunk).order_by(col(Chunk.idx)))]
    assert outcome is not None and outcome.status == "indexed" and outcome.frames_kept == outcome.frames == 12
    assert ocr.calls > 0 and all(texts)
    with Session(indexed["engine"]) as s:
        assert texts == [c.ocr_text for c in s.exec(select(Chunk).order_by(col(Chunk.idx)))]
    assert {t: kept.path(t).stat().st_mtime_ns for t in kept.times()} == written  # written once


def test_evidence_is_served_from_the_kept_frames_without_decoding(indexed: dict[str, Any],
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    settings: Settings = indexed["settings"]
    engine = indexed["engine"]
    kept = KeptFrames(kept_root(settings.media_dir), indexed["video"])
    monkeypatch.setattr("playlisteval.eval.media.save_frames", _no_decoding)
    monkeypatch.setattr("playlisteval.media.frames.FrameReader", _no_decoding)
    with Session(engine) as s:
        domain = s.exec(select(Domain)).one()
    corpora = Corpora(engine, settings)
    (corpus_video,) = corpora.domain(domain.id or 0)
    gold = GoldSegment(0, corpus_video.video_id, 0, 0)
    question = Question(1, domain.id or 0, domain.name, "what is shown", (gold, gold))
    uniform = select_evidence(corpora, None, question, "uniform", "domain", 16, 2)
    assert len(uniform.frames) == 16 and {f.t for f in uniform.frames} <= set(kept.times())
    for frame in uniform.frames:  # the nearest kept frame of the frame's own chunk
        chunk = next(c for c in uniform.chunks if c.chunk_id == frame.chunk_id)
        assert chunk.start <= frame.t < chunk.end
    parts = image_parts(settings, uniform, (640, 480))
    assert all(Path(p.path).parent == kept.folder for p in parts)  # already the judge's size
    small = image_parts(settings, uniform, (160, 120))
    assert all(Image.open(p.path).size == (160, 120) for p in small)
    # retrieved: a chunk's frames are distinct indexed timestamps of that chunk, in time order
    from playlisteval.eval import evidence as ev

    chunk = corpus_video.chunks[1]
    raw = Evidence("retrieved", "domain", chunk_frames(corpus_video, chunk, 2), [chunk], 1, corpus_video.seconds)
    moved = ev.on_kept_frames(raw, kept_root(settings.media_dir)).frames
    ts = [f.t for f in moved]
    assert ts == sorted(set(ts)) and len(ts) == 2 and set(ts) <= set(kept.within(chunk.start, chunk.end))
    assert image_parts(settings, raw, (640, 480))


def test_ocr_models_load_once_per_process_not_per_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    import threading
    from types import SimpleNamespace

    from playlisteval.config import IndexSettings
    from playlisteval.index.ocr import RapidOcr, get_ocr

    assert get_ocr(IndexSettings()) is get_ocr(IndexSettings())
    ocr = RapidOcr()
    made: list[int] = []

    def load(threads: int) -> Any:
        made.append(threads)
        return lambda image, **flags: SimpleNamespace(txts=("EXIT 12",), scores=(0.9,))

    monkeypatch.setattr(ocr, "_load", load)
    image = Image.new("RGB", (64, 32))
    for _ in range(3):  # one short-lived thread after another, as a thread per video would be
        thread = threading.Thread(target=ocr.read, args=(image,))
        thread.start()
        thread.join()
    assert made == [1] and ocr.loaded == 1 and ocr.read(image) == ["EXIT 12"]


def test_human_clip_posters_are_kept_frames_of_the_clip(indexed: dict[str, Any],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from playlisteval.human import evidence as human_evidence
    from playlisteval.human.grounding import GroundedRange, GroundingInput, SegmentMedia

    settings: Settings = indexed["settings"]
    video = str(indexed["video"])
    kept = KeptFrames(kept_root(settings.media_dir), video)
    monkeypatch.setattr("playlisteval.media.frames.FrameReader", _no_decoding)
    segments = (SegmentMedia(1, 1, video, 0.0, 60.0, ()), SegmentMedia(2, 1, video, 60.0, 70.0, ()))
    given = GroundingInput(1, "q", "h1", "h2", ("s",), segments)
    found = [GroundedRange(1, 31.0, 40.0, "a sign", "hop 1"), GroundedRange(2, 1.0, 5.0, "", "hop 2")]
    clips = human_evidence._clips_for(settings, given, found)
    assert [(c["start"], c["end"]) for c in clips] == [(30.0, 60.0), (60.0, 70.0)]
    for clip in clips:
        poster = settings.media_dir / clip["poster"]
        t = float(poster.stem)
        assert poster.parent == kept.folder and clip["start"] <= t < clip["end"]
    monkeypatch.setattr(human_evidence, "KeptFrames", lambda root, path: KeptFrames(root / "none", path))
    assert human_evidence._clips_for(settings, given, found)[0]["poster"] is None  # nothing kept: no poster
