"""MOVER for the paired difference of two 0/1 rates (issue 40): against an independent computation
(``stat_reference.mover``: scipy's beta-binomial pmfs, bounded Brent and brentq), the p-value's agreement with
the interval at every level, the degenerate cases, and that the report's judge − judge comparisons use it."""

from __future__ import annotations

import numpy as np
import pytest

from playlisteval.analytics import intervals, mover, small_sample
from playlisteval.analytics.intervals import cluster_difference, paired_from_sums
from playlisteval.analytics.trust import paired_table
from tests import stat_reference
from tests.test_trust import BOOT, observations


def _judges(seed: int, k: int, size: int, pa: float, pb: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    clusters = np.repeat(np.arange(k), size)
    shared = rng.random(k * size)
    a = (shared < pa).astype(float)
    b = (np.where(rng.random(k * size) < 0.5, shared, rng.random(k * size)) < pb).astype(float)
    return a, b, clusters


@pytest.mark.parametrize(("seed", "k", "size", "pa", "pb"), [(1, 6, 8, 0.75, 0.45), (2, 10, 6, 0.97, 0.8)])
def test_interval_and_p_equal_an_independent_computation(seed: int, k: int, size: int, pa: float, pb: float) -> None:
    a, b, clusters = _judges(seed, k, size, pa, pb)
    got = cluster_difference(a, b, clusters)
    want = stat_reference.mover(a.tolist(), b.tolist(), clusters.tolist())
    assert got.method == mover.METHOD and got.null == 0.0
    assert (got.estimate, got.low, got.high) == pytest.approx(want[:3], abs=1e-6)
    assert got.p_value == pytest.approx(want[3], rel=1e-3)  # the p from the interpolated profile


def test_a_side_at_100_percent_takes_r_as_0_and_still_matches() -> None:
    clusters = np.repeat(np.arange(8), 5)
    a = np.ones(40)
    b = np.ones(40)
    b[[0, 1, 2, 9, 17, 30]] = 0.0
    got = cluster_difference(a, b, clusters)
    want = stat_reference.mover(a.tolist(), b.tolist(), clusters.tolist())
    assert got.method == mover.METHOD
    assert (got.estimate, got.low, got.high) == pytest.approx(want[:3], abs=1e-6)
    assert got.p_value == pytest.approx(want[3], rel=1e-3)
    assert got.low is not None and got.high is not None and got.low < got.estimate < got.high


def test_p_agrees_with_the_interval_at_every_level() -> None:
    rng = np.random.default_rng(4)
    for trial in range(6):
        k = int(rng.integers(4, 30))
        n = rng.integers(3, 25, k).astype(float)
        sa = rng.binomial(n.astype(int), rng.uniform(0.5, 1.0)).astype(float)
        sb = rng.binomial(n.astype(int), rng.uniform(0.4, 1.0)).astype(float)
        p_of_level = []
        for level in (0.5, 0.8, 0.9, 0.95, 0.99, 0.999):
            got = mover.paired(sa[None], sb[None], n[None], np.array([k]), level)
            excluded = not got.low[0] <= 0 <= got.high[0]
            assert (got.p[0] < 1 - level) == excluded, (trial, level, got)
            p_of_level.append(got.p[0])
        # the same p whatever the level it was computed at (the levels' own exact bounds sit in the table)
        assert max(p_of_level) == pytest.approx(min(p_of_level), rel=2e-3), (trial, p_of_level)


def test_p_reaches_far_below_holm_thresholds_and_stays_consistent() -> None:
    a, b, clusters = _judges(7, 20, 30, 0.95, 0.1)  # 17 judges' Holm family needs p far below 0.05 / 136
    got = cluster_difference(a, b, clusters)
    assert got.p_value is not None and 0 < got.p_value < 1e-12
    sums = [np.bincount(clusters, weights=v) for v in (a, b)]
    n = np.bincount(clusters).astype(float)
    for level in (1 - 1e-6, 1 - 1e-10):
        at = mover.paired(sums[0][None], sums[1][None], n[None], np.array([20]), level)
        assert at.low[0] > 0 and at.p[0] < 1 - level


def test_no_spread_in_the_difference_keeps_a_non_zero_width_interval() -> None:
    clusters = np.repeat(np.arange(10), 4)
    x = (np.arange(40) % 3 == 0).astype(float)
    same = cluster_difference(x, x, clusters)  # identical on every pair: r = 1, MOVER would be a point
    assert same.method == small_sample.DIFFERENCE_METHOD
    assert same.low is not None and same.high is not None and same.low < 0 < same.high and same.p_value == 1.0
    both = cluster_difference(np.ones(40), np.ones(40), clusters)  # both at 100 %
    assert both.low is not None and both.high is not None and both.low < 0 < both.high and both.p_value == 1.0
    apart = cluster_difference(np.ones(40), np.zeros(40), clusters)
    assert apart.high == 1.0 and apart.low is not None and 0 < apart.low < 1
    assert apart.p_value is not None and apart.p_value < 0.05


def test_batch_shares_sides_and_equals_one_at_a_time_in_any_cluster_order() -> None:
    rng = np.random.default_rng(9)
    n = rng.integers(5, 20, 12).astype(float)
    judges = [rng.binomial(n.astype(int), p).astype(float) for p in (0.9, 0.8, 0.7, 0.6)]
    requests = [(judges[i], judges[j], n, None) for i in range(4) for j in range(i + 1, 4)]
    together = paired_from_sums(requests)
    for (sa, sb, counts, _), iv in zip(requests, together, strict=True):
        order = rng.permutation(len(counts))
        alone = paired_from_sums([(sa[order], sb[order], counts[order], None)])[0]
        assert alone.as_dict() == iv.as_dict()
        assert iv.method == mover.METHOD and iv.clusters == 12


def test_values_other_than_0_1_and_dyadic_clusters_keep_the_cr2_t() -> None:
    a, b, clusters = _judges(3, 10, 6, 0.7, 0.6)
    b[3] = 0.5  # a no-verdict
    got = cluster_difference(a, b, clusters)
    assert got.method == small_sample.DIFFERENCE_METHOD
    assert got.as_dict() == intervals.cluster_mean(a - b, clusters, null=0.0, kind="difference").as_dict()
    second = (clusters + 1) % 10
    dyadic = cluster_difference(a, a[::-1], clusters, second=second)
    assert dyadic.method == small_sample.DIFFERENCE_METHOD


def test_trust_paired_table_uses_mover_for_0_1_judges() -> None:
    rng = np.random.default_rng(3)
    judges = {name: rng.binomial(1, p, 60).astype(float).tolist() for name, p in (("a", 0.95), ("b", 0.7), ("c", 0.5))}
    table = paired_table(observations(judges), "retrieved", BOOT)
    assert "MOVER" in table["method"]
    for row in table["rows"]:
        labels = [f"q{i // 3}" for i in range(60)]
        want = cluster_difference(judges[row["judge_a"]], judges[row["judge_b"]], labels, seed=BOOT.seed,
                                  resamples=BOOT.resamples)
        assert want.method == mover.METHOD and mover.METHOD in row["difference"]["method"]
        assert row["p_value"] == want.p_value and row["difference"]["low"] == want.low
