"""SPEC F4, the benchmark's statistics (paper Table 12), computed from the store.

Word counts are of the texts a judge reads: citations removed. Question and answer lengths are over
the benchmark's questions (those with a drawn pair); the per-pair figures over its pairs.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from sqlalchemy import func
from sqlalchemy.engine import Engine
from sqlmodel import col, select

from playlisteval.build.gates.citations import strip_citations
from playlisteval.select.pairs import FINISHED, pair_texts
from playlisteval.store.engine import transaction
from playlisteval.store.tables import (
    QA,
    Answer,
    BenchmarkPair,
    BenchmarkQuestion,
    Domain,
    Item,
    Pair,
    Playlist,
    Video,
)


def words(text: str) -> int:
    return len(strip_citations(text).split())


@dataclass
class Length:
    mean: float = 0.0
    max: int = 0

    @classmethod
    def of(cls, counts: list[int]) -> Length:
        return cls(round(sum(counts) / len(counts), 1), max(counts)) if counts else cls()


@dataclass
class BenchmarkStats:
    domains: int = 0
    playlists: int = 0
    videos: int = 0
    accepted_questions: int = 0
    sampled_before: int = 0  # first level (paper 343)
    sampled_after: int = 0  # questions with a drawn pair (paper 327)
    pairs: int = 0
    pairs_by_gap: dict[int, int] = field(default_factory=dict)
    pairs_by_domain: dict[str, int] = field(default_factory=dict)
    question_words: Length = field(default_factory=Length)
    gold_words: Length = field(default_factory=Length)
    degraded_words: Length = field(default_factory=Length)
    chosen_minus_rejected_words: float = 0.0
    longer_answer_wins_pct: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def benchmark_stats(engine: Engine, benchmark_id: int) -> BenchmarkStats:
    st = BenchmarkStats()
    with transaction(engine) as s:
        st.domains = int(s.exec(select(func.count()).select_from(Domain)).one())
        st.playlists = int(s.exec(select(func.count()).select_from(Playlist)).one())
        st.videos = int(s.exec(select(func.count()).select_from(Video).where(Video.status == "indexed")).one())
        st.accepted_questions = int(s.exec(select(func.count()).select_from(Item)
                                           .where(col(Item.state).in_(FINISHED))).one())
        st.sampled_before = int(s.exec(select(func.count()).select_from(BenchmarkQuestion)
                                       .where(BenchmarkQuestion.benchmark_id == benchmark_id)).one())
        pair_ids = [int(p) for p in s.exec(select(BenchmarkPair.pair_id)
                                           .where(BenchmarkPair.benchmark_id == benchmark_id)).all()]
    texts = pair_texts(engine, pair_ids)
    st.pairs = len(texts)
    st.pairs_by_gap = dict(sorted(Counter(p.gap for p in texts.values()).items()))
    st.pairs_by_domain = dict(sorted(Counter(p.domain for p in texts.values()).items()))
    items = sorted({p.item_id for p in texts.values()})
    st.sampled_after = len(items)
    if not texts:
        return st
    with transaction(engine) as s:
        rows = s.exec(select(Item.id, QA.question, Answer.rating, Answer.text)
                      .join(QA, col(QA.id) == col(Item.current_qa_id))
                      .join(Answer, col(Answer.set_id) == col(Item.current_set_id))
                      .where(col(Item.id).in_(  # a subquery, not a parameter per item (issue 26)
                          select(Pair.item_id).join(BenchmarkPair, col(BenchmarkPair.pair_id) == col(Pair.id))
                          .where(BenchmarkPair.benchmark_id == benchmark_id)))).all()
    questions: dict[int, str] = {}
    gold: list[int] = []
    degraded: list[int] = []
    for item_id, question, rating, text in rows:
        questions[int(item_id or 0)] = question
        (gold if rating == 5 else degraded).append(words(text))
    st.question_words = Length.of([len(q.split()) for q in questions.values()])
    st.gold_words, st.degraded_words = Length.of(gold), Length.of(degraded)
    diffs = [words(p.better) - words(p.worse) for p in texts.values()]
    st.chosen_minus_rejected_words = round(sum(diffs) / len(diffs), 1)
    st.longer_answer_wins_pct = round(100 * sum(1 for d in diffs if d > 0) / len(diffs), 1)
    return st
