"""best_of_runs (many judge runs as arrays) gives best_of_many's results to the bit."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

from playlisteval.analytics.best_of import best_of_many
from playlisteval.analytics.best_of_runs import best_of_runs


def _world(seed: int, questions: int = 60) -> tuple[dict[int, tuple[int, int, int]], dict[int, dict[int, float]],
                                                   dict[int, str]]:
    """Questions (ids whose repr order is not their numeric order: 7, 12, 105 …) with 5 answers rated 5 … 1
    (a few with 3 or 4), every pair of answers as a pair id, a cluster label per question."""
    rng = np.random.default_rng(seed)
    pairs: dict[int, tuple[int, int, int]] = {}
    ratings: dict[int, dict[int, float]] = {}
    next_id = 1000
    for q in rng.choice(5000, size=questions, replace=False).tolist():
        k = int(rng.choice([3, 4, 5, 5, 5]))
        ratings[q] = {r: float(r) for r in range(1, k + 1)}
        for better, worse in itertools.combinations(range(k, 0, -1), 2):
            pairs[next_id] = (q, better, worse)
            next_id += int(rng.integers(1, 4))
    clusters = {q: f"video-{q % 7}" for q in ratings}
    return pairs, ratings, clusters


def _run(pairs: dict[int, tuple[int, int, int]], rng: np.random.Generator, accuracy: float
         ) -> tuple[np.ndarray, np.ndarray]:
    """A run's judged pairs (most, not all: some questions lose their gold pairs) and scores: right with
    ``accuracy``, a no-verdict (0.5) now and then; plus a few pairs outside the rated set."""
    ids = np.array(sorted(p for p in pairs if rng.random() < 0.85) + [1, 2, 3], dtype=np.int64)
    ids.sort()
    scores = np.where(rng.random(len(ids)) < accuracy, 1.0, 0.0)
    scores[rng.random(len(ids)) < 0.05] = 0.5
    return ids, scores


def _calls(runs: list[tuple[np.ndarray, np.ndarray]], pairs: dict[int, tuple[int, int, int]],
           ratings: dict[int, dict[int, float]], clusters: dict[int, str]) -> list[Any]:
    """The same runs as best_of_many's calls, built as trust.best_of_figures built them before."""
    calls = []
    for ids, scores in runs:
        judged = [(*pairs[p], None if s == 0.5 else int(s == 1.0))
                  for p, s in zip(ids.tolist(), scores.tolist(), strict=True) if p in pairs]
        questions = {q for q, *_ in judged}
        calls.append((judged, {q: ratings[q] for q in questions}, {q: clusters[q] for q in questions}))
    return calls


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_same_results_as_best_of_many(seed: int) -> None:
    pairs, ratings, clusters = _world(seed)
    rng = np.random.default_rng(seed + 100)
    runs = [_run(pairs, rng, accuracy) for accuracy in (0.5, 0.8, 0.97, 1.0)]
    runs.append((np.array([1, 2], dtype=np.int64), np.array([1.0, 0.0])))  # no rated pair at all
    expected = best_of_many(_calls(runs, pairs, ratings, clusters), seed=7, resamples=200, level=0.95)
    got = best_of_runs(runs, pairs, ratings, clusters, seed=7, resamples=200, level=0.95)
    assert len(got) == len(expected)
    for a, b in zip(got, expected, strict=True):
        if isinstance(b, ValueError):
            assert isinstance(a, ValueError) and str(a) == str(b)
        else:
            assert a == b  # every float to the bit, every key in the same order
            assert list(a) == list(b)
    assert any(isinstance(b, dict) and b["questions_without_gold_pairs"] for b in expected)
    assert any(isinstance(b, dict) and b["gold_pairs_without_verdict"] for b in expected)
    assert any(isinstance(b, ValueError) for b in expected)


def test_a_run_best_of_refuses_gets_best_of_s_error() -> None:
    pairs, ratings, clusters = _world(4, questions=10)
    q = next(iter(ratings))
    ratings[q] = {**ratings[q], 99: max(ratings[q].values())}  # two golds: best_of refuses the question
    ids = np.array(sorted(pairs), dtype=np.int64)
    runs = [(ids, np.ones(len(ids)))]
    expected = best_of_many(_calls(runs, pairs, ratings, clusters), seed=7, resamples=200, level=0.95)
    got = best_of_runs(runs, pairs, ratings, clusters, seed=7, resamples=200, level=0.95)
    assert isinstance(expected[0], ValueError) and "share the top rating" in str(expected[0])
    assert isinstance(got[0], ValueError) and str(got[0]) == str(expected[0])
