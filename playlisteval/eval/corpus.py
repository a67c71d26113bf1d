"""The corpus a judge's evidence is drawn from (SPEC G2): a whole domain, a frozen sub-corpus of it
that contains the question's gold segments, or only the two gold segments (the oracle).

A domain's videos are in playlist order (playlists as added, videos by their position), each with its
chunks in time order; every evidence mode keeps that order. The frozen corpora (24 h, 10 h, or any
name in ``[eval] scopes``) are per question: the videos holding the gold segments, then the longest
prefix of a seeded shuffle of the domain's other videos that fits in the scope's hours. The shuffle
depends only on the project seed and the item, so a corpus never changes between runs, and a shorter
scope is always inside a longer one.
"""

from __future__ import annotations

import random
import threading
from dataclasses import dataclass, replace

from sqlalchemy.engine import Engine
from sqlmodel import col, select

from playlisteval.config import Settings
from playlisteval.eval.scopes import check_scope
from playlisteval.store.engine import transaction
from playlisteval.store.tables import QA, Chunk, Domain, Item, Playlist, Seed, Segment, Video


@dataclass(frozen=True)
class CorpusChunk:
    chunk_id: int
    video_id: int
    idx: int  # position in its video
    start: float  # seconds in its video
    end: float
    transcript: str


@dataclass(frozen=True)
class CorpusVideo:
    video_id: int
    order: int  # position in the domain's playlist order
    path: str
    codec: str | None
    chunks: tuple[CorpusChunk, ...]

    @property
    def start(self) -> float:
        return self.chunks[0].start if self.chunks else 0.0

    @property
    def end(self) -> float:
        return self.chunks[-1].end if self.chunks else 0.0

    @property
    def seconds(self) -> float:
        return self.end - self.start


@dataclass(frozen=True)
class GoldSegment:
    segment_id: int
    video_id: int
    first_chunk: int  # chunk idx, inclusive
    last_chunk: int


@dataclass(frozen=True)
class Question:
    """An item as the evaluation sees it: its question, domain and gold segments."""

    item_id: int
    domain_id: int
    domain: str
    text: str
    gold: tuple[GoldSegment, GoldSegment]


def load_questions(engine: Engine, item_ids: list[int]) -> dict[int, Question]:
    """Each item's current question, domain and gold segments."""
    out: dict[int, Question] = {}
    with transaction(engine) as s:
        rows = s.exec(
            select(Item.id, QA.question, Seed, Domain.name)
            .join(QA, col(QA.id) == col(Item.current_qa_id))
            .join(Seed, col(Seed.id) == col(Item.seed_id))
            .join(Domain, col(Domain.id) == col(Seed.domain_id))
            .where(col(Item.id).in_(item_ids))
        ).all()
        seg_ids = [sid for _, _, seed, _ in rows for sid in (seed.segment1_id, seed.segment2_id)]
        segments = {g.id: g for g in s.exec(select(Segment).where(col(Segment.id).in_(seg_ids))).all()}
    for item_id, question, seed, domain in rows:
        gold = tuple(
            GoldSegment(int(g.id or 0), g.video_id, g.first_chunk, g.last_chunk)
            for g in (segments[seed.segment1_id], segments[seed.segment2_id])
        )
        out[int(item_id or 0)] = Question(int(item_id or 0), seed.domain_id, str(domain), str(question),
                                          (gold[0], gold[1]))
    return out


class Corpora:
    """Each domain's videos and chunks, read once per run (thread-safe)."""

    def __init__(self, engine: Engine, settings: Settings) -> None:
        self.engine = engine
        self.settings = settings
        self._domains: dict[int, list[CorpusVideo]] = {}
        self._lock = threading.Lock()

    def domain(self, domain_id: int) -> list[CorpusVideo]:
        with self._lock:
            if domain_id not in self._domains:
                self._domains[domain_id] = self._load(domain_id)
            return self._domains[domain_id]

    def _load(self, domain_id: int) -> list[CorpusVideo]:
        with transaction(self.engine) as s:
            videos = s.exec(
                select(Video).join(Playlist, col(Playlist.id) == col(Video.playlist_id))
                .where(Playlist.domain_id == domain_id, Video.status == "indexed")
                .order_by(col(Playlist.id), col(Video.position), col(Video.id))
            ).all()
            ids = [v.id for v in videos]
            chunks: dict[int, list[CorpusChunk]] = {}
            for c in s.exec(select(Chunk).where(col(Chunk.video_id).in_(ids))
                            .order_by(col(Chunk.video_id), col(Chunk.idx))).all():
                chunks.setdefault(c.video_id, []).append(
                    CorpusChunk(int(c.id or 0), c.video_id, c.idx, c.start, c.end, c.transcript))
        return [CorpusVideo(int(v.id or 0), i, v.path, v.codec, tuple(chunks.get(v.id or 0, ())))
                for i, v in enumerate(videos) if chunks.get(v.id or 0)]

    def scope(self, question: Question, scope: str) -> list[CorpusVideo]:
        """The videos (or, for the oracle, the gold segments' parts of them) of ``scope``, in order."""
        videos = self.domain(question.domain_id)
        if scope == "domain":
            return videos
        if scope == "oracle":
            return oracle_corpus(videos, question)
        hours = self.settings.eval.scopes.get(scope)
        if hours is None:
            check_scope(self.settings, scope)
        return frozen_corpus(videos, question, float(hours or 0), self.settings.project.seed)


def oracle_corpus(videos: list[CorpusVideo], question: Question) -> list[CorpusVideo]:
    """Only the two gold segments, each as a part of its video, in playlist (then time) order."""
    by_id = {v.video_id: v for v in videos}
    parts = []
    for g in question.gold:
        video = by_id.get(g.video_id)
        if video is None:
            continue  # the video left the collection (a duplicate): nothing of it can be shown
        kept = tuple(c for c in video.chunks if g.first_chunk <= c.idx <= g.last_chunk)
        parts.append(replace(video, chunks=kept))
    return sorted((p for p in parts if p.chunks), key=lambda p: (p.order, p.start))


def frozen_corpus(videos: list[CorpusVideo], question: Question, hours: float, seed: int) -> list[CorpusVideo]:
    """The gold videos plus the longest prefix of a seeded shuffle of the others that fits in ``hours``."""
    gold_ids = {g.video_id for g in question.gold}
    budget = hours * 3600.0
    total = sum(v.seconds for v in videos if v.video_id in gold_ids)
    others = [v for v in videos if v.video_id not in gold_ids]
    random.Random(f"{seed}:scope:{question.item_id}").shuffle(others)
    chosen = set(gold_ids)
    for video in others:
        if total + video.seconds > budget:
            break  # a prefix, not a best fit: a shorter scope stays inside a longer one
        chosen.add(video.video_id)
        total += video.seconds
    return [v for v in videos if v.video_id in chosen]
