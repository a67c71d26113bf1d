"""`playlisteval index`: chunks, transcripts, vectors, segments, near-duplicates, seeds (SPEC A4–A7, P).

Per new video: probe → exact chunks → transcripts (captions, else ASR) → vectors → status "indexed".
Decoding, ASR and embedding run outside any transaction; each video's results are written in short
transactions, and a video is marked indexed only after its vectors are stored, so a crash leaves it
"new" and the next run redoes only what is missing (vectors whose text is unchanged are kept).
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, delete, select

from playlisteval.config import IndexSettings, Settings
from playlisteval.errors import ConfigError, MediaError
from playlisteval.index.asr import transcribe
from playlisteval.index.captions import find_sidecar, read_captions, text_between
from playlisteval.index.chunking import chunk_spans
from playlisteval.index.collection import Skipped
from playlisteval.index.embedders import Embedder, get_embedder
from playlisteval.index.search import Hit, search
from playlisteval.index.seeds import SeedReport, build_seeds
from playlisteval.index.segments import SegmentReport, build_segments, mark_duplicates
from playlisteval.index.vectors import content_hash, encode
from playlisteval.media.probe import probe
from playlisteval.store.engine import transaction
from playlisteval.store.tables import Chunk, ChunkVector, Video

__all__ = ["IndexReport", "Hit", "index_collection", "search", "embed_video", "chunk_text"]

log = logging.getLogger(__name__)
Progress = Callable[[str, int, int], None]


@dataclass
class IndexReport:
    videos_indexed: int = 0
    skipped: list[Skipped] = field(default_factory=list)
    chunks: int = 0
    transcript_sources: Counter[str] = field(default_factory=Counter)  # source → chunks
    embedded: int = 0  # vectors computed now
    reused: int = 0  # vectors kept because their text and embedder did not change
    warnings: list[str] = field(default_factory=list)
    segments: SegmentReport = field(default_factory=SegmentReport)
    seeds: SeedReport = field(default_factory=SeedReport)
    seconds: float = 0.0


def chunk_text(chunk: Chunk) -> str:
    """What a chunk's vector is computed from: its transcript and its on-screen text."""
    return "\n".join(part for part in (chunk.transcript.strip(), chunk.ocr_text.strip()) if part)


def _transcripts(video: Video, spans: list[tuple[float, float]], has_audio: bool, asr: str,
                 report: IndexReport) -> tuple[list[str], str, str | None]:
    """(one transcript per span, source, captions path): captions when present, else ASR."""
    captions = Path(video.captions_path) if video.captions_path else None
    if captions is None or not captions.is_file():
        captions = find_sidecar(video.path)  # a sidecar may have appeared (or moved) since `add`
    if captions is not None:
        try:
            cues = read_captions(captions)
            return [text_between(cues, s, e) for s, e in spans], "captions", str(captions)
        except MediaError as exc:
            report.warnings.append(f"{video.path}: captions unreadable ({exc.reason}); using ASR")
    if not has_audio:
        report.warnings.append(f"{video.path}: no audio track and no captions; empty transcript")
        return ["" for _ in spans], "none", None
    try:
        words = transcribe(video.path, asr)
    except ConfigError:
        raise  # an unknown backend is the user's setting to fix, not this video's fault
    except Exception as exc:  # a failed ASR must not stop the collection (SPEC A2)
        reason = exc.reason if isinstance(exc, MediaError) else f"{type(exc).__name__}: {exc}"
        report.warnings.append(f"{video.path}: ASR ({asr}) failed ({reason}); empty transcript")
        return ["" for _ in spans], "none", None
    return [text_between(words, s, e) for s, e in spans], asr, None


def _store_chunks(engine: Engine, video_id: int, spans: list[tuple[float, float]], texts: list[str],
                  source: str) -> None:
    """Upsert the video's chunks by index; a row whose text is unchanged keeps its vectors."""
    with transaction(engine) as session:
        existing = {c.idx: c for c in session.exec(select(Chunk).where(Chunk.video_id == video_id)).all()}
        for idx, ((start, end), text) in enumerate(zip(spans, texts, strict=True)):
            chunk = existing.pop(idx, None) or Chunk(video_id=video_id, idx=idx, start=start, end=end)
            chunk.start, chunk.end, chunk.transcript, chunk.transcript_source = start, end, text, source
            session.add(chunk)
        stale = [c.id for c in existing.values()]  # chunks past a (now shorter) end
        if stale:
            session.exec(delete(ChunkVector).where(ChunkVector.chunk_id.in_(stale)))  # type: ignore[attr-defined]
            session.exec(delete(Chunk).where(Chunk.id.in_(stale)))  # type: ignore[union-attr]


def embed_video(engine: Engine, embedder: Embedder, video_id: int) -> tuple[int, int]:
    """Store a vector per chunk of the video for ``embedder``; (computed, reused).

    A chunk with no text gets a zero vector: it has no direction, so it matches nothing.
    """
    with Session(engine) as session:
        chunks = session.exec(select(Chunk).where(Chunk.video_id == video_id).order_by(col(Chunk.idx))).all()
        have = {
            v.chunk_id: v.content_hash
            for v in session.exec(
                select(ChunkVector).where(
                    ChunkVector.embedder == embedder.name,
                    ChunkVector.chunk_id.in_([c.id for c in chunks]),  # type: ignore[attr-defined]
                )
            ).all()
        }
    name = embedder.name
    todo = [(c, text) for c in chunks if have.get(c.id or 0) != content_hash(text := chunk_text(c), name)]
    if not todo:
        return 0, len(chunks)
    vectors = np.zeros((len(todo), embedder.dim), dtype=np.float32)
    rows = [i for i, (_, text) in enumerate(todo) if text]
    if rows:
        vectors[rows] = embedder.embed_texts([todo[i][1] for i in rows])
    with transaction(engine) as session:
        stored = {
            v.chunk_id: v
            for v in session.exec(
                select(ChunkVector).where(
                    ChunkVector.embedder == name,
                    ChunkVector.chunk_id.in_([c.id for c, _ in todo]),  # type: ignore[attr-defined]
                )
            ).all()
        }
        for (chunk, text), vector in zip(todo, vectors, strict=True):
            assert chunk.id is not None
            row = stored.get(chunk.id) or ChunkVector(
                chunk_id=chunk.id, embedder=name, dim=embedder.dim, content_hash="", vector=b""
            )
            row.dim, row.content_hash, row.vector = embedder.dim, content_hash(text, name), encode(vector)
            session.add(row)
    return len(rows), len(chunks) - len(todo)


def _index_video(engine: Engine, cfg: IndexSettings, embedder: Embedder, video: Video,
                 report: IndexReport) -> None:
    assert video.id is not None
    try:
        info = probe(video.path)
    except MediaError as exc:
        with transaction(engine) as session:
            row = session.get(Video, video.id)
            if row is not None and row.status == "new":
                row.status, row.reason = "skipped", exc.reason
                session.add(row)
        report.skipped.append(Skipped(video.path, exc.reason))
        return
    spans = chunk_spans(info.duration, cfg.chunk_s, cfg.min_last_chunk_s)
    texts, source, captions = _transcripts(video, spans, info.has_audio, cfg.asr, report)
    _store_chunks(engine, video.id, spans, texts, source)
    computed, reused = embed_video(engine, embedder, video.id)
    with transaction(engine) as session:
        row = session.get(Video, video.id)
        if row is not None and row.status == "new":
            row.status, row.reason, row.duration, row.captions_path = "indexed", None, info.duration, captions
            session.add(row)
    report.videos_indexed += 1
    report.chunks += len(spans)
    report.transcript_sources[source] += len(spans)
    report.embedded += computed
    report.reused += reused


def index_collection(settings: Settings, engine: Engine, progress: Progress | None = None) -> IndexReport:
    """Index every new video, embed what the configured embedder lacks, then segments, duplicates, seeds."""
    started = time.monotonic()
    cfg = settings.index
    embedder = get_embedder(cfg.embedder, cfg.embedding_dims)
    report = IndexReport()
    tick: Progress = progress or (lambda stage, done, total: None)
    with Session(engine) as session:
        new = session.exec(select(Video).where(Video.status == "new").order_by(col(Video.id))).all()
        # videos indexed earlier (maybe with another embedder) whose vectors this embedder lacks
        indexed = session.exec(select(Video.id).where(Video.status == "indexed").order_by(col(Video.id))).all()
    for done, video in enumerate(new):
        tick("videos", done, len(new))
        _index_video(engine, cfg, embedder, video, report)
    tick("videos", len(new), len(new))
    for done, video_id in enumerate(indexed):
        tick("vectors", done, len(indexed))
        assert video_id is not None
        computed, reused = embed_video(engine, embedder, video_id)
        report.embedded += computed
        report.reused += reused
    tick("segments", 0, 1)
    report.segments, new_videos = build_segments(engine, cfg, embedder.name)
    mark_duplicates(engine, cfg, embedder.name, new_videos, report.segments)
    tick("seeds", 0, 1)
    report.seeds = build_seeds(engine, cfg, embedder.name)
    tick("seeds", 1, 1)
    for warning in report.warnings:
        log.warning(warning)
    report.seconds = time.monotonic() - started
    return report
