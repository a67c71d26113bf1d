"""One block of a retriever run's questions (SPEC R1, R4): the ``retrieve_questions`` actor's work.

A block is up to ``BLOCK`` questions of one domain. Its questions are embedded as one batch and scored
against every chunk of the domain with one matrix product; each question then ranks the domain's segments
by the mean of each segment's ``top`` (3) best chunk similarities. Ties go to the lower segment id, so a
run is deterministic. A question that cannot be ranked (its domain cannot be read, its text cannot be
embedded, a gold segment is not among the domain's segments) is an error of the run, stored in
``retrieval_error``, never a miss. The block's rankings and errors are written in one transaction that
first removes whatever an earlier delivery of the same block wrote, so a job done twice stores it once.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import delete
from sqlalchemy.engine import Engine
from sqlmodel import col, select

from playlisteval.actors import jobs
from playlisteval.config import Settings
from playlisteval.errors import ConfigError, PlaylistEvalError, StateError
from playlisteval.eval.corpus import Question, load_questions
from playlisteval.index.embedders import Embedder, get_embedder
from playlisteval.index.vectors import decode_many
from playlisteval.logs import get_logger
from playlisteval.models.runner import Runner
from playlisteval.store.engine import transaction
from playlisteval.store.tables import (
    Chunk,
    ChunkVector,
    Playlist,
    Ranking,
    RetrievalError,
    RetrievalRun,
    Segment,
    Video,
)

log = get_logger(__name__)

BLOCK = 64  # questions per job: one embedding batch and one matrix product each
#: failures of one domain or question that leave the run going (a bad setting still stops it)
QUESTION_FAILURES: tuple[type[BaseException], ...] = (PlaylistEvalError, OSError, RuntimeError, ValueError)


@dataclass
class DomainSegments:
    segment_ids: np.ndarray  # (n_segments,)
    rows: np.ndarray  # (n_segments, longest) chunk rows into ``matrix``; -1 pads
    matrix: np.ndarray  # (n_chunks, dims)


class GoldMissing(PlaylistEvalError):
    """A gold segment is not among its domain's segments (marked a duplicate or removed since the build)."""


def describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _order(domain: DomainSegments, sims: np.ndarray, top: int) -> tuple[np.ndarray, np.ndarray]:
    """(segment ids best first, their scores) from one query's similarity to every chunk."""
    valid = domain.rows >= 0
    values = np.where(valid, sims[np.where(valid, domain.rows, 0)], -np.inf)
    best = -np.sort(-values, axis=1)[:, :top]
    counts = np.minimum(valid.sum(axis=1), top)
    totals = np.where(np.isfinite(best), best, 0.0).sum(axis=1)
    scores = np.where(counts > 0, totals / np.maximum(counts, 1), -np.inf)
    order = np.lexsort((domain.segment_ids, -scores))
    return domain.segment_ids[order], scores[order]


def rank_segments(domain: DomainSegments, query: np.ndarray, top: int) -> tuple[np.ndarray, np.ndarray]:
    """(segment ids best first, their scores): each segment's score is the mean of its ``top`` best chunks."""
    return _order(domain, domain.matrix @ np.asarray(query, dtype=np.float32), top)


def rank_segments_many(domain: DomainSegments, queries: np.ndarray, top: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """``rank_segments`` for a batch of queries (one row each), scored with one matrix product."""
    sims = np.atleast_2d(np.asarray(queries, dtype=np.float32)) @ domain.matrix.T
    return [_order(domain, row, top) for row in sims]


def domain_videos(engine: Engine, domain_id: int) -> list[int]:
    with transaction(engine) as s:
        return [int(v or 0) for v in s.exec(
            select(Video.id).join(Playlist, col(Playlist.id) == col(Video.playlist_id))
            .where(Playlist.domain_id == domain_id, Video.status == "indexed").order_by(col(Video.id))).all()]


def load_domain(engine: Engine, embedder: Embedder, domain_id: int, segment_embedder: str) -> DomainSegments:
    """The domain's live segments and the evaluated embedder's vectors of their chunks, read from the store."""
    videos = domain_videos(engine, domain_id)
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


# a run's domains, read once per process (a domain's blocks come to the same worker often); the vectors do
# not change during a run (the coordinator made the missing ones before sending any block). Blocks are sent
# in domain order, so two domains cover a worker's threads; more would hold a large domain's matrix (100k x
# 1024 float32 is 400 MB) in a long-lived worker for nothing
_domains: OrderedDict[tuple[str, int, int], DomainSegments] = OrderedDict()
_loading: dict[tuple[str, int, int], threading.Lock] = {}
_lock = threading.Lock()
_KEEP = 2
_warm: set[str] = set()


def _domain(engine: Engine, embedder: Embedder, run_id: int, domain_id: int, segment_embedder: str) -> DomainSegments:
    key = (str(engine.url), run_id, domain_id)
    with _lock:
        one = _loading.setdefault(key, threading.Lock())
    with one:  # two threads on blocks of one domain read it once
        with _lock:
            if key in _domains:
                _domains.move_to_end(key)
                return _domains[key]
        domain = load_domain(engine, embedder, domain_id, segment_embedder)
        with _lock:
            _domains[key] = domain
            while len(_domains) > _KEEP:
                old, _ = _domains.popitem(last=False)
                _loading.pop(old, None)
        return domain


def _embed(embedder: Embedder, questions: list[Question], failed: dict[int, str]) -> tuple[list[Question], np.ndarray]:
    """The questions' vectors as one batch; when the batch fails, one by one, so only the questions that
    cannot be embedded are errors."""
    try:
        return questions, np.atleast_2d(embedder.embed_texts([q.text for q in questions]))
    except ConfigError:
        raise
    except QUESTION_FAILURES as exc:
        log.warning("retrieve.batch_failed", questions=len(questions), error=describe(exc))
    kept, vectors = [], []
    for q in questions:
        try:
            vectors.append(embedder.embed_texts([q.text])[0])
            kept.append(q)
        except ConfigError:
            raise
        except QUESTION_FAILURES as exc:
            failed[q.item_id] = describe(exc)
    return kept, np.stack(vectors) if vectors else np.zeros((0, embedder.dim), dtype=np.float32)


def _ranking(q: Question, order: np.ndarray, scores: np.ndarray, run_id: int, k: int) -> Ranking:
    """One question's ranking; a gold segment not among the domain's segments is an error."""
    rank_of = {int(sid): r + 1 for r, sid in enumerate(order)}
    g1, g2 = q.gold[0].segment_id, q.gold[1].segment_id
    missing = [g for g in (g1, g2) if g not in rank_of]
    if missing:
        raise GoldMissing(f"gold segment(s) {', '.join(map(str, missing))} of item {q.item_id} are not among the "
                          "domain's segments (marked duplicates or removed since the build)")
    return Ranking(run_id=run_id, item_id=q.item_id, rank1=rank_of[g1], rank2=rank_of[g2], n_segments=len(order),
                   segment1_id=g1, segment2_id=g2, score1=float(scores[rank_of[g1] - 1]),
                   score2=float(scores[rank_of[g2] - 1]), top_segments=[int(x) for x in order[:k]])


def single_query_ms(embedder: Embedder, domain: DomainSegments, block: list[Question], top: int) -> list[float]:
    """Each question asked again on its own, as a user's query is (embed one text, rank the domain's segments),
    and timed: the latencies behind p50/p95 (paper Table 4). The batch above is what is stored; a batch
    shares its cost among its questions, which is throughput, not what one query waits."""
    out = []
    for q in block:
        started = time.perf_counter()
        try:
            rank_segments(domain, embedder.embed_texts([q.text])[0], top)
        except QUESTION_FAILURES:  # ranked in the batch already: only its timing is lost
            continue
        out.append(1000 * (time.perf_counter() - started))
    return out


def retrieve_job(settings: Settings, engine: Engine, runner: Runner, job: jobs.Job) -> dict[str, Any]:
    """One block of a retriever run (the ``retrieve_questions`` actor's work): ranks and errors stored;
    returns the block's counts, its domain's chunks and the seconds its queries took (embed + rank)."""
    p = job.payload
    items = [int(i) for i in p["items"]]
    with transaction(engine) as s:
        if s.get(RetrievalRun, job.run_id) is None:
            raise StateError(f"retrieval run {job.run_id} is gone")
    embedder = get_embedder(p["embedder"], settings.index.embedding_dims, settings.index)
    if embedder.dim != int(p["dims"]):
        raise ConfigError(f"embedder {p['embedder']!r} has {embedder.dim} dims in this worker, {p['dims']} in the "
                          "command's settings: give the workers the same [index] settings")
    questions = load_questions(engine, items)
    failed = {i: f"item {i} has no question any more" for i in items if i not in questions}
    block = [questions[i] for i in items if i in questions]
    rankings: list[Ranking] = []
    out: dict[str, Any] = {"questions": len(items), "domain": block[0].domain_id if block else 0, "chunks": 0,
                           "seconds": 0.0, "timed": 0}
    if block:
        try:
            domain = _domain(engine, embedder, job.run_id, block[0].domain_id, p["segments_of"])
        except ConfigError:
            raise
        except QUESTION_FAILURES as exc:  # the domain cannot be read: each question of the block is an error
            failed.update({q.item_id: f"domain segments: {describe(exc)}" for q in block})
            block = []
        else:
            out["chunks"] = int(domain.matrix.shape[0])
        if block:
            if embedder.name not in _warm:  # a model loads on first use: not part of any query's latency (R4)
                embedder.embed_texts(["warm-up"])
                _warm.add(embedder.name)
            started = time.perf_counter()
            block, queries = _embed(embedder, block, failed)
            ranked = rank_segments_many(domain, queries, int(p["top"])) if block else []
            out["seconds"], out["timed"] = time.perf_counter() - started, len(block)
            out["latencies_ms"] = single_query_ms(embedder, domain, block, int(p["top"]))
            for q, (order, scores) in zip(block, ranked, strict=True):
                try:
                    rankings.append(_ranking(q, order, scores, job.run_id, int(p["k"])))
                except QUESTION_FAILURES as exc:
                    failed[q.item_id] = describe(exc)
    with transaction(engine) as s:  # a block delivered twice is stored once
        s.execute(delete(Ranking).where(col(Ranking.run_id) == job.run_id, col(Ranking.item_id).in_(items)))
        s.execute(delete(RetrievalError).where(col(RetrievalError.run_id) == job.run_id,
                                               col(RetrievalError.item_id).in_(items)))
        s.add_all(rankings)
        s.add_all([RetrievalError(run_id=job.run_id, item_id=i, error=e) for i, e in failed.items()])
    return {**out, "ranked": len(rankings), "errors": len(failed)}
