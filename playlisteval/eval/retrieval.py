"""Retriever runs (SPEC R1, R4): for each question, rank its domain's ground-truth segments by the mean
of each segment's ``segment_top_chunks`` (3) best chunk similarities to the question, and store the
ranks of its two gold segments.

The segments are the build's (the gold segments' embedder fixes their boundaries); the chunk vectors
are the evaluated embedder's, computed now for any video that lacks them. Questions are the
benchmark's first-level sample (SPEC F3: paper 343), or every accepted item with ``all_items``.

The questions run as jobs on the engine (actors/evaluation.py ``run_jobs``), one per block of up to
``BLOCK`` questions of one domain, each embedded as one batch and scored with one matrix product
(eval/ranking.py): worker threads in this process by default, `playlisteval worker` processes with
Redis. Ranks are 1-based; ties go to the lower segment id, so a run is deterministic.

A question that cannot be ranked — its domain's vectors cannot be made, its query cannot be embedded,
or a gold segment is not among the domain's segments any more — is an error of the run (issue 9),
never a miss: it is stored in ``retrieval_error``, left out of every mean, and counted beside them.
"""

from __future__ import annotations

import uuid
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sqlalchemy.engine import Engine
from sqlmodel import col, select

from playlisteval.actors import jobs
from playlisteval.actors.evaluation import run_jobs
from playlisteval.actors.indexing import index_videos as engine_dispatch
from playlisteval.benchmark.pairs import find_benchmark, finished_items
from playlisteval.config import Settings
from playlisteval.errors import ConfigError
from playlisteval.eval import metrics
from playlisteval.eval.corpus import load_questions
from playlisteval.eval.ranking import (
    BLOCK,
    DomainSegments,
    GoldMissing,
    domain_videos,
    rank_segments,
    rank_segments_many,
)
from playlisteval.index import modality, variants
from playlisteval.index.embedders import Embedder, get_embedder
from playlisteval.index.footprint import Footprint, footprint
from playlisteval.index.pipeline import index_videos
from playlisteval.index.search import index_cache_dir
from playlisteval.store import open_store
from playlisteval.store.engine import transaction
from playlisteval.store.tables import (
    BenchmarkQuestion,
    Chunk,
    ChunkVector,
    Ranking,
    RetrievalError,
    RetrievalRun,
    Segment,
    now,
)

Tick = Callable[[str, int, int], None]
__all__ = ["BLOCK", "DomainSegments", "GoldMissing", "RetrievalSummary", "rank_segments", "rank_segments_many",
           "run_retrieval"]


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
    # issue 20 (paper Table 4): single queries timed one by one; the index's bytes on disk (vectors + HNSW)
    latency_p50_ms: float = 0.0
    latency_p95_ms: float = 0.0
    index_bytes: int = 0
    variant: str = ""  # the named retriever variant ranked (index/variants.py), "" for a plain embedder
    modality: str = ""  # what its chunk vectors read (index/modality.py)


def _lacking(engine: Engine, embedder: Embedder, domain_id: int) -> list[int]:
    """The domain's indexed videos with no vector for the evaluated embedder."""
    videos = domain_videos(engine, domain_id)
    with transaction(engine) as s:
        embedded = set(s.exec(select(Chunk.video_id).join(ChunkVector, col(ChunkVector.chunk_id) == col(Chunk.id))
                              .where(col(Chunk.video_id).in_(videos), ChunkVector.embedder == embedder.name)).all())
    return [v for v in videos if v not in embedded]


def _make_vectors(settings: Settings, engine: Engine, embedder: Embedder, videos: list[int],
                  tick: Tick | None) -> dict[int, str]:
    """Vectors the evaluated embedder lacks: made by the index on the engine (the ``index_video`` actor: this
    process's threads, or `playlisteval worker` processes with Redis) and kept in the store, before any block
    is sent (the blocks only read them). The videos that still lack them, with why."""
    def progress(stage: str, done: int, total: int) -> None:
        if tick and stage == "chunks":
            tick("embedding chunks", done, total)

    found = index_videos(settings, engine, videos, embedder.name, f"eval-retrieve-{uuid.uuid4().hex[:8]}", progress,
                         dispatch=engine_dispatch)
    out = {}
    for video_id in videos:
        outcome = found[video_id][1] if video_id in found else None
        if outcome is None or outcome.status != "indexed":
            out[video_id] = (f"video {video_id} has no {embedder.name} vectors: "
                             + (f"{outcome.status}: {outcome.reason}" if outcome else "no worker indexed it in time"))
    return out


def _questions(engine: Engine, settings: Settings, benchmark: str | None, all_items: bool) -> tuple[int, list[int]]:
    if all_items:
        return 0, sorted(i for ids in finished_items(engine).values() for i in ids)
    bench = find_benchmark(engine, benchmark or settings.select.benchmark)
    with transaction(engine) as s:
        items = s.exec(select(BenchmarkQuestion.item_id).where(BenchmarkQuestion.benchmark_id == bench.id)).all()
    return int(bench.id or 0), sorted(int(i) for i in items)


def run_retrieval(settings: Settings, embedder: str | None = None, benchmark: str | None = None, *,
                  all_items: bool = False, tick: Tick | None = None, variant: str | None = None) -> RetrievalSummary:
    """``variant``: a named retriever variant (`index --variant`), ranked by the embedder name it stands for."""
    engine = open_store(settings)
    if variant is not None:
        if embedder is not None:
            raise ConfigError("give --variant or --embedder, not both (a variant names its embedder)")
        embedder = variants.resolve(engine, variant).embedder
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
    by_domain: dict[int, list[int]] = defaultdict(list)
    for q in questions.values():
        by_domain[q.domain_id].append(q.item_id)
    order = [i for _, ids in sorted(by_domain.items()) for i in sorted(ids)]  # how rows are summed and listed
    recipe = modality.describe(emb.name)
    run_settings: dict[str, Any] = {"top_chunks": cfg.segment_top_chunks, "segments_of": segment_embedder,
                    "questions": "all accepted" if all_items else "benchmark",
                    "frames_per_chunk": settings.index.frames_per_chunk,  # SPEC R4 (paper Fig. 8)
                    # issue 20: the recipe (retriever, modality, visual frames per chunk, dims) the report groups by
                    "variant": variant or "", "recipe": recipe}
    with transaction(engine) as s:
        run = RetrievalRun(embedder=emb.name, k=cfg.retrieval_k, settings=run_settings, benchmark_id=benchmark_id,
                           dims=emb.dim)
        s.add(run)
        s.flush()
        run_id = int(run.id or 0)
    lacking = {domain_id: _lacking(engine, emb, domain_id) for domain_id in sorted(by_domain)}
    unmade = _make_vectors(settings, engine, emb, sorted(v for vs in lacking.values() for v in vs), tick) \
        if any(lacking.values()) else {}
    unreadable: dict[int, str] = {}  # questions of domains whose vectors could not be made
    blocks: list[list[int]] = []
    for domain_id, ids in sorted(by_domain.items()):
        ids = sorted(ids)
        if why := [unmade[v] for v in lacking[domain_id] if v in unmade]:
            # a segment without vectors would rank last: a miss made of an error; the domain cannot be ranked
            unreadable.update({i: f"domain segments: {why[0]}" for i in ids})
            continue
        blocks.extend(ids[i:i + BLOCK] for i in range(0, len(ids), BLOCK))
    if unreadable:
        with transaction(engine) as s:
            s.add_all([RetrievalError(run_id=run_id, item_id=i, error=e) for i, e in unreadable.items()])
    results: list[dict[str, Any]] = []
    if blocks:
        # one job per block (actors/tasks.py ``retrieve_questions``): this process's worker threads, or
        # `playlisteval worker` processes with Redis
        def progress(tally: jobs.Tally) -> None:
            if tick:
                tick("ranking", len(unreadable) + sum(int(r.get("questions", 0)) for r in tally.results),
                     len(questions))

        payload = {"embedder": emb.name, "dims": emb.dim, "segments_of": segment_embedder,
                   "top": cfg.segment_top_chunks, "k": cfg.retrieval_k}
        outcome = run_jobs(settings, "retrieve", run_id, [b[0] for b in blocks], payload,
                           payloads={b[0]: {"items": b} for b in blocks}, progress=progress)
        results = outcome.tally.results
    size = footprint(engine, emb.name, emb.dim, index_cache_dir(settings), settings.index.exact_search_max)
    summary = _finish(engine, emb, run_id, order, results, cfg.retrieval_k, size)
    summary.variant, summary.modality = variant or "", str(recipe["modality"])
    return summary


def percentile(values: list[float], q: float) -> float:
    """The ``q``-th percentile (linear interpolation, numpy's default); 0.0 when nothing was timed."""
    return float(np.percentile(values, q)) if values else 0.0


def _finish(engine: Engine, emb: Embedder, run_id: int, order: list[int], results: list[dict[str, Any]],
            k: int, size: Footprint) -> RetrievalSummary:
    """The run's figures from what its blocks stored, in (domain, item) order."""
    chunks = sum({int(r["domain"]): int(r["chunks"]) for r in results if r.get("chunks")}.values())
    timed = sum(int(r.get("timed", 0)) for r in results)
    # a block's seconds (one embedding batch, one product) shared by its questions: the mean query latency
    latency_ms = 1000 * sum(float(r.get("seconds", 0.0)) for r in results) / timed if timed else 0.0
    with transaction(engine) as s:
        stored = {r.item_id: r for r in s.exec(select(Ranking).where(Ranking.run_id == run_id)).all()}
        errors = {e.item_id: e.error for e in s.exec(select(RetrievalError).where(RetrievalError.run_id == run_id))}
        row = s.get(RetrievalRun, run_id)
        assert row is not None
        singles = [float(ms) for r in results for ms in r.get("latencies_ms", [])]
        p50, p95 = percentile(singles, 50), percentile(singles, 95)
        row.chunks, row.index_bytes = chunks, size.total
        row.latency_ms, row.finished_at = latency_ms, now()
        row.latency_p50_ms, row.latency_p95_ms = p50, p95
        row.settings = {**(row.settings or {}), "vector_bytes": size.vector_bytes, "hnsw_bytes": size.hnsw_bytes,
                        "vectors": size.vectors, "latency_queries": len(singles)}
        s.add(row)
    rankings = [stored[i] for i in order if i in stored]
    failed = {i: errors[i] for i in order if i in errors}

    def mean(values: list[float]) -> float | None:
        return float(np.mean(values)) if values else None

    return RetrievalSummary(
        run_id=run_id, embedder=emb.name, questions=len(rankings), k=k,
        hit_both=mean([float(max(r.rank1, r.rank2) <= k) for r in rankings]),
        hit_any=mean([float(min(r.rank1, r.rank2) <= k) for r in rankings]),
        ndcg=mean([metrics.ndcg_from_ranks([r.rank1, r.rank2], k) for r in rankings]),
        mean_segments=mean([float(r.n_segments) for r in rankings]),
        latency_ms=latency_ms, dims=emb.dim, chunks=chunks,
        errors=len(failed), error_messages=[m for m, _ in Counter(failed.values()).most_common()],
        latency_p50_ms=p50, latency_p95_ms=p95, index_bytes=size.total,
    )
