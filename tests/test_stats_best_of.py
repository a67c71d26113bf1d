"""Best-of-k (analytics/best_of.py) against a brute-force recount, scipy's Kendall tau-b and a small case
worked by hand."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from scipy import stats

from playlisteval.analytics.best_of import PairVerdict, best_of_k, kendall_tau_b
from playlisteval.analytics.intervals import cluster_mean

ANSWERS = ("a5", "a4", "a3", "a2", "a1")
RATED = {a: 5 - i for i, a in enumerate(ANSWERS)}


def test_by_hand() -> None:
    ratings = {"q1": RATED, "q2": RATED, "q3": RATED}
    pairs = [
        # q1: gold beats all four → picked; every other pair right too → tau 1
        *[("q1", b, w, 1) for b, w in itertools.combinations(ANSWERS, 2)],
        # q2: gold beats a4, a3 but a no-verdict against a2 → not picked; only 3 of 4 gold pairs
        ("q2", "a5", "a4", 1), ("q2", "a5", "a3", True), ("q2", "a5", "a2", None),
        # q3: no gold pair → unscored; a4 vs a3 wrong
        ("q3", "a4", "a3", 0),
    ]
    got = best_of_k(pairs, ratings, seed=1)
    assert got["questions"] == 3 and got["questions_scored"] == 2 and got["questions_without_gold_pairs"] == 1
    assert got["questions_with_all_gold_pairs"] == 1 and got["gold_pairs_without_verdict"] == 1
    assert got["best_of"]["estimate"] == pytest.approx(0.5) and got["best_of"]["clusters"] == 2
    assert got["best_of_complete"]["estimate"] == pytest.approx(1.0)
    assert got["chance"]["random_ranking"] == pytest.approx((1 / 5 + 1 / 4) / 2)  # q2's gold met 3 rivals
    assert got["chance"]["coin_flip_pairs"] == pytest.approx((1 / 16 + 1 / 8) / 2)
    # q2 wins: a5 2, a4 0, a3 0, a2 0 → tau-b against 5,4,3,2; q3 wins a3 1, a4 0 → -1
    q2 = stats.kendalltau([2, 0, 0, 0], [5, 4, 3, 2]).statistic
    assert got["kendall_tau"]["estimate"] == pytest.approx((1 + q2 - 1) / 3)
    assert got["kendall_tau"]["questions"] == 3 and got["kendall_tau"]["undefined"] == 0
    assert "method" in got and "method" in got["best_of"] and "method" in got["kendall_tau"]


def test_kendall_tau_b_against_scipy() -> None:
    rng = np.random.default_rng(2)
    for _ in range(200):
        m = int(rng.integers(2, 7))
        x, y = rng.integers(0, 4, m), rng.integers(0, 4, m)
        ref = stats.kendalltau(x, y).statistic
        got = kendall_tau_b(x.tolist(), y.tolist())
        if np.isnan(ref):
            assert got is None
        else:
            assert got == pytest.approx(ref, abs=1e-12)


def _brute(pairs: list[tuple[Any, ...]], ratings: dict[str, dict[str, int]]) -> tuple[dict[str, float],
                                                                                     dict[str, float], int]:
    """Per question: picked (1/0) over the gold's pairs, tau by scipy over the answers present."""
    picked: dict[str, float] = {}
    taus: dict[str, float] = {}
    complete = 0
    for q, rated in ratings.items():
        gold = max(rated, key=lambda a: rated[a])
        mine = [p for p in pairs if p[0] == q]
        gold_results = [p[3] for p in mine if gold in (p[1], p[2])]
        if gold_results:
            picked[q] = 1.0 if all(r == 1 for r in gold_results) else 0.0
            complete += {p[2] for p in mine if p[1] == gold} == set(rated) - {gold}
        present = sorted({a for p in mine for a in p[1:3]})
        wins = {a: sum(1 for p in mine if (p[3] == 1 and p[1] == a) or (p[3] == 0 and p[2] == a)) for a in present}
        if len(present) >= 2:
            tau = stats.kendalltau([wins[a] for a in present], [rated[a] for a in present]).statistic
            if not np.isnan(tau):
                taus[q] = float(tau)
    return picked, taus, complete


def test_against_brute_force() -> None:
    rng = np.random.default_rng(6)
    ratings = {f"q{i}": RATED for i in range(80)}
    videos = {q: f"v{int(q[1:]) // 4}" for q in ratings}
    pairs: list[tuple[Any, ...]] = []
    for q in ratings:
        skill = rng.random()
        for b, w in itertools.combinations(ANSWERS, 2):
            if rng.random() < 0.15:
                continue  # a pair missing from the benchmark
            r = rng.random()
            pairs.append((q, b, w, None if r < 0.05 else int(r < 0.05 + 0.95 * (0.3 + 0.7 * skill))))
    picked, taus, complete = _brute(pairs, ratings)
    for clusters in (None, videos):
        got = best_of_k([PairVerdict(*p) for p in pairs], ratings, clusters=clusters, seed=3)
        assert got["best_of"]["estimate"] == pytest.approx(np.mean(list(picked.values())))
        assert got["questions_with_all_gold_pairs"] == complete
        assert got["kendall_tau"]["estimate"] == pytest.approx(np.mean(list(taus.values())))
        labels = list(picked) if clusters is None else [videos[q] for q in picked]
        ref = cluster_mean(list(picked.values()), labels, seed=3)
        assert (got["best_of"]["low"], got["best_of"]["high"]) == pytest.approx((ref.low, ref.high))
    assert got["best_of"]["clusters"] == 20
    shuffled = [pairs[i] for i in rng.permutation(len(pairs))]
    assert best_of_k(shuffled, ratings, clusters=videos, seed=3) == got  # order-free, deterministic


def test_perfect_and_inverted_judges() -> None:
    ratings = {f"q{i}": RATED for i in range(10)}
    right = [(q, b, w, 1) for q in ratings for b, w in itertools.combinations(ANSWERS, 2)]
    wrong = [(q, b, w, 0) for q, b, w, _ in right]
    assert best_of_k(right, ratings, seed=1)["best_of"]["estimate"] == 1.0
    assert best_of_k(right, ratings, seed=1)["kendall_tau"]["estimate"] == pytest.approx(1.0)
    assert best_of_k(wrong, ratings, seed=1)["best_of"]["estimate"] == 0.0
    assert best_of_k(wrong, ratings, seed=1)["kendall_tau"]["estimate"] == pytest.approx(-1.0)
    silent = [(q, b, w, None) for q, b, w, _ in right]
    got = best_of_k(silent, ratings, seed=1)
    assert got["best_of"]["estimate"] == 0.0 and got["kendall_tau"]["estimate"] is None
    assert got["kendall_tau"]["undefined"] == 10


def test_refuses_bad_input() -> None:
    with pytest.raises(ValueError, match="cannot be scored"):
        best_of_k([("q", "a4", "a3", 1)], {"q": RATED}, seed=1)
    with pytest.raises(ValueError, match="not rated above"):
        best_of_k([("q", "a3", "a4", 1)], {"q": RATED}, seed=1)
    with pytest.raises(ValueError, match="no rating"):
        best_of_k([("q", "a5", "zz", 1)], {"q": RATED}, seed=1)
    with pytest.raises(ValueError, match="no ratings"):
        best_of_k([("x", "a5", "a4", 1)], {"q": RATED}, seed=1)
    with pytest.raises(ValueError, match="share the top rating"):
        best_of_k([("q", "a", "c", 1)], {"q": {"a": 5, "b": 5, "c": 1}}, seed=1)
    with pytest.raises(ValueError, match="no cluster label"):
        best_of_k([("q", "a5", "a4", 1)], {"q": RATED}, clusters={}, seed=1)
    with pytest.raises(ValueError, match="is not 1"):
        best_of_k([("q", "a5", "a4", 2)], {"q": RATED}, seed=1)


def test_kendall_tau_b_counted_in_python_is_the_array_count_to_the_bit() -> None:
    """Small rankings are counted in Python (best_of.SMALL_TAU), longer ones with arrays: the same float."""
    from playlisteval.analytics.best_of import SMALL_TAU, _tau_arrays

    rng = np.random.default_rng(7)
    for _ in range(300):
        m = int(rng.integers(2, 9))
        x, y = rng.integers(0, 5, m).astype(float), rng.integers(0, 5, m).astype(float)
        assert kendall_tau_b(x.tolist(), y.tolist()) == _tau_arrays(x, y)
    x, y = rng.normal(size=SMALL_TAU + 5), rng.integers(0, 3, SMALL_TAU + 5)
    assert kendall_tau_b(x.tolist(), y.tolist()) == pytest.approx(stats.kendalltau(x, y).statistic, abs=1e-12)
