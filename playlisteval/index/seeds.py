"""Seeds: pairs of segments one question is built from (SPEC P1, P2).

Two segments of one domain (of one playlist when ``seeds_same_playlist``) pair up when their cosine
lies in [seed_similarity_min, seed_similarity_max]: related enough to share a question, distinct
enough to need both. Within one video the gap between them must be at least ``seed_min_gap_s``.
Segments of videos that are not live (duplicates, skipped) never seed.

Clip 1 is the segment that comes first in playlist order (playlist, video position, segment index);
pairs are inserted in that order, so a rebuild produces the same seeds with the same ids. Re-running
inserts only pairs the store does not hold yet.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from playlisteval.config import IndexSettings
from playlisteval.index.vectors import decode
from playlisteval.store.engine import transaction
from playlisteval.store.tables import Playlist, Seed, Segment, Video

_BATCH = 1000  # rows per insert transaction: keeps each write lock to milliseconds


@dataclass
class SeedReport:
    candidates: int = 0  # pairs that satisfy the rules now
    inserted: int = 0  # of which new in this run


@dataclass(frozen=True)
class _Seg:
    id: int
    domain_id: int
    playlist_id: int
    video_id: int
    position: int
    idx: int
    start: float
    end: float


def seed_pairs(
    segments: list[_Seg], matrix: np.ndarray, settings: IndexSettings
) -> list[tuple[int, int, float]]:
    """(segment1 id, segment2 id, cosine) for every qualifying pair of ``segments`` (already in order)."""
    sims = matrix @ matrix.T
    lo, hi = settings.seed_similarity_min, settings.seed_similarity_max
    pairs: list[tuple[int, int, float]] = []
    rows, cols = np.nonzero(np.triu((sims >= lo) & (sims <= hi), k=1))
    for i, j in zip(rows.tolist(), cols.tolist(), strict=True):
        a, b = segments[i], segments[j]
        if a.domain_id != b.domain_id:
            continue
        if settings.seeds_same_playlist and a.playlist_id != b.playlist_id:
            continue
        if a.video_id == b.video_id:
            gap = max(a.start, b.start) - min(a.end, b.end)
            if gap < settings.seed_min_gap_s:
                continue
        pairs.append((a.id, b.id, float(sims[i, j])))
    return pairs


def _load(engine: Engine, embedder: str) -> tuple[list[_Seg], np.ndarray]:
    with Session(engine) as session:
        rows = session.exec(
            select(Segment, Video, Playlist)
            .join(Video, Video.id == Segment.video_id)  # type: ignore[arg-type]
            .join(Playlist, Playlist.id == Video.playlist_id)  # type: ignore[arg-type]
            .where(Segment.embedder == embedder, Video.status == "indexed",
                   Segment.duplicate_of == None)  # noqa: E711  (SQL IS NULL)
        ).all()
    rows = sorted(rows, key=lambda r: (r[2].domain_id, r[2].id, r[1].position, r[1].id, r[0].idx))
    segs = [
        _Seg(s.id, p.domain_id, p.id, v.id, v.position, s.idx, s.start, s.end)  # type: ignore[arg-type]
        for s, v, p in rows
    ]
    dim = len(rows[0][0].vector) // 4 if rows else 0
    matrix = np.stack([decode(s.vector) for s, _, _ in rows]) if rows else np.zeros((0, dim), np.float32)
    return segs, matrix


def build_seeds(engine: Engine, settings: IndexSettings, embedder: str) -> SeedReport:
    """Insert the seeds the store lacks; one domain (or playlist) block of the similarity matrix at a time."""
    report = SeedReport()
    segs, matrix = _load(engine, embedder)
    groups: dict[tuple[int, int], list[int]] = {}
    for i, seg in enumerate(segs):
        key = (seg.domain_id, seg.playlist_id if settings.seeds_same_playlist else 0)
        groups.setdefault(key, []).append(i)
    pairs: list[tuple[int, int, int, float]] = []
    for (domain_id, _), members in groups.items():
        found = seed_pairs([segs[i] for i in members], matrix[members], settings)
        pairs.extend((domain_id, a, b, sim) for a, b, sim in found)
    report.candidates = len(pairs)
    with Session(engine) as session:
        existing = {(s1, s2) for s1, s2 in session.exec(select(Seed.segment1_id, Seed.segment2_id)).all()}
    # a pair stored the other way round (playlist reordered since) is the same seed
    new = [p for p in pairs if (p[1], p[2]) not in existing and (p[2], p[1]) not in existing]
    for start in range(0, len(new), _BATCH):
        with transaction(engine) as session:
            session.add_all(
                Seed(domain_id=d, segment1_id=a, segment2_id=b, similarity=sim)
                for d, a, b, sim in new[start:start + _BATCH]
            )
        report.inserted += len(new[start:start + _BATCH])
    return report
