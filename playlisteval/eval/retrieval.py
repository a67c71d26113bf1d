"""Retriever runs (SPEC R1, R4): for each question, rank its domain's ground-truth segments by the mean
of each segment's ``segment_top_chunks`` (3) best chunk similarities to the question, and store the
ranks of its two gold segments.

The segments are the build's (the gold segments' embedder fixes their boundaries); the chunk vectors
are the evaluated embedder's, computed now for any video that lacks them. Questions are the
benchmark's first-level sample (SPEC F3: paper 343), or every accepted item with ``all_items``.
Ranks are 1-based; ties go to the lower segment id, so a run is deterministic.

A question that cannot be ranked — its domain's vectors cannot be made, its query cannot be embedded,
or a gold segment is not among the domain's segments any more — is an error of the run (issue 9),
never a miss: it is stored in ``retrieval_error``, left out of every mean, and counted beside them.
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from sqlalchemy.engine import Engine
from sqlmodel import col, select

from playlisteval.benchmark.pairs import find_benchmark, finished_items
from playlisteval.config import Settings
from playlisteval.errors import ConfigError, PlaylistEvalError
from playlisteval.eval import metrics
from playlisteval.eval.corpus import Question, load_questions
from playlisteval.index.embedders import Embedder, get_embedder
from playlisteval.index.vectors import decode_many
from playlisteval.index.work import index_video
from playlisteval.store import open_store
from playlisteval.store.engine import transaction
from playlisteval.store.tables import (
    BenchmarkQuestion,
    Chunk,
    ChunkVector,
    Playlist,
    Ranking,
    RetrievalError,
    RetrievalRun,
    Segment,
    Video,
    now,
)

Tick = Callable[[str, int, int], None]


@dataclass
class DomainSegments:
    segment_ids: np.ndarray  # (n_segments,)
    rows: np.ndarray  # (n_segments, longest) chunk rows into ``matrix``; -1 pads
    matrix: np.ndarray  # (n_chunks, dims)


@dataclass
class RetrievalSummary:
    run_id: int
    embedder: str
    questions: int  # questions ranked; the means are over them
    k: int
    hit_both: float | None  # None when no question could be ranked
    hit_any: float | None
    ndcg: float | None
    mean_segments: float | None
    latency_ms: float
    dims: int
    chunks: int
    errors: int = 0  # questions that could not be ranked: errors, not misses
    error_messages: list[str] = field(default_factory=list)


class GoldMissing(PlaylistEvalError):
    """A gold segment is not among its domain's segments (marked a duplicate or removed since the build)."""


#: failures of one domain or question that leave the run going (a bad setting still stops it)
QUESTION_FAILURES: tuple[type[BaseException], ...] = (PlaylistEvalError, OSError, RuntimeError, ValueError)


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def rank_segments(domain: DomainSegments, query: np.ndarray, top: int) -> tuple[np.ndarray, np.ndarray]:
    """(segment ids best first, their scores): each segment's score is the mean of its ``top`` best chunks."""
    sims = domain.matrix @ np.asarray(query, dtype=np.float32)
    valid = domain.rows >= 0
    values = np.where(valid, sims[np.where(valid, domain.rows, 0)], -np.inf)
    best = -np.sort(-values, axis=1)[:, :top]
    counts = np.minimum(valid.sum(axis=1), top)
    totals = np.where(np.isfinite(best), best, 0.0).sum(axis=1)
    scores = np.where(counts > 0, totals / np.maximum(counts, 1), -np.inf)
    order = np.lexsort((domain.segment_ids, -scores))
    return domain.segment_ids[order], scores[order]


def _domain_segments(settings: Settings, engine: Engine, embedder: Embedder, domain_id: int,
                     segment_embedder: str, tick: Tick | None) -> DomainSegments:
    with transaction(engine) as s:
        videos = s.exec(select(Video.id).join(Playlist, col(Playlist.id) == col(Video.playlist_id))
                        .where(Playlist.domain_id == domain_id, Video.status == "indexed")
                        .order_by(col(Video.id))).all()
        embedded = set(s.exec(select(Chunk.video_id).join(ChunkVector, col(ChunkVector.chunk_id) == col(Chunk.id))
                              .where(col(Chunk.video_id).in_(videos), ChunkVector.embedder == embedder.name)).all())
    missing = [int(v or 0) for v in videos if v not in embedded]
    run = f"eval-retrieve-{uuid.uuid4().hex[:8]}"
    for i, video_id in enumerate(missing):  # vectors this embedder lacks: made by the index, kept in the store
        if tick:
            tick("embedding chunks", i, len(missing))
        index_video(settings, engine, video_id, embedder.name, run, f"{socket.gethostname()}:{os.getpid()}")
    with transaction(engine) as s:
        segments = s.exec(select(Segment).where(col(Segment.video_id).in_(videos),
                                                Segment.embedder == segment_embedder,
                                                col(Segment.duplicate_of).is_(None))
                          .order_by(col(Segment.id))).all()
        vectors = s.exec(select(Chunk.video_id, Chunk.idx, ChunkVector.vector)
                         .join(ChunkVector, col(ChunkVector.chunk_id) == col(Chunk.id))
                         .where(col(Chunk.video_id).in_(videos), ChunkVector.embedder == embedder.name)
                         .order_by(col(Chunk.video_id), col(Chunk.idx))).all()
    row_of = {(int(v), int(i)): r for r, (v, i, _) in enumerate(vectors)}
    matrix = decode_many([b for _, _, b in vectors], embedder.dim)
    members = [[row_of[(g.video_id, i)] for i in range(g.first_chunk, g.last_chunk + 1) if (g.video_id, i) in row_of]
               for g in segments]
    width = max((len(m) for m in members), default=0) or 1
    rows = np.full((len(segments), width), -1, dtype=np.int64)
    for r, m in enumerate(members):
        rows[r, : len(m)] = m
    return DomainSegments(np.array([int(g.id or 0) for g in segments], dtype=np.int64), rows, matrix)


def _questions(engine: Engine, settings: Settings, benchmark: str | None, all_items: bool) -> tuple[int, list[int]]:
    if all_items:
        return 0, sorted(i for ids in finished_items(engine).values() for i in ids)
    bench = find_benchmark(engine, benchmark or settings.select.benchmark)
    with transaction(engine) as s:
        items = s.exec(select(BenchmarkQuestion.item_id).where(BenchmarkQuestion.benchmark_id == bench.id)).all()
    return int(bench.id or 0), sorted(int(i) for i in items)


def run_retrieval(settings: Settings, embedder: str | None = None, benchmark: str | None = None, *,
                  all_items: bool = False, tick: Tick | None = None) -> RetrievalSummary:
    engine = open_store(settings)
    emb = get_embedder(embedder or settings.index.embedder, settings.index.embedding_dims, settings.index)
    cfg = settings.eval
    benchmark_id, item_ids = _questions(engine, settings, benchmark, all_items)
    questions = load_questions(engine, item_ids)
    if not questions:
        raise ConfigError("no questions to rank: run `playlisteval select` (or use --all after a build)")
    with transaction(engine) as s:
        first = next(iter(questions.values())).gold[0].segment_id
        seg = s.get(Segment, first)
        segment_embedder = seg.embedder if seg else settings.index.embedder
    by_domain: dict[int, list[Question]] = defaultdict(list)
    for q in questions.values():
        by_domain[q.domain_id].append(q)
    run_settings = {"top_chunks": cfg.segment_top_chunks, "segments_of": segment_embedder,
                    "questions": "all accepted" if all_items else "benchmark",
                    "frames_per_chunk": settings.index.frames_per_chunk}  # SPEC R4 (paper Fig. 8)
    with transaction(engine) as s:
        run = RetrievalRun(embedder=emb.name, k=cfg.retrieval_k, settings=run_settings, benchmark_id=benchmark_id,
                           dims=emb.dim)
        s.add(run)
        s.flush()
        run_id = int(run.id or 0)
    emb.embed_texts(["warm-up"])  # a model loads on first use: not part of any query's latency (R4)
    rankings: list[Ranking] = []
    failed: dict[int, str] = {}
    seconds: list[float] = []
    chunks = 0
    done = 0
    for domain_id, qs in sorted(by_domain.items()):
        try:
            domain = _domain_segments(settings, engine, emb, domain_id, segment_embedder, tick)
        except ConfigError:
            raise
        except QUESTION_FAILURES as exc:  # the domain cannot be ranked: each of its questions is an error
            failed.update({q.item_id: f"domain segments: {_describe(exc)}" for q in qs})
            done += len(qs)
            continue
        chunks += domain.matrix.shape[0]
        for q in sorted(qs, key=lambda x: x.item_id):
            try:
                rankings.append(_rank(q, emb, domain, run_id, cfg.segment_top_chunks, cfg.retrieval_k, seconds))
            except ConfigError:
                raise
            except QUESTION_FAILURES as exc:
                failed[q.item_id] = _describe(exc)
            done += 1
            if tick:
                tick("ranking", done, len(questions))
    with transaction(engine) as s:
        s.add_all(rankings)
        s.add_all([RetrievalError(run_id=run_id, item_id=item_id, error=error) for item_id, error in failed.items()])
        row = s.get(RetrievalRun, run_id)
        assert row is not None
        row.chunks, row.index_bytes = chunks, chunks * emb.dim * 4
        row.latency_ms = 1000 * sum(seconds) / len(seconds) if seconds else 0.0
        row.finished_at = now()
        s.add(row)
    k = cfg.retrieval_k

    def mean(values: list[float]) -> float | None:
        return float(np.mean(values)) if values else None

    return RetrievalSummary(
        run_id=run_id, embedder=emb.name, questions=len(rankings), k=k,
        hit_both=mean([float(max(r.rank1, r.rank2) <= k) for r in rankings]),
        hit_any=mean([float(min(r.rank1, r.rank2) <= k) for r in rankings]),
        ndcg=mean([metrics.ndcg_from_ranks([r.rank1, r.rank2], k) for r in rankings]),
        mean_segments=mean([float(r.n_segments) for r in rankings]),
        latency_ms=1000 * sum(seconds) / len(seconds) if seconds else 0.0, dims=emb.dim, chunks=chunks,
        errors=len(failed), error_messages=[m for m, _ in Counter(failed.values()).most_common()],
    )


def _rank(q: Question, emb: Embedder, domain: DomainSegments, run_id: int, top: int, k: int,
          seconds: list[float]) -> Ranking:
    """One question's ranking of its domain's segments; a gold segment not among them is an error."""
    started = time.perf_counter()
    query = emb.embed_texts([q.text])[0]
    order, scores = rank_segments(domain, query, top)
    seconds.append(time.perf_counter() - started)
    rank_of = {int(sid): r + 1 for r, sid in enumerate(order)}
    g1, g2 = q.gold[0].segment_id, q.gold[1].segment_id
    missing = [g for g in (g1, g2) if g not in rank_of]
    if missing:
        raise GoldMissing(f"gold segment(s) {', '.join(map(str, missing))} of item {q.item_id} are not among the "
                          "domain's segments (marked duplicates or removed since the build)")
    return Ranking(run_id=run_id, item_id=q.item_id, rank1=rank_of[g1], rank2=rank_of[g2], n_segments=len(order),
                   segment1_id=g1, segment2_id=g2, score1=float(scores[rank_of[g1] - 1]),
                   score2=float(scores[rank_of[g2] - 1]), top_segments=[int(x) for x in order[:k]])
