"""Segments (SPEC 0, A6) and near-duplicate videos (A7).

A segment is a run of consecutive chunks of one video, between ``segment_min_s`` and
``segment_max_s`` long; a video is cut into the fewest roughly equal parts that respect the maximum
(a clip given to a model is at most one segment), and a video shorter than the minimum is one
segment. Its vector is the mean of its chunks' vectors, renormalised. Chunks without text have zero
vectors and add nothing to the mean; a segment of only such chunks keeps a zero vector, which never
counts as a duplicate of anything nor forms a seed.

Only videos segmented in this run can become duplicates, each checked against every live segment
indexed before it, so an established video (maybe already holding seeds) never flips.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from playlisteval.config import IndexSettings
from playlisteval.index.embedders import normalize_rows
from playlisteval.index.vectors import decode, decode_many, encode
from playlisteval.store.engine import transaction
from playlisteval.store.tables import Chunk, ChunkVector, Segment, Video


@dataclass(frozen=True)
class Duplicate:
    video_id: int
    of_video_id: int
    similarity: float


@dataclass
class SegmentReport:
    videos: int = 0
    segments: int = 0
    duplicates: list[Duplicate] = field(default_factory=list)


def segment_bounds(spans: list[tuple[float, float]], min_s: float, max_s: float) -> list[tuple[int, int]]:
    """(first, last) chunk indices (inclusive) of each segment of a video whose chunks span ``spans``."""
    if not spans:
        return []
    n = len(spans)
    duration = spans[-1][1] - spans[0][0]
    parts = 1 if duration <= max(min_s, max_s) else math.ceil(duration / max_s)
    parts = max(1, min(parts, n))
    # equal chunk counts; the boundaries of part i are round(i * n / parts)
    edges = [round(i * n / parts) for i in range(parts + 1)]
    return [(edges[i], edges[i + 1] - 1) for i in range(parts) if edges[i + 1] > edges[i]]


def _video_segments(session: Session, video_id: int, embedder: str, settings: IndexSettings) -> list[Segment]:
    rows = session.exec(
        select(Chunk, ChunkVector)
        .join(ChunkVector, ChunkVector.chunk_id == Chunk.id)  # type: ignore[arg-type]
        .where(Chunk.video_id == video_id, ChunkVector.embedder == embedder)
        .order_by(Chunk.idx)  # type: ignore[arg-type]
    ).all()
    n_chunks = len(session.exec(select(Chunk.id).where(Chunk.video_id == video_id)).all())
    if not rows or len(rows) != n_chunks:
        return []  # not fully embedded with this embedder yet
    chunks = [c for c, _ in rows]
    matrix = decode_many([v.vector for _, v in rows], rows[0][1].dim)
    segments = []
    for idx, (first, last) in enumerate(
        segment_bounds([(c.start, c.end) for c in chunks], settings.segment_min_s, settings.segment_max_s)
    ):
        mean = normalize_rows(matrix[first:last + 1].mean(axis=0, keepdims=True))[0]
        segments.append(
            Segment(
                video_id=video_id, idx=idx, embedder=embedder, start=chunks[first].start,
                end=chunks[last].end, first_chunk=chunks[first].idx, last_chunk=chunks[last].idx,
                vector=encode(mean),
            )
        )
    return segments


def build_segments(engine: Engine, settings: IndexSettings, embedder: str) -> tuple[SegmentReport, list[int]]:
    """Segment every indexed video that has no segments for ``embedder``.

    Returns the report and the videos segmented for the first time under any embedder: only those
    are checked for duplicates, so switching embedders never re-judges established videos.
    """
    report = SegmentReport()
    with Session(engine) as session:
        seen = set(session.exec(select(Segment.video_id)).all())
        done = set(session.exec(select(Segment.video_id).where(Segment.embedder == embedder)).all())
        indexed = session.exec(select(Video.id).where(Video.status == "indexed").order_by(col(Video.id))).all()
        todo = [v for v in indexed if v not in done]
    new_videos: list[int] = []
    for video_id in todo:
        assert video_id is not None
        with Session(engine) as session:
            segments = _video_segments(session, video_id, embedder, settings)
        if not segments:
            continue
        with transaction(engine) as session:
            if session.exec(select(Segment.id).where(Segment.video_id == video_id,
                                                     Segment.embedder == embedder)).first():
                continue  # another process got here first
            session.add_all(segments)
        if segments:
            report.videos += 1
            report.segments += len(segments)
            if video_id not in seen:
                new_videos.append(video_id)
    return report, new_videos


def mark_duplicates(engine: Engine, settings: IndexSettings, embedder: str, video_ids: list[int],
                    report: SegmentReport) -> None:
    """Flag each of ``video_ids`` (in id order) that repeats an earlier live video (SPEC A7).

    The comparison runs in memory on one read; only the verdicts are written, in one short transaction.
    """
    with Session(engine) as session:
        rows = session.exec(
            select(Segment.id, Segment.video_id, Segment.vector, Video.title)
            .join(Video, Video.id == Segment.video_id)  # type: ignore[arg-type]
            .where(Segment.embedder == embedder, Video.status == "indexed")
            .order_by(Segment.id)  # type: ignore[arg-type]
        ).all()
    if not rows:
        return
    seg_ids = np.array([r[0] for r in rows])
    owners = np.array([r[1] for r in rows])
    titles = {r[1]: r[3] for r in rows}
    matrix = np.stack([decode(r[2]) for r in rows])
    batch = set(video_ids)
    dropped: set[int] = set()
    verdicts: list[tuple[Duplicate, dict[int, int]]] = []
    for video_id in sorted(batch):
        mine = owners == video_id
        # earlier: live videos outside this batch, and batch videos with a smaller id not dropped
        earlier = np.array([
            o != video_id and o not in dropped and (o not in batch or o < video_id) for o in owners
        ])
        if not mine.any() or not earlier.any():
            continue
        sims = matrix[mine] @ matrix[earlier].T
        best = float(sims.max())
        if best <= settings.near_duplicate:
            continue
        original = int(owners[earlier][np.unravel_index(int(np.argmax(sims)), sims.shape)[1]])
        cols = owners[earlier] == original
        # each segment of the copy points at its closest segment of the original; one without text
        # (a zero vector, equally far from all) points at the one in the same place
        targets = seg_ids[earlier][cols]
        links = {
            int(sid): int(targets[int(np.argmax(sims[r, cols]))] if sims[r, cols].max() > 0
                          else targets[min(r, len(targets) - 1)])
            for r, sid in enumerate(seg_ids[mine])
        }
        dropped.add(video_id)
        verdicts.append((Duplicate(video_id, original, best), links))
    if not verdicts:
        return
    with transaction(engine) as session:
        for dup, links in verdicts:
            video = session.get(Video, dup.video_id)
            if video is None or video.status != "indexed":
                continue
            video.status = "duplicate"
            video.reason = (
                f"near-duplicate of video {dup.of_video_id} ({titles.get(dup.of_video_id)!r}): "
                f"segment cosine {dup.similarity:.3f} > {settings.near_duplicate}"
            )
            session.add(video)
            for segment_id, original_segment in links.items():
                segment = session.get(Segment, segment_id)
                if segment is not None:
                    segment.duplicate_of = original_segment
                    session.add(segment)
            report.duplicates.append(dup)
