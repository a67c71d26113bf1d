"""The cluster bootstrap and the sign-flip test (analytics/intervals.py) against scipy on independent data
and against a small case worked by hand."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from playlisteval.analytics import intervals
from playlisteval.analytics.intervals import bootstrap_difference, bootstrap_mean, cluster_sums, sign_flip_p

# Three questions: A has two pairs both solved, B two pairs one solved, C one pair missed.
HAND_VALUES = [1.0, 1.0, 1.0, 0.0, 0.0]
HAND_CLUSTERS = ["A", "A", "B", "B", "C"]
# (S, N) = A (2, 2), B (1, 2), C (0, 1). The 27 ordered draws of three clusters, grouped by how often
# each cluster was drawn (a, b, c), with their multiplicity 3!/(a! b! c!) and ratio ΣS/ΣN:
#   (3,0,0) 1 → 1      (0,3,0) 1 → 1/2    (0,0,3) 1 → 0      (2,1,0) 3 → 5/6    (2,0,1) 3 → 4/5
#   (1,2,0) 3 → 2/3    (0,2,1) 3 → 2/5    (1,0,2) 3 → 1/2    (0,1,2) 3 → 1/4    (1,1,1) 6 → 3/5
# CDF: 0 → 1/27, 1/4 → 4/27, 2/5 → 7/27, 1/2 → 11/27, 3/5 → 17/27, 2/3 → 20/27, 4/5 → 23/27,
#      5/6 → 26/27, 1 → 1. Percentile intervals (first atom whose CDF reaches the tail):
HAND_INTERVALS = {0.95: (0.0, 1.0), 0.8: (0.25, 5 / 6), 0.5: (0.4, 0.8)}


def test_exact_bootstrap_of_three_questions_by_hand() -> None:
    sums, counts = cluster_sums(HAND_VALUES, HAND_CLUSTERS)
    assert sorted(zip(sums.tolist(), counts.tolist(), strict=True)) == [(0, 1), (1, 2), (2, 2)]
    exact = intervals.exact_distribution(sums, counts)
    by_hand = sorted([1.0, 0.5, 0.0] + [5 / 6] * 3 + [0.8] * 3 + [2 / 3] * 3 + [0.4] * 3 + [0.5] * 3
                     + [0.25] * 3 + [0.6] * 6)
    assert exact == pytest.approx(by_hand)
    # an independent enumeration of the 27 draws agrees too
    s = {"A": (2, 2), "B": (1, 2), "C": (0, 1)}
    enumerated = sorted(sum(s[c][0] for c in draw) / sum(s[c][1] for c in draw)
                        for draw in itertools.product("ABC", repeat=3))
    assert exact == pytest.approx(enumerated)
    for level, (low, high) in HAND_INTERVALS.items():
        got = bootstrap_mean(HAND_VALUES, HAND_CLUSTERS, seed=1, level=level)  # 27 ≤ 2000: enumerated
        assert got.estimate == pytest.approx(0.6)  # 3 of 5 pairs, not the mean of question means
        assert (got.low, got.high) == pytest.approx((low, high))
        assert (got.n, got.clusters) == (5, 3)


def test_monte_carlo_bootstrap_converges_to_the_exact_one() -> None:
    for level, (low, high) in HAND_INTERVALS.items():
        got = bootstrap_mean(HAND_VALUES, HAND_CLUSTERS, seed=3, level=level, resamples=400_000, exact=False)
        assert (got.low, got.high) == pytest.approx((low, high))


def test_agrees_with_scipy_bootstrap_on_independent_data() -> None:
    rng = np.random.default_rng(0)
    for data in (rng.normal(size=200), (rng.random(300) < 0.7).astype(float)):
        ours = bootstrap_mean(data, seed=11, resamples=20_000)  # no clusters: each value its own
        ref = stats.bootstrap((data,), np.mean, method="percentile", n_resamples=20_000, rng=np.random.default_rng(5))
        assert ours.estimate == pytest.approx(float(np.mean(data)))
        assert ours.clusters == len(data)
        # Monte-Carlo error of a 2.5 % quantile with 20 000 resamples is ~0.002 here
        assert ours.low == pytest.approx(ref.confidence_interval.low, abs=0.01)
        assert ours.high == pytest.approx(ref.confidence_interval.high, abs=0.01)


def test_paired_difference_agrees_with_scipy() -> None:
    rng = np.random.default_rng(1)
    a = (rng.random(250) < 0.65).astype(float)
    b = (rng.random(250) < 0.55).astype(float)
    ours = bootstrap_difference(a, b, seed=2, resamples=20_000)
    ref = stats.bootstrap((a, b), lambda x, y: np.mean(x) - np.mean(y), paired=True, method="percentile",
                          n_resamples=20_000, rng=np.random.default_rng(9))
    assert ours.estimate == pytest.approx(float(a.mean() - b.mean()))
    assert ours.low == pytest.approx(ref.confidence_interval.low, abs=0.01)
    assert ours.high == pytest.approx(ref.confidence_interval.high, abs=0.01)


def test_sign_flip_p_by_hand_and_against_scipy_permutation_test() -> None:
    # totals 1, 2, -0.5 → observed 2.5; of the 8 sign vectors, ±2.5 and ±3.5 reach it: p = 4/8
    assert sign_flip_p([1.0, 2.0, -0.5], seed=0) == pytest.approx(0.5)
    assert sign_flip_p([0.0, 0.0], seed=0) == 1.0
    rng = np.random.default_rng(4)
    x, y = rng.normal(0.3, 1, size=12), rng.normal(0, 1, size=12)
    ref = stats.permutation_test((x, y), lambda u, v: np.mean(u - v), permutation_type="samples",
                                 n_resamples=np.inf, alternative="two-sided")
    assert sign_flip_p(x - y, seed=0) == pytest.approx(ref.pvalue)  # both exact: 2^12 sign vectors
    paired = bootstrap_difference(x, y, seed=0)
    assert paired.p_value == pytest.approx(ref.pvalue) and paired.null == 0.0


def test_monte_carlo_sign_flip_is_close_to_exact() -> None:
    rng = np.random.default_rng(6)
    d = rng.normal(0.25, 1, size=40)
    ref = stats.permutation_test((d,), np.mean, permutation_type="samples", n_resamples=200_000,
                                 alternative="two-sided", rng=np.random.default_rng(1))
    assert sign_flip_p(d, seed=3, resamples=200_000) == pytest.approx(ref.pvalue, abs=0.005)


def test_clusters_widen_the_interval_when_pairs_of_a_question_agree() -> None:
    # 40 questions of 5 pairs each, every pair of a question scored alike: 200 pairs but 40 independent facts
    per_question = (np.random.default_rng(8).random(40) < 0.6).astype(float)
    values = np.repeat(per_question, 5)
    clusters = np.repeat(np.arange(40), 5)
    naive = bootstrap_mean(values, seed=1)
    clustered = bootstrap_mean(values, clusters, seed=1)
    assert naive.estimate == clustered.estimate
    assert clustered.high - clustered.low > 1.8 * (naive.high - naive.low)  # ≈ √5 wider


def test_deterministic_and_independent_of_cluster_labels_and_row_order() -> None:
    rng = np.random.default_rng(2)
    values = (rng.random(60) < 0.5).astype(float)
    clusters = np.repeat(np.arange(20), 3)
    first = bootstrap_mean(values, clusters, seed=7, null=0.5)
    assert bootstrap_mean(values, clusters, seed=7, null=0.5) == first
    order = rng.permutation(60)
    relabelled = [f"q{1000 - c}" for c in clusters[order]]  # other ids, other read order
    assert bootstrap_mean(values[order], relabelled, seed=7, null=0.5) == first
    assert bootstrap_mean(values, clusters, seed=8).low is not None


def test_one_cluster_has_no_interval_and_bad_input_is_refused() -> None:
    one = bootstrap_mean([1.0, 0.0, 1.0], ["q", "q", "q"], seed=0)
    assert one.estimate == pytest.approx(2 / 3) and one.low is None and one.high is None
    assert not one.excludes(0.5) and not one.has_interval
    with pytest.raises(ValueError, match="no observations"):
        bootstrap_mean([], seed=0)
    with pytest.raises(ValueError, match="cluster labels"):
        bootstrap_mean([1.0, 0.0], ["q"], seed=0)
    with pytest.raises(ValueError, match="as many values"):
        bootstrap_difference([1.0], [1.0, 0.0], seed=0)
    with pytest.raises(ValueError, match="exact bootstrap"):
        bootstrap_mean(np.arange(10.0), seed=0, exact=True)


def test_excludes_and_as_dict() -> None:
    iv = intervals.Interval(0.7, 0.6, 0.8, n=100, clusters=50, p_value=0.01, null=0.5)
    assert iv.excludes(0.5) and not iv.excludes(0.6) and not iv.excludes(0.75)
    assert iv.as_dict() == {"estimate": 0.7, "low": 0.6, "high": 0.8, "n": 100, "clusters": 50, "level": 0.95,
                            "p_value": 0.01, "null": 0.5}


def test_integer_codes_number_clusters_as_labels_do_and_give_the_same_intervals() -> None:
    """Codes made once by a caller (trust's judge-vs-judge table, attribution) take numpy's path in
    cluster_codes; the partition, its numbering and every number computed from it equal the labels'."""
    rng = np.random.default_rng(7)
    names = [f"q{i}" for i in rng.permutation(40)]
    labels = [names[i] for i in rng.integers(0, 40, 300)]
    codes = np.array([int(name[1:]) * 7 + 3 for name in labels], dtype=np.int64)  # another naming, same partition
    assert intervals.cluster_codes(codes).tolist() == intervals.cluster_codes(labels).tolist()
    assert intervals.cluster_codes(codes).tolist()[:1] == [0]
    values = rng.choice([0.0, 0.5, 1.0], 300)
    other = rng.choice([0.0, 1.0], 300)
    for null in (None, 0.5):
        assert (bootstrap_mean(values, codes, seed=3, null=null).as_dict()
                == bootstrap_mean(values, labels, seed=3, null=null).as_dict())
    assert (bootstrap_difference(values, other, codes, seed=3).as_dict()
            == bootstrap_difference(values, other, labels, seed=3).as_dict())
    assert intervals.cluster_codes(np.zeros(0, dtype=np.int64)).tolist() == []
    with pytest.raises(ValueError, match="cluster labels"):
        cluster_sums([1.0, 2.0], np.array([1], dtype=np.int64))
