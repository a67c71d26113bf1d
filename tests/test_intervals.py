"""The clustered intervals and tests (analytics/intervals.py, small_sample.py, sign_flips.py) against
independent computations: scipy's one-sample t and Wilson interval, the CR2 sandwich in matrix form, and
scipy's exact permutation test."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import linalg, stats

from playlisteval.analytics import intervals, sign_flips, small_sample
from playlisteval.analytics.intervals import cluster_difference, cluster_mean, cluster_sums

from . import stat_reference


def _cr2_by_matrices(values: np.ndarray, clusters: np.ndarray) -> float:
    """The CR2 variance of an intercept-only regression (the pooled mean), written as the sandwich with
    A_g = (I − H_gg)^(−1/2): no closed form shared with small_sample."""
    n = len(values)
    x = np.ones((n, 1))
    bread = np.linalg.inv(x.T @ x)
    beta = bread @ x.T @ values
    residual = values - (x @ beta)
    meat = np.zeros((1, 1))
    for g in np.unique(clusters):
        idx = clusters == g
        xg, eg = x[idx], residual[idx]
        hgg = xg @ bread @ xg.T
        ag = np.real(linalg.sqrtm(np.linalg.inv(np.eye(len(eg)) - hgg)))
        u = xg.T @ ag @ eg
        meat += np.outer(u, u)
    return float((bread @ meat @ bread)[0, 0])


def test_cr2_variance_is_the_sandwich_of_the_regression() -> None:
    rng = np.random.default_rng(0)
    clusters = rng.integers(0, 9, 120)
    values = (rng.random(120) < 0.3 + 0.05 * clusters).astype(float)
    sums, counts = cluster_sums(values, clusters)
    assert small_sample.cr2_variance(sums, counts) == pytest.approx(_cr2_by_matrices(values, clusters), rel=1e-9)


def test_equal_clusters_difference_is_the_one_sample_t_of_cluster_means() -> None:
    rng = np.random.default_rng(1)
    for k in (2, 4, 10, 40):
        clusters = np.repeat(np.arange(k), 15)
        a = (rng.random(15 * k) < 0.7).astype(float)
        b = (rng.random(15 * k) < 0.55).astype(float)
        # the CR2 t (differences of values other than 0/1, retrieved − uniform); 0/1 judges get MOVER (test_mover)
        ours = cluster_mean(a - b, clusters, null=0.0, kind="difference")
        means = np.array([(a - b)[clusters == g].mean() for g in range(k)])
        if np.ptp(means) == 0:  # no spread: scipy's t is undefined (ours has its own rule, tested below)
            continue
        ref = stats.ttest_1samp(means, 0.0)
        ci = ref.confidence_interval(0.95)
        assert ours.estimate == pytest.approx(float(means.mean()))
        assert ours.p_value == pytest.approx(float(ref.pvalue), rel=1e-9)
        assert ours.df == k - 1 and ours.method == small_sample.DIFFERENCE_METHOD
        assert ours.low == pytest.approx(max(-1.0, float(ci.low)))
        assert ours.high == pytest.approx(min(1.0, float(ci.high)))


def test_wilson_matches_scipy_with_the_t_quantile_as_z() -> None:
    for k, n, df in ((0, 40, 39), (40, 40, 39), (13, 44, 3), (7, 20, 2)):
        q = small_sample.t_quantile(df, 0.95)
        level = 2 * stats.norm.cdf(q) - 1  # the normal level whose z is that t quantile
        ref = stats.binomtest(k, n).proportion_ci(confidence_level=level, method="wilson")
        low, high = small_sample.wilson(k / n, n, q)
        assert (low, high) == pytest.approx((ref.low, ref.high), abs=1e-12)


def test_rate_of_fractional_values_is_wilson_on_the_effective_size() -> None:
    """Values that are not counts (nDCG, half credit) keep Wilson's interval on N / deff (deff from the CR2
    sandwich), t(K − 1). (A cluster's sum decides: sums of whole numbers are counts.)"""
    rng = np.random.default_rng(2)
    clusters = np.repeat(np.arange(12), 7)
    values = np.repeat(rng.choice([0.0, 0.5, 1.0], size=12), 7)  # every pair of a question alike
    assert np.any(cluster_sums(values, clusters)[0] % 1 == 0.5)
    iv = cluster_mean(values, clusters)
    p = values.mean()
    n_eff = len(values) * (p * (1 - p) / len(values)) / _cr2_by_matrices(values, clusters)
    assert (iv.low, iv.high) == pytest.approx(small_sample.wilson(p, n_eff, small_sample.t_quantile(11, 0.95)))
    assert iv.method == small_sample.RATE_METHOD


def test_rate_of_counts_is_the_beta_binomial_profile_interval() -> None:
    """0/1 values in clusters: the package's profile-likelihood interval and LR p equal scipy's betabinom
    pmfs maximised by scipy's own optimisers (stat_reference), to the searches' precision."""
    rng = np.random.default_rng(5)
    for case in range(10):
        k = int(rng.integers(2, 30))
        sizes = rng.integers(1, 40, k)
        mu = float(rng.choice([0.3, 0.7, 0.95, 0.99]))
        p = rng.beta(mu * 3, (1 - mu) * 3, k) if case % 2 else np.full(k, mu)
        s = rng.binomial(sizes, p).astype(float)
        got = small_sample.rate(s, sizes.astype(float), 0.95, 0.5)
        _, low, high, p_value = stat_reference.beta_binomial_rate(s, sizes.astype(float), null=0.5)
        assert got[:3] == pytest.approx((low, high, p_value), abs=1e-4, rel=1e-3), (case, s, sizes)


def test_rate_of_counts_is_never_degenerate() -> None:
    """40 of 40 right in 40 questions of one pair each: the binomial likelihood-ratio bound
    μ^40 = exp(−z²/2) (no overdispersion can be seen in clusters of one), not [100, 100]."""
    z = stats.norm.ppf(0.975)
    perfect = cluster_mean(np.ones(40), np.arange(40))
    assert perfect.high == 1.0 and perfect.low == pytest.approx(np.exp(-z * z / 2 / 40), abs=1e-6)
    none = cluster_mean(np.zeros(40), np.arange(40))
    assert none.low == 0.0 and none.high == pytest.approx(1 - np.exp(-z * z / 2 / 40), abs=1e-6)
    # ten questions of six pairs each, all right: any μ whose clusters could all be perfect (a high ICC)
    # stays in: the bound is far below the binomial one of 60 pairs
    ten = cluster_mean(np.ones(60), np.repeat(np.arange(10), 6))
    assert ten.high == 1.0 and ten.low < np.exp(-z * z / 2 / 60) - 0.05
    for got in (perfect, none, ten):
        assert 0.0 <= got.low < got.high <= 1.0


def test_each_p_is_its_interval_inverted() -> None:
    """A null inside the interval has p ≥ 0.05, one outside p < 0.05: rates and differences alike."""
    rng = np.random.default_rng(3)
    for k in (2, 3, 5, 20):
        clusters = rng.integers(0, k, 90)
        clusters[:k] = np.arange(k)
        values = (rng.random(90) < 0.6).astype(float)
        iv = cluster_mean(values, clusters)
        assert iv.low is not None and iv.high is not None
        # a grid, and the nulls just inside and just outside each bound, where an inversion would fail
        near = [b + e for b in (iv.low, iv.high) for e in (-0.002, 0.002) if 0 < b + e < 1]
        for null in [*np.linspace(0.01, 0.99, 25), *near]:
            p = cluster_mean(values, clusters, null=float(null)).p_value
            assert p is not None and (p >= 0.05) == (iv.low <= null <= iv.high), (k, null, p, iv)
        other = (rng.random(90) < 0.4).astype(float)
        d = cluster_difference(values, other, clusters)
        assert d.p_value is not None and (d.p_value >= 0.05) == (d.low <= 0 <= d.high)


def test_no_variation_still_gives_an_interval_and_a_consistent_p() -> None:
    clusters = np.repeat(np.arange(10), 4)
    same = cluster_difference(np.ones(40), np.ones(40), clusters)  # both judges right on every pair
    assert same.estimate == 0 and same.low < 0 < same.high and same.p_value == 1.0
    apart = cluster_difference(np.ones(40), np.zeros(40), clusters)  # one always right, the other never
    assert apart.estimate == 1 and apart.high == 1.0 and 0 < apart.low < 1
    assert apart.p_value is not None and apart.p_value < 0.05


def test_sign_flip_check_is_exact_past_enumeration() -> None:
    rng = np.random.default_rng(4)
    for k in (12, 18):
        totals = rng.integers(-3, 5, k).astype(float) / 2  # halves: accuracies' differences
        ref = stats.permutation_test((totals,), np.sum, permutation_type="samples", n_resamples=np.inf,
                                     alternative="two-sided")
        p, how = sign_flips.sign_flip(totals)
        assert p == pytest.approx(float(ref.pvalue), rel=1e-9)
        assert how == ("enumerated" if k <= 16 else "exact")
    # 40 clusters all one way: exact 2 / 2^40, far below the Monte-Carlo floor of 1/2001
    p, how = sign_flips.sign_flip(np.ones(40))
    assert how == "exact" and p == pytest.approx(sign_flips.smallest_p(40))
    # off the lattice: Monte Carlo, and it says so with its floor
    p, how = sign_flips.sign_flip(rng.normal(0.2, 1, 30), resamples=5000)
    assert how.startswith("Monte Carlo") and p >= 1 / 5001
    # many clusters: no check (the t needs none there, and a report compares hundreds of pairs of runs)
    p, how = sign_flips.sign_flip(np.ones(500))
    assert p is None and how.startswith("not computed")
    assert sign_flips.sign_flip_p([0.0, 0.0]) == 1.0
    assert sign_flips.sign_flip_p([1.0, 2.0, -0.5]) == pytest.approx(0.5)  # 8 vectors, 4 reach ±2.5


def test_clusters_widen_the_interval_when_pairs_of_a_question_agree() -> None:
    per_question = (np.random.default_rng(8).random(40) < 0.6).astype(float)
    values = np.repeat(per_question, 5)
    clusters = np.repeat(np.arange(40), 5)
    naive = cluster_mean(values)
    clustered = cluster_mean(values, clusters)
    assert naive.estimate == clustered.estimate
    assert clustered.high - clustered.low > 1.8 * (naive.high - naive.low)  # ≈ √5 wider


def test_deterministic_and_independent_of_cluster_labels_and_row_order() -> None:
    rng = np.random.default_rng(2)
    values = (rng.random(60) < 0.5).astype(float)
    clusters = np.repeat(np.arange(20), 3)
    first = cluster_mean(values, clusters, null=0.5)
    assert cluster_mean(values, clusters, null=0.5) == first
    order = rng.permutation(60)
    relabelled = [f"q{1000 - c}" for c in clusters[order]]
    assert cluster_mean(values[order], relabelled, null=0.5) == first


def test_one_cluster_has_no_interval_and_bad_input_is_refused() -> None:
    one = cluster_mean([1.0, 0.0, 1.0], ["q", "q", "q"])
    assert one.estimate == pytest.approx(2 / 3) and one.low is None and one.high is None
    assert not one.excludes(0.5) and not one.has_interval
    with pytest.raises(ValueError, match="no observations"):
        cluster_mean([])
    with pytest.raises(ValueError, match="cluster labels"):
        cluster_mean([1.0, 0.0], ["q"])
    with pytest.raises(ValueError, match="as many values"):
        cluster_difference([1.0], [1.0, 0.0])
    with pytest.raises(ValueError, match="kind"):
        cluster_mean([1.0, 0.0], kind="odd")


def test_excludes_and_as_dict() -> None:
    iv = intervals.Interval(0.7, 0.6, 0.8, n=100, clusters=50, p_value=0.01, null=0.5, method="m", df=49)
    assert iv.excludes(0.5) and not iv.excludes(0.6) and not iv.excludes(0.75)
    assert iv.as_dict() == {"estimate": 0.7, "low": 0.6, "high": 0.8, "n": 100, "clusters": 50, "level": 0.95,
                            "method": "m", "df": 49, "p_value": 0.01, "null": 0.5}


def test_integer_codes_number_clusters_as_labels_do_and_give_the_same_intervals() -> None:
    rng = np.random.default_rng(7)
    names = [f"q{i}" for i in rng.permutation(40)]
    labels = [names[i] for i in rng.integers(0, 40, 300)]
    codes = np.array([int(name[1:]) * 7 + 3 for name in labels], dtype=np.int64)
    assert intervals.cluster_codes(codes).tolist() == intervals.cluster_codes(labels).tolist()
    values = rng.choice([0.0, 0.5, 1.0], 300)
    other = rng.choice([0.0, 1.0], 300)
    for null in (None, 0.5):
        assert cluster_mean(values, codes, null=null).as_dict() == cluster_mean(values, labels, null=null).as_dict()
    assert cluster_difference(values, other, codes).as_dict() == cluster_difference(values, other, labels).as_dict()
    assert intervals.cluster_codes(np.zeros(0, dtype=np.int64)).tolist() == []
    with pytest.raises(ValueError, match="cluster labels"):
        cluster_sums([1.0, 2.0], np.array([1], dtype=np.int64))


def test_dyadic_variance_counts_every_two_pairs_that_share_a_video() -> None:
    """A pair cites two videos; pairs sharing either are correlated (issue 40: "by video" was the first's):
    the CR2-adjusted dyadic variance and the Bell–McCaffrey df, against loops and N × N matrices."""
    rng = np.random.default_rng(9)
    first = rng.integers(0, 6, 50)
    second = np.where(rng.random(50) < 0.3, first, rng.integers(0, 6, 50))  # some pairs within one video
    effect = rng.normal(0, 0.4, 6)  # a video's difficulty reaches every pair that cites it
    values = (rng.random(50) < 1 / (1 + np.exp(-(effect[first] + effect[second])))).astype(float)
    sums, counts, members = intervals.dyad_sums(values, first.tolist(), second.tolist())
    by_loop = stat_reference.dyadic_variance(values, first, second)
    dyads = [f"{min(a, b)}-{max(a, b)}" for a, b in zip(first, second, strict=True)]
    one_way = stat_reference.cr2_variance(values, dyads)
    assert small_sample.dyadic_variance(sums, counts, members) == pytest.approx(max(by_loop, one_way), rel=1e-9)
    iv = cluster_mean(values, first.tolist(), second=second.tolist())
    assert iv.p_sign_flip is None
    df = stat_reference.dyadic_df(first, second)
    assert 1 < df < len(set(first) | set(second)) - 1 and iv.df == int(df)
    assert (iv.low, iv.high) == pytest.approx(stat_reference.rate_dyadic(values, first, second)[1:], rel=1e-9)


def test_a_rate_near_the_ceiling_from_few_clusters_carries_a_caution() -> None:
    """bench science: a 97 % judge whose errors sit in a few questions was covered 72–93 % at 10–40 clusters
    by Wilson with a design effect; the beta-binomial holds in a beta-binomial simulation, its own model —
    the interval still says that it leans on it."""
    perfect = cluster_mean(np.ones(40), np.arange(40))
    assert perfect.caution is not None and "100 %" in perfect.caution and "caution" in perfect.as_dict()
    assert cluster_mean(np.zeros(40), np.arange(40)).caution is not None
    assert cluster_mean(np.r_[np.ones(20), np.zeros(20)], np.arange(40)).caution is None
    assert cluster_mean(np.ones(200), np.arange(200)).caution is None  # 200 clusters: not flagged
    assert cluster_difference(np.ones(40), np.zeros(40), np.arange(40)).caution is None  # rates only


def test_codes_already_numbered_by_first_appearance_come_back_as_they_are() -> None:
    """The shortcut for codes a caller ranked once gives what the sort gives, and only for such codes."""
    rng = np.random.default_rng(11)
    for _ in range(200):
        raw = rng.integers(-2, 9, int(rng.integers(1, 30)))
        ranked = intervals.cluster_codes([int(v) for v in raw])  # through the dict: the reference numbering
        assert intervals.cluster_codes(raw).tolist() == ranked.tolist()
        assert intervals.cluster_codes(ranked).tolist() == ranked.tolist()
    for odd in ([1, 0, 1], [0, 2, 1], [0, 0, -1], [0, 1, 3]):  # not numbered so: the sort's numbers
        assert intervals.cluster_codes(np.array(odd)).tolist() == intervals.cluster_codes([*odd]).tolist()
    assert intervals.cluster_codes(np.array([True, False, True])).tolist() == [0, 1, 0]
