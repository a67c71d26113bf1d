"""External-validity correlations (analytics/correlation.py) against independent computations:
pearsonr/spearmanr for the coefficients and parametric p-values, scipy.stats.permutation_test and an
itertools enumeration for the permutation p, PearsonRResult.confidence_interval and the formula by hand for
Fisher's interval, scipy.stats.bootstrap for the (JSON-only) percentile intervals, simulations of known ρ
for coverage; the skipped resamples against their exact probability."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from statistics import NormalDist

import numpy as np
import pytest
from scipy import stats

from playlisteval.analytics.correlation import (
    DRAWS,
    PEARSON_CLIP,
    bootstrap_correlations,
    correlate,
    fisher_z_interval,
    permutation_p,
    summary,
)


def _judges(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    score = rng.normal(60, 10, n)
    accuracy = 0.5 + 0.004 * score + rng.normal(0, 0.03, n)
    return accuracy, np.round(score)  # published scores are rounded: ties for Spearman


def test_coefficients_and_p_values_are_scipys() -> None:
    rng = np.random.default_rng(1)
    for n in (3, 5, 12, 40):
        x, y = _judges(rng, n)
        got = correlate(x, y, seed=2, resamples=500)
        pr, sr = stats.pearsonr(x, y), stats.spearmanr(x, y)
        assert got["pearson"]["estimate"] == pytest.approx(pr.statistic, abs=1e-12)
        assert got["pearson"]["p_normal_theory"] == pytest.approx(pr.pvalue, rel=1e-9)
        assert got["spearman"]["estimate"] == pytest.approx(sr.statistic, abs=1e-12)
        assert got["spearman"]["p_t_approximation"] == pytest.approx(sr.pvalue, rel=1e-9)
        assert got["n"] == n and got["resamples"] == 500 and "method" in got


def _abs_r_against(x: np.ndarray) -> Callable[..., np.ndarray]:
    """permutation_test's statistic of one sample (the orderings of y): |r| with the fixed x."""
    def statistic(y: np.ndarray, axis: int = -1) -> np.ndarray:
        yc = y - y.mean(axis=axis, keepdims=True)
        xc = x - x.mean()
        return np.abs((yc * xc).sum(axis=axis) / np.sqrt((yc**2).sum(axis=axis) * (xc**2).sum()))
    return statistic


def _references(x: np.ndarray, y: np.ndarray, n_resamples: float, seed: int = 0) -> dict[str, float]:
    """scipy.stats.permutation_test over the orderings of y alone ("pairings" of one sample: n! of them)."""
    out = {}
    for key, (a, b) in (("pearson", (x, y)), ("spearman", (stats.rankdata(x), stats.rankdata(y)))):
        out[key] = stats.permutation_test((b,), _abs_r_against(a), permutation_type="pairings",
                                          n_resamples=n_resamples, alternative="greater", vectorized=True,
                                          rng=np.random.default_rng(seed)).pvalue
    return out


def test_exact_permutation_p_is_scipys_permutation_test() -> None:
    rng = np.random.default_rng(21)
    for n in (3, 4, 5, 7, 8):
        x, y = _judges(rng, n)  # y rounded: tied ranks for Spearman at times
        got = permutation_p(x, y, seed=1)
        assert got["exact"] and got["orderings"] == math.factorial(n) and "exact" in got["method"]
        for key, ref in _references(x, y, np.inf).items():
            assert got[key] == pytest.approx(ref, abs=1e-12), (n, key)


def test_exact_permutation_p_by_itertools_and_the_issue_example() -> None:
    """Written differently: every ordering of y by itertools, r by np.corrcoef, in a Python loop."""
    x, y = [0.52, 0.58, 0.61, 0.70, 0.74], [48.0, 55.0, 54.0, 66.0, 71.0]
    r = np.corrcoef(x, y)[0, 1]
    rho = stats.spearmanr(x, y).statistic
    orders = list(itertools.permutations(y))
    by_hand = sum(abs(np.corrcoef(x, o)[0, 1]) >= abs(r) - 1e-12 for o in orders) / len(orders)
    by_hand_rho = sum(abs(stats.spearmanr(x, o).statistic) >= abs(rho) - 1e-12 for o in orders) / len(orders)
    got = correlate(x, y, seed=3)
    assert got["pearson"]["p_value"] == pytest.approx(by_hand, abs=1e-12)
    assert got["spearman"]["p_value"] == pytest.approx(by_hand_rho, abs=1e-12)
    assert got["permutation"]["orderings"] == 120 and got["pearson"]["p_method"] == "exact permutation"
    # with 4 judges in a perfect ranking: the ordering and its reverse reach |rho| = 1, p = 2/24
    four = correlate([0.5, 0.6, 0.7, 0.72], [50, 58, 71, 75], seed=1)
    assert four["spearman"]["p_value"] == pytest.approx(2 / 24)


def test_monte_carlo_permutation_p_beyond_nine_judges() -> None:
    rng = np.random.default_rng(5)
    x, y = _judges(rng, 12)
    y = y + rng.normal(0, 25, 12)  # a weak association: p well inside (0, 1)
    got = permutation_p(x, y, seed=4)
    assert not got["exact"] and got["orderings"] == DRAWS and "Monte Carlo" in got["method"]
    for key, ref in _references(x, y, DRAWS, seed=9).items():
        se = math.sqrt(ref * (1 - ref) / DRAWS)  # two independent Monte-Carlo estimates: 5 SE of their gap
        assert abs(got[key] - ref) < 5 * math.sqrt(2) * se + 1e-5, key
    # a Monte-Carlo p is never 0: the observed ordering counts once
    strong = permutation_p(np.arange(15.0), np.arange(15.0) ** 2, seed=1, draws=1000)
    assert strong["pearson"] == strong["spearman"] == 1 / 1001
    assert permutation_p(x, y, seed=4) == got  # seeded


def test_fisher_z_against_scipy_and_by_hand() -> None:
    rng = np.random.default_rng(3)
    for n, level in ((4, 0.95), (6, 0.9), (15, 0.9), (30, 0.99)):
        x, y = _judges(rng, n)
        ref = stats.pearsonr(x, y).confidence_interval(level)  # scipy's default: the Fisher transformation
        got = correlate(x, y, seed=1, resamples=200, level=level)["pearson"]
        assert (got["low"], got["high"]) == pytest.approx((ref.low, ref.high), abs=1e-9)
        assert got["interval"] == "Fisher-z" and not got["clipped"]
        # Spearman: the Bonett-Wright variance, written out here (|rho| = 1 is the clipping test's)
        rho, q = stats.spearmanr(x, y).statistic, NormalDist().inv_cdf((1 + level) / 2)
        if abs(rho) == 1:
            continue
        half = q * math.sqrt((1 + rho**2 / 2) / (n - 3))
        s = correlate(x, y, seed=1, resamples=200, level=level)["spearman"]
        assert (s["low"], s["high"]) == pytest.approx((math.tanh(math.atanh(rho) - half),
                                                       math.tanh(math.atanh(rho) + half)), abs=1e-9)
    z, half = 0.5 * math.log(1.5 / 0.5), 1.959963984540054 / math.sqrt(7)
    assert fisher_z_interval(0.5, 10) == pytest.approx((math.tanh(z - half), math.tanh(z + half)))
    assert fisher_z_interval(0.5, 3) is None


def test_r_at_one_gets_a_clipped_non_degenerate_interval() -> None:
    q = 1.959963984540054
    for n in (4, 5, 12):
        x = np.linspace(0.4, 0.9, n)
        got = correlate(x, 20 + 50 * x, seed=1)  # exactly on a line: r = rho = 1
        p, s = got["pearson"], got["spearman"]
        assert p["estimate"] == pytest.approx(1.0) and p["clipped"] and s["clipped"]
        expect = math.tanh(math.atanh(PEARSON_CLIP) - q / math.sqrt(n - 3))
        assert p["low"] == pytest.approx(expect) and p["low"] < p["high"] < 1
        bound = 1 - 12 / (n**3 - n)  # one adjacent swap of n ranks: 1 - 6*2/(n(n^2-1))
        swapped = np.arange(n, dtype=float)
        swapped[[0, 1]] = swapped[[1, 0]]
        assert stats.spearmanr(np.arange(n), swapped).statistic == pytest.approx(bound)
        half = q * math.sqrt((1 + bound**2 / 2) / (n - 3))
        assert s["low"] == pytest.approx(math.tanh(math.atanh(bound) - half)) and s["low"] < s["high"] < 1
        mirrored = correlate(x, 20 - 50 * x, seed=1)["pearson"]  # r = -1: the mirror image
        assert (mirrored["low"], mirrored["high"]) == pytest.approx((-p["high"], -p["low"]))
    # tied ranks can put rho between the bound and 1: it keeps its own value, unclipped
    tied = correlate(np.arange(12.0), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 11], seed=1)["spearman"]
    assert 1 - 12 / (12**3 - 12) < tied["estimate"] < 1 and not tied["clipped"]


def test_fisher_z_intervals_cover_at_few_judges() -> None:
    """Coverage on bivariate normal data of known rho (the module doc's table, with fewer studies)."""
    rng = np.random.default_rng(40)
    sims = 3000
    for n, rho in ((4, 0.8), (6, 0.5), (10, 0.95)):
        rho_s = 6 / math.pi * math.asin(rho / 2)
        x = rng.normal(size=(sims, n))
        y = rho * x + math.sqrt(1 - rho**2) * rng.normal(size=(sims, n))
        r_p = stats.pearsonr(x, y, axis=1).statistic  # one scipy call for every study
        r_s = stats.pearsonr(stats.rankdata(x, axis=1), stats.rankdata(y, axis=1), axis=1).statistic
        hits_p = hits_s = 0
        for p, s in zip(r_p, np.clip(r_s, -1, 1), strict=True):
            lo, hi = fisher_z_interval(float(p), n) or (2.0, 2.0)
            hits_p += lo <= rho <= hi
            lo, hi = fisher_z_interval(float(s), n, spearman=True) or (2.0, 2.0)
            hits_s += lo <= rho_s <= hi
        assert 0.93 <= hits_p / sims <= 0.975, (n, rho, hits_p / sims)  # 3000 studies: SE 0.4 points
        assert hits_s / sims >= 0.93, (n, rho, hits_s / sims)  # conservative at 4 judges (ranks are coarse)


def test_the_bootstrap_undercovers_at_four_judges_so_it_is_not_printed() -> None:
    rng = np.random.default_rng(41)
    sims, n, rho = 400, 4, 0.8
    hits = 0
    for i in range(sims):
        x = rng.normal(size=n)
        y = rho * x + math.sqrt(1 - rho**2) * rng.normal(size=n)
        got = correlate(x, y, seed=i, resamples=500, draws=10)["pearson"]["bootstrap"]
        hits += got["low"] is not None and got["low"] <= rho <= got["high"]
    assert hits / sims < 0.88  # measured 79.5 % with 2,000 studies; 400 here: SE 2 points
    assert got["printed"] is False and "not printed" in got["why"]


def test_bootstrap_intervals_against_scipy() -> None:
    rng = np.random.default_rng(4)
    x, y = _judges(rng, 30)
    got = correlate(x, y, seed=5, resamples=20_000, draws=100)
    assert got["skipped_resamples"] == 0

    def pearson(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.asarray(stats.pearsonr(a, b, axis=axis).statistic)

    def spearman(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
        ra, rb = stats.rankdata(a, axis=axis), stats.rankdata(b, axis=axis)
        return np.asarray(stats.pearsonr(ra, rb, axis=axis).statistic)

    for key, statistic in (("pearson", pearson), ("spearman", spearman)):
        ref = stats.bootstrap((x, y), statistic, paired=True, vectorized=True, method="percentile",
                              n_resamples=20_000, rng=np.random.default_rng(6)).confidence_interval
        boot = got[key]["bootstrap"]
        assert boot["low"] == pytest.approx(ref.low, abs=0.02)
        assert boot["high"] == pytest.approx(ref.high, abs=0.02)
        assert boot["low"] <= got[key]["estimate"] <= boot["high"] and boot["printed"] is False


def test_resamples_without_spread_are_skipped_and_counted() -> None:
    # x = 0, 1, 2 and y = 0, 1, 0: a resample has no spread when all three draws are one judge (x) or
    # all are judges 0 and 2 (y): 8/27 + the all-judge-1 draw 1/27 = 1/3 of resamples
    pearson, spearman, skipped = bootstrap_correlations([0, 1, 2], [0, 1, 0], seed=1, resamples=30_000)
    assert skipped / 30_000 == pytest.approx(1 / 3, abs=0.012)
    assert len(pearson) == len(spearman) == 30_000 - skipped
    assert np.all(np.isfinite(pearson)) and np.all(np.isfinite(spearman))


def test_deterministic_and_order_free() -> None:
    rng = np.random.default_rng(7)
    x, y = _judges(rng, 9)
    got = correlate(x, y, seed=11, resamples=1000)
    assert got == correlate(x, y, seed=11, resamples=1000)
    order = rng.permutation(9)
    again = correlate(x[order], y[order], seed=11, resamples=1000)
    assert again == {**got, "seed": 11}  # the judges are put in a canonical order first
    other = correlate(x, y, seed=12, resamples=1000)
    assert other["pearson"]["bootstrap"]["low"] != got["pearson"]["bootstrap"]["low"]
    assert other["pearson"]["low"] == got["pearson"]["low"]  # Fisher-z and the exact p draw nothing
    assert other["pearson"]["p_value"] == got["pearson"]["p_value"]


def test_refuses_too_little_data() -> None:
    with pytest.raises(ValueError, match="at least 3 judges"):
        correlate([0.5, 0.6], [1, 2], seed=1)
    with pytest.raises(ValueError, match="same value for every judge"):
        correlate([0.5, 0.5, 0.5], [1, 2, 3], seed=1)
    with pytest.raises(ValueError, match="equal length"):
        correlate([0.5, 0.6, 0.7], [1, 2], seed=1)
    with pytest.raises(ValueError, match="finite"):
        correlate([0.5, math.nan, 0.7], [1, 2, 3], seed=1)
    few = correlate([0.1, 0.2, 0.3], [1, 3, 2], seed=1, resamples=1000)
    for name in ("pearson", "spearman"):  # n = 3: no Fisher-z interval, and the line says why
        assert few[name]["low"] is None and few[name]["high"] is None and "at least 4 judges" in few[name]["note"]
        assert "no interval" in summary(few, name) and "(6 orderings)" in summary(few, name)
    assert few["pearson"]["bootstrap"]["low"] is not None  # 3 judges: 1/9 of resamples skipped, the rest usable


def test_the_printed_line_names_the_interval_and_the_p() -> None:
    got = correlate([0.52, 0.58, 0.61, 0.70], [48.0, 55.0, 54.0, 66.0], seed=1)
    line = summary(got, "pearson")
    lo, hi = got["pearson"]["low"], got["pearson"]["high"]
    assert line.startswith(f"Pearson r = {got['pearson']['estimate']:.3f}, 95 % Fisher-z [{lo:.2f}, {hi:.2f}]")
    assert line.endswith(f"exact permutation p = {got['pearson']['p_value']:.3f} (24 orderings)")
    assert "Fisher-z (Bonett–Wright variance) [" in summary(got, "spearman")
    many = correlate(np.arange(11.0), np.arange(11.0) ** 1.5, seed=1, draws=1000)
    assert "Monte Carlo permutation p = " in summary(many, "pearson")
    assert "(1,000 random orderings)" in summary(many, "pearson")
