"""Repeated-sampling stability (analytics/stability.py) against a small case worked by hand, a brute-force
recount of random verdicts, and an independent cluster bootstrap written with plain numpy."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pytest

from playlisteval.analytics.stability import pair_scores, stability
from tests import stat_reference

# q1: [1,1,1] correct ×3 · [1,0,None] | q2: [0,0,1] · [None,None,None] | q3: [1,0] tie · [1] once
HAND: list[list[int | None]] = [[1, 1, 1], [1, 0, None], [0, 0, 1], [None, None, None], [1, 0], [1]]
HAND_Q = ["q1", "q1", "q2", "q2", "q3", "q3"]


def test_by_hand() -> None:
    scores = pair_scores(HAND)
    assert scores.expected == pytest.approx([1, 1 / 3, 1 / 3, 0, 1 / 2, 1])  # None counted as wrong
    assert scores.consensus == [1, 0, 0, 0, 0, 1]  # [1,0,None] is a 1–1 tie; all-None: no vote; [1,0] tie
    assert scores.consistent == [1, 0, 0, 1, 0, None]
    got = stability(HAND, HAND_Q, seed=1)
    assert got["expected_accuracy"]["estimate"] == pytest.approx((1 + 1 / 3 + 1 / 3 + 0 + 1 / 2 + 1) / 6)
    assert got["consensus_accuracy"]["estimate"] == pytest.approx(2 / 6)
    assert got["consistency"]["estimate"] == pytest.approx(2 / 5) and got["consistency"]["n"] == 5
    assert got["pairs_with_one_sample"] == 1 and got["no_verdicts"] == 4 and got["samples"] == 15
    assert got["samples_per_pair"] == {"min": 1, "max": 3}
    assert got["clusters"] == 3 and got["expected_accuracy"]["clusters"] == 3
    assert all("method" in got[k] for k in ("expected_accuracy", "consensus_accuracy", "consistency"))
    assert got["consensus_gain"]["estimate"] == pytest.approx(2 / 6 - got["expected_accuracy"]["estimate"])


def _brute(verdicts: list[list[Any]]) -> tuple[list[float], list[float], list[float | None]]:
    expected, consensus, consistent = [], [], []
    for v in verdicts:
        votes = Counter(x for x in v if x is not None)
        expected.append(sum(1 for x in v if x == 1) / len(v))
        top = votes.most_common()
        majority = len(top) > 0 and (len(top) == 1 or top[0][1] > top[1][1]) and top[0][0] == 1
        consensus.append(float(majority))
        consistent.append(None if len(v) < 2 else float(all(x == v[0] for x in v)))
    return expected, consensus, consistent


def _cluster_bootstrap(values: list[float], labels: list[str], rng: np.random.Generator, reps: int
                       ) -> tuple[float, float]:
    groups = sorted({g for g in labels})
    sums = np.array([sum(v for v, g in zip(values, labels, strict=True) if g == q) for q in groups])
    counts = np.array([sum(1 for g in labels if g == q) for q in groups], dtype=float)
    draws = rng.integers(0, len(groups), size=(reps, len(groups)))
    ratios = sums[draws].sum(axis=1) / counts[draws].sum(axis=1)
    return float(np.quantile(ratios, 0.025)), float(np.quantile(ratios, 0.975))


def test_against_brute_force_and_an_independent_bootstrap() -> None:
    rng = np.random.default_rng(8)
    verdicts: list[list[Any]] = []
    labels: list[str] = []
    for q in range(60):
        p = rng.random()
        for _ in range(rng.integers(1, 5)):
            n = int(rng.integers(1, 6))
            verdicts.append([None if rng.random() < 0.1 else int(rng.random() < p) for _ in range(n)])
            labels.append(f"q{q}")
    expected, consensus, consistent = _brute(verdicts)
    scores = pair_scores(verdicts)
    assert scores.expected == pytest.approx(expected)
    assert scores.consensus == consensus
    assert scores.consistent == consistent
    got = stability(verdicts, labels, seed=4, resamples=20_000)
    assert got["expected_accuracy"]["estimate"] == pytest.approx(np.mean(expected))
    assert got["consensus_accuracy"]["estimate"] == pytest.approx(np.mean(consensus))
    kept = [c for c in consistent if c is not None]
    assert got["consistency"]["estimate"] == pytest.approx(np.mean(kept))
    # expected accuracy (fractions of a pair's samples): Wilson with a design effect, close to an
    # independent cluster bootstrap; consensus (0/1 per pair, whole-number cluster sums): the beta-binomial
    # profile interval, against scipy's betabinom (stat_reference) — on this design all three cover ~95 %
    # (docs/statistics.md), but one bootstrap draw need not sit within 0.01 of the likelihood's bounds
    low, high = _cluster_bootstrap(expected, labels, np.random.default_rng(5), 20_000)
    assert got["expected_accuracy"]["low"] == pytest.approx(low, abs=0.01)
    assert got["expected_accuracy"]["high"] == pytest.approx(high, abs=0.01)
    _, low, high = stat_reference.rate(consensus, labels)
    assert (got["consensus_accuracy"]["low"], got["consensus_accuracy"]["high"]) == pytest.approx((low, high),
                                                                                                  abs=1e-4)
    assert got == stability(verdicts, labels, seed=4, resamples=20_000)  # deterministic
    # the pairs' order does not matter
    order = rng.permutation(len(verdicts))
    shuffled = stability([verdicts[i] for i in order], [labels[i] for i in order], seed=4, resamples=20_000)
    assert shuffled["expected_accuracy"] == got["expected_accuracy"]


def test_too_little_data() -> None:
    once = stability([[1], [0]], ["a", "b"], seed=1)
    assert once["consistency"]["estimate"] is None and "more than once" in once["consistency"]["note"]
    one_question = stability([[1, 1], [0, 1]], ["a", "a"], seed=1)
    assert one_question["expected_accuracy"]["low"] is None  # one cluster: no interval
    with pytest.raises(ValueError, match="no samples"):
        stability([[1], []], ["a", "b"], seed=1)
    with pytest.raises(ValueError, match="not 1"):
        stability([[1, 2]], ["a"], seed=1)
    with pytest.raises(ValueError, match="2 pairs but 1"):
        stability([[1], [0]], ["a"], seed=1)
    with pytest.raises(ValueError, match="no pairs"):
        stability([], [], seed=1)
