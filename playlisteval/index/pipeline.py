"""`playlisteval index`: chunks, transcripts, OCR, vectors (per video, on the "index" queue), then
segments, near-duplicates and seeds over the collection (SPEC A4–A7, P).

The coordinator picks the videos with work to do (new ones; indexed ones whose vectors for the
embedder are missing), has one ``index_video`` message sent per video (the engine's actor,
actors/tasks.py, through actors/indexing.py) and waits, reading progress from the store:

- in-process (the default, ``[broker] url = "memory://"``): ``[index] threads`` worker threads in this
  process run the actor on the App's in-process broker;
- Redis: the messages go to the shared "index" queue, where `playlisteval worker` processes on any
  machine take them; this process works on the queue too, so it finishes with or without them.

Each video's outcome is written to the store by whoever indexed it, tagged with this run's id, so
the report is the same whichever process did the work. A second run with nothing new sends nothing.
First, a video whose file changed in place is put back to new, with what its old content made dropped
(index/changes.py), so this run indexes it again.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from sqlalchemy import func
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from playlisteval.config import IndexSettings, Settings, is_redis
from playlisteval.index import changes as file_changes
from playlisteval.index import chunk_progress
from playlisteval.index.asr import check_backends
from playlisteval.index.chunking import chunk_spans
from playlisteval.index.collection import Skipped
from playlisteval.index.embedders import Embedder, get_embedder
from playlisteval.index.leases import Held
from playlisteval.index.leases import held as held_videos
from playlisteval.index.ocr import get_ocr, share_cores
from playlisteval.index.outcome import Outcome, read_outcome, settings_key
from playlisteval.index.search import Hit, search
from playlisteval.index.seeds import SeedReport, build_seeds
from playlisteval.index.segments import SegmentReport, build_segments, mark_duplicates
from playlisteval.store.engine import transaction
from playlisteval.store.tables import Chunk, ChunkVector, Video

__all__ = ["IndexReport", "Hit", "index_collection", "index_videos", "search", "pending_videos"]

log = logging.getLogger(__name__)
Progress = Callable[[str, int, int], None]


@dataclass
class IndexReport:
    videos_indexed: int = 0
    skipped: list[Skipped] = field(default_factory=list)
    failed: list[Skipped] = field(default_factory=list)  # a setting to fix (the video stays new)
    unfinished: list[int] = field(default_factory=list)  # videos no worker finished while we waited
    held: list[Held] = field(default_factory=list)  # of those, the ones another holder still leases (issue 25)
    chunks: int = 0
    transcript_sources: Counter[str] = field(default_factory=Counter)  # source → chunks
    transcript_models: Counter[str] = field(default_factory=Counter)  # ASR model → chunks
    no_text: int = 0  # chunks with neither transcript nor on-screen text (still chunks)
    embedded: int = 0  # vectors computed now
    reused: int = 0  # vectors kept because their content and recipe did not change
    ocr_read: int = 0
    ocr_reused: int = 0
    frames: int = 0
    video_seconds: float = 0.0  # seconds of video indexed in full in this run
    warnings: list[str] = field(default_factory=list)
    segments: SegmentReport = field(default_factory=SegmentReport)
    seeds: SeedReport = field(default_factory=SeedReport)
    seconds: float = 0.0
    retried: list[int] = field(default_factory=list)  # videos skipped under other settings, tried again
    changed: file_changes.ChangeReport = field(default_factory=file_changes.ChangeReport)  # files changed in place


def pending_videos(engine: Engine, embedder: str) -> list[int]:
    """New videos, then indexed videos with a chunk that has no vector for ``embedder``."""
    with Session(engine) as session:
        new = list(session.exec(select(Video.id).where(Video.status == "new").order_by(col(Video.id))))
        vectored = select(ChunkVector.chunk_id).where(ChunkVector.embedder == embedder)
        lacking = list(session.exec(
            select(Chunk.video_id).join(Video, col(Video.id) == Chunk.video_id)
            .where(Video.status == "indexed", col(Chunk.id).not_in(vectored))
            .group_by(col(Chunk.video_id)).order_by(col(Chunk.video_id))
        ))
    return [v for v in new if v is not None] + [v for v in lacking if v is not None]


def retry_setting_skips(engine: Engine, key: str) -> list[int]:
    """Put back to "new" the videos skipped for a reason other than their file (a setting such as
    ``chunk_s = 0``, a crash) under index settings other than ``key``'s, so this run tries them again.
    Videos skipped because of the file itself stay skipped (`add` again after repairing it)."""
    with Session(engine) as session:
        skipped = list(session.exec(select(Video).where(Video.status == "skipped")))
    again = []
    for video in skipped:
        outcome = read_outcome(video.index_report)
        if outcome is None:
            continue
        # stores from before outcomes had a cause: anything but a MediaError was worded "indexing failed: …"
        cause = outcome.cause or ("error" if outcome.reason.startswith("indexing failed:") else "file")
        if cause != "file" and outcome.settings_key != key and video.id is not None:
            again.append(video.id)
    if again:
        with transaction(engine) as session:
            for video_id in again:
                row = session.get(Video, video_id)
                if row is not None and row.status == "skipped":
                    row.status, row.reason = "new", None
                    session.add(row)
    return again


def _check_settings(settings: Settings) -> Embedder:
    """Fail before any message is sent when a setting cannot work (each video would fail alike)."""
    cfg = settings.index
    check_backends(cfg)
    get_ocr(cfg)
    return get_embedder(cfg.embedder, cfg.embedding_dims, cfg)


def _outcomes(engine: Engine, video_ids: list[int], run: str) -> dict[int, tuple[Video, Outcome]]:
    found: dict[int, tuple[Video, Outcome]] = {}
    with Session(engine) as session:
        for start in range(0, len(video_ids), 500):
            for video in session.exec(select(Video).where(col(Video.id).in_(video_ids[start:start + 500]))):
                outcome = read_outcome(video.index_report)
                if outcome is not None and outcome.run == run and video.id is not None:
                    found[video.id] = (video, outcome)
    return found


#: how the videos reach workers: sends ``index_video(video, embedder, run)`` per video and serves or waits
#: until ``check()`` is true. The engine's (actors/indexing.py) is given from above: the index never imports
#: the engine, not even inside a function (``playlisteval.actors.indexing.index_collection`` wires it).
Dispatch = Callable[[Settings, Engine, list[int], str, str, Callable[[], bool]], None]


def index_videos(settings: Settings, engine: Engine, video_ids: list[int], embedder: str, run: str,
                 tick: Progress, dispatch: Dispatch) -> dict[int, tuple[Video, Outcome]]:
    """Have each video indexed (or re-embedded) under ``run`` by the engine's workers and wait until each has
    an outcome for ``run`` (or, with Redis, no video finished for ``wait_stall_s``); the outcomes found."""
    cfg = settings.index
    redis = is_redis(settings.broker.url)
    total, expected = len(video_ids), _expected_chunks(engine, video_ids, cfg)
    seen = {"done": -1, "changed": time.monotonic()}

    def check() -> bool:
        """Progress from the store; true when every video has its outcome, or no video finished for
        ``wait_stall_s`` with Redis (the rest is left to the workers, reported unfinished)."""
        found = _outcomes(engine, video_ids, run)
        _tick_chunks(tick, found, expected, run)
        if len(found) != seen["done"]:
            seen["done"], seen["changed"] = len(found), time.monotonic()
            tick("videos", len(found), total)
        if len(found) >= total:
            return True
        if redis and time.monotonic() - seen["changed"] > cfg.wait_stall_s:
            log.warning("index: no video finished for %.0f s; leaving the rest to the workers", cfg.wait_stall_s)
            return True
        return False

    if not redis:  # this process's threads read the videos: OCR gets the cores they leave idle
        share_cores(cfg, min(cfg.threads, total))
    try:
        dispatch(settings, engine, video_ids, embedder, run, check)
    finally:
        chunk_progress.forget(run)
    return _outcomes(engine, video_ids, run)


def _expected_chunks(engine: Engine, video_ids: list[int], cfg: IndexSettings) -> dict[int, int]:
    """Chunks each video will have: its stored chunks (re-embedding), else as many as its duration makes."""
    expected: dict[int, int] = {}
    with Session(engine) as session:
        for start in range(0, len(video_ids), 500):
            part = video_ids[start:start + 500]
            stored = dict(session.exec(select(Chunk.video_id, func.count(col(Chunk.id)))
                                       .where(col(Chunk.video_id).in_(part)).group_by(col(Chunk.video_id))).all())
            for video_id, duration in session.exec(select(Video.id, Video.duration).where(col(Video.id).in_(part))):
                if video_id is None:
                    continue
                planned = len(chunk_spans(duration, cfg.chunk_s, cfg.min_last_chunk_s)) \
                    if duration and cfg.chunk_s > 0 else 1
                expected[video_id] = int(stored.get(video_id) or planned)
    return expected


def _tick_chunks(tick: Progress, found: dict[int, tuple[Video, Outcome]], expected: dict[int, int],
                 run: str) -> None:
    """Chunks of finished videos (as counted) plus chunks read so far by this process's workers."""
    reading = chunk_progress.done_in(run)
    finished = sum(outcome.chunks for _, outcome in found.values())
    pending = [v for v in expected if v not in found]
    done = finished + sum(min(reading.get(v, 0), expected[v]) for v in pending)
    tick("chunks", done, finished + sum(expected[v] for v in pending))


def _collect(report: IndexReport, found: dict[int, tuple[Video, Outcome]], video_ids: list[int]) -> None:
    for video_id in video_ids:
        if video_id not in found:
            report.unfinished.append(video_id)
            continue
        video, outcome = found[video_id]
        report.warnings.extend(outcome.warnings)
        if outcome.status == "skipped":
            report.skipped.append(Skipped(video.path, outcome.reason))
            continue
        if outcome.status == "failed":
            report.failed.append(Skipped(video.path, outcome.reason))
            continue
        report.embedded += outcome.embedded
        report.reused += outcome.reused
        if outcome.full:
            report.videos_indexed += 1
            report.chunks += outcome.chunks
            report.transcript_sources[outcome.transcript_source] += outcome.chunks
            if outcome.transcript_model:
                report.transcript_models[outcome.transcript_model] += outcome.chunks
            report.no_text += outcome.no_text
            report.ocr_read += outcome.ocr_read
            report.ocr_reused += outcome.ocr_reused
            report.frames += outcome.frames
            report.video_seconds += video.duration or 0.0


def index_collection(settings: Settings, engine: Engine, progress: Progress | None = None, *,
                     dispatch: Dispatch, changed: list[file_changes.Changed] | None = None) -> IndexReport:
    """Index every video with work to do, then segments, duplicates and seeds; see the module doc.
    ``dispatch``: how videos reach workers (the engine's: ``playlisteval.actors.indexing.index_collection``);
    ``changed``: the videos changed in place as the caller found them (None: found here)."""
    started = time.monotonic()
    embedder = _check_settings(settings)
    report = IndexReport()
    report.changed = file_changes.reset(engine, file_changes.detect(engine) if changed is None else changed)
    tick: Progress = progress or (lambda stage, done, total: None)
    report.retried = retry_setting_skips(engine, settings_key(settings.index))
    todo = pending_videos(engine, embedder.name)
    tick("videos", 0, len(todo))
    if todo:
        run = uuid.uuid4().hex
        _collect(report, index_videos(settings, engine, todo, embedder.name, run, tick, dispatch), todo)
        report.held = held_videos(engine, report.unfinished)  # named: which, by whom, until when
    tick("segments", 0, 1)
    report.segments, new_videos = build_segments(engine, settings.index, embedder.name)
    mark_duplicates(engine, settings.index, embedder.name, new_videos, report.segments)
    tick("segments", 1, 1)
    tick("seeds", 0, 1)
    report.seeds = build_seeds(engine, settings.index, embedder.name)
    tick("seeds", 1, 1)
    for warning in report.warnings:
        # the report carries the warnings to whoever asked (the CLI prints them once); the log keeps them
        log.info(warning)
    report.seconds = time.monotonic() - started
    return report
