"""External-validity correlations (analytics/correlation.py) against scipy: pearsonr/spearmanr for the
coefficients and p-values, PearsonRResult.confidence_interval for Fisher's interval, scipy.stats.bootstrap
for the percentile intervals; the skipped resamples against their exact probability."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from playlisteval.analytics.correlation import bootstrap_correlations, correlate, fisher_z_interval


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
        assert got["pearson"]["p_value"] == pytest.approx(pr.pvalue, rel=1e-9)
        assert got["spearman"]["estimate"] == pytest.approx(sr.statistic, abs=1e-12)
        assert got["spearman"]["p_value"] == pytest.approx(sr.pvalue, rel=1e-9)
        assert got["n"] == n and got["resamples"] == 500 and "method" in got


def test_fisher_z_against_scipy_and_by_hand() -> None:
    rng = np.random.default_rng(3)
    x, y = _judges(rng, 15)
    ref = stats.pearsonr(x, y).confidence_interval(0.9)  # scipy's default: the Fisher transformation
    got = correlate(x, y, seed=1, resamples=200, level=0.9)["pearson"]["fisher_z"]
    assert (got["low"], got["high"]) == pytest.approx((ref.low, ref.high), abs=1e-9)
    z, half = 0.5 * math.log(1.5 / 0.5), 1.959963984540054 / math.sqrt(7)
    assert fisher_z_interval(0.5, 10) == pytest.approx((math.tanh(z - half), math.tanh(z + half)))
    assert fisher_z_interval(0.5, 3) is None and fisher_z_interval(1.0, 10) is None


def test_bootstrap_intervals_against_scipy() -> None:
    rng = np.random.default_rng(4)
    x, y = _judges(rng, 30)
    got = correlate(x, y, seed=5, resamples=20_000)
    assert got["skipped_resamples"] == 0

    def pearson(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.asarray(stats.pearsonr(a, b, axis=axis).statistic)

    def spearman(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
        ra, rb = stats.rankdata(a, axis=axis), stats.rankdata(b, axis=axis)
        return np.asarray(stats.pearsonr(ra, rb, axis=axis).statistic)

    for key, statistic in (("pearson", pearson), ("spearman", spearman)):
        ref = stats.bootstrap((x, y), statistic, paired=True, vectorized=True, method="percentile",
                              n_resamples=20_000, rng=np.random.default_rng(6)).confidence_interval
        assert got[key]["low"] == pytest.approx(ref.low, abs=0.02)
        assert got[key]["high"] == pytest.approx(ref.high, abs=0.02)
        assert got[key]["low"] <= got[key]["estimate"] <= got[key]["high"]


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
    assert again["pearson"]["low"] == got["pearson"]["low"] and again["spearman"]["high"] == got["spearman"]["high"]
    assert correlate(x, y, seed=12, resamples=1000)["pearson"]["low"] != got["pearson"]["low"]


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
    assert few["pearson"]["fisher_z"] is None  # n = 3
    assert few["pearson"]["low"] is not None  # 3 judges: 1/9 of resamples skipped, the rest usable
