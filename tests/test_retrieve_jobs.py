"""`eval retrieve` as jobs (issue 10, deliverable 1; issue 13, deliverable 2): blocks of questions embedded as one
batch and ranked with one matrix product, the same order as one query at a time; a batch that fails is embedded
one by one so only the questions that fail are errors; a block delivered twice is stored once; a video whose
vectors cannot be made fails its domain's questions closed (errors, not misses)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine

from playlisteval.actors import jobs
from playlisteval.config import Settings
from playlisteval.eval.corpus import GoldSegment, Question
from playlisteval.eval.ranking import DomainSegments, _embed, rank_segments, rank_segments_many, retrieve_job
from playlisteval.eval.retrieval import run_retrieval
from playlisteval.store import open_store
from tests.helpers import QUIET_SIM, built_synthetic_project

OVERRIDES: dict[str, object] = dict(index__embedder="hash", index__ocr="none", index__segment_min_s=60,
                                    index__segment_max_s=90, **QUIET_SIM)


def rows(engine: Engine, sql: str, **params: Any) -> list[Any]:
    with engine.connect() as conn:
        return list(conn.execute(text(sql), params))


def test_a_batch_ranks_as_one_query_at_a_time() -> None:
    rng = np.random.default_rng(3)
    matrix = rng.standard_normal((40, 16)).astype(np.float32)
    matrix[7] = matrix[3]  # equal chunks: equal segments tie, and go to the lower id
    rows_ = np.array([[3, -1, -1], [7, -1, -1], [0, 1, 2], [4, 5, -1], [8, 9, 10]])
    domain = DomainSegments(np.array([50, 20, 30, 40, 10]), rows_, matrix)
    queries = rng.standard_normal((5, 16)).astype(np.float32)
    for (order, scores), query in zip(rank_segments_many(domain, queries, 3), queries, strict=True):
        one_order, one_scores = rank_segments(domain, query, 3)
        assert order.tolist() == one_order.tolist()
        assert scores == pytest.approx(one_scores, rel=1e-5)
        assert order.tolist().index(20) < order.tolist().index(50)  # the tie


class FlakyEmbedder:
    """Fails any batch holding the word "unreadable", as a tokenizer might on one bad text."""

    name, dim = "flaky", 4

    def embed_texts(self, texts: list[str]) -> np.ndarray:
        if any("unreadable" in t for t in texts):
            raise ValueError("cannot embed")
        return np.ones((len(texts), self.dim), dtype=np.float32)


def test_a_failed_batch_is_embedded_one_by_one() -> None:
    gold = (GoldSegment(1, 1, 0, 0), GoldSegment(2, 1, 1, 1))
    questions = [Question(i, 1, "d", "unreadable text" if i == 2 else f"question {i}", gold) for i in (1, 2, 3)]
    failed: dict[int, str] = {}
    kept, vectors = _embed(FlakyEmbedder(), questions, failed)  # type: ignore[arg-type]
    assert [q.item_id for q in kept] == [1, 3] and vectors.shape == (2, 4)
    assert failed == {2: "ValueError: cannot embed"}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return built_synthetic_project(tmp_path_factory.mktemp("retrieve"), **OVERRIDES)


def test_a_block_done_twice_is_stored_once(built: Settings) -> None:
    summary = run_retrieval(built, all_items=True)
    engine = open_store(built)
    before = rows(engine, "SELECT item_id, rank1, rank2, top_segments FROM ranking WHERE run_id = :r ORDER BY item_id",
                  r=summary.run_id)
    [(job_id, items)] = rows(engine, "SELECT id, item_id FROM work_job WHERE kind = 'retrieve' AND run_id = :r "
                                     "ORDER BY id LIMIT 1", r=summary.run_id)
    with engine.begin() as conn:  # a late duplicate finds it done: claimed again only by a new pass
        conn.execute(text("UPDATE work_job SET state = 'queued' WHERE id = :j"), {"j": job_id})
    job = jobs.claim(engine, job_id, "again:1", lease_s=60)
    assert job is not None and job.payload["items"][0] == items
    result = retrieve_job(built, engine, None, job)  # type: ignore[arg-type]
    assert result["ranked"] == len(job.payload["items"]) and result["errors"] == 0
    after = rows(engine, "SELECT item_id, rank1, rank2, top_segments FROM ranking WHERE run_id = :r ORDER BY item_id",
                 r=summary.run_id)
    assert after == before and len(after) == summary.questions


def test_a_video_whose_vectors_cannot_be_made_fails_its_domain_closed(built: Settings) -> None:
    engine = open_store(built)
    [(video_id, path, domain_id)] = rows(
        engine, "SELECT v.id, v.path, p.domain_id FROM video v JOIN playlist p ON p.id = v.playlist_id "
                "ORDER BY v.id LIMIT 1")
    path = str(built.root / path)  # stored relative to the project (issue 41): untyped SQL reads the stored form
    Path(path).rename(Path(path).with_suffix(".gone"))  # the new embedder's vectors need the file read again
    try:
        summary = run_retrieval(built, "hash:64", all_items=True)
    finally:
        Path(path).with_suffix(".gone").rename(path)
    errors = rows(engine, "SELECT item_id, error FROM retrieval_error WHERE run_id = :r", r=summary.run_id)
    in_domain = {i for (i,) in rows(engine, "SELECT i.id FROM item i JOIN seed s ON s.id = i.seed_id "
                                            "WHERE s.domain_id = :d", d=domain_id)}
    assert errors and {i for i, _ in errors} <= in_domain
    assert all(e.startswith(f"domain segments: video {video_id} has no hash:64 vectors") for _, e in errors)
    assert summary.errors == len(errors) and summary.questions > 0  # the other domain is ranked
    ranked = {i for (i,) in rows(engine, "SELECT item_id FROM ranking WHERE run_id = :r", r=summary.run_id)}
    assert not ranked & in_domain
