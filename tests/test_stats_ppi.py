"""PPI++ for a mean (analytics/ppi.py) against an independent computation: the variance by the delete-one
jackknife of the estimator (exact for a linear statistic), λ̂ by numerically minimising the variance, the
Wilson interval by scipy, and the interval's coverage by simulation. (``ppi_python`` is not installed; it
would be a further check.)"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, stats

from playlisteval.analytics.ppi import classical_mean, ppi_mean, tuned_lambda, wilson_interval


def _data(rng: np.random.Generator, n: int, big_n: int, noise: float = 0.15) -> tuple[np.ndarray, ...]:
    """A judge's hidden accuracy per item; the human label is a draw from it, the model sees it noisily."""
    truth = rng.random(n + big_n)
    y = (rng.random(n + big_n) < truth).astype(float)
    f = np.clip(truth + rng.normal(scale=noise, size=n + big_n) + 0.1, 0, 1)  # biased upwards by 0.1
    return y[:n], f[:n], f[n:]


def _jackknife_variance(y: np.ndarray, f: np.ndarray, g: np.ndarray, lam: float) -> float:
    """Delete-one jackknife of θ̂ = λ·mean(g) + mean(y − λf), the two samples jackknifed separately."""
    def theta(yy: np.ndarray, ff: np.ndarray, gg: np.ndarray) -> float:
        return float(lam * gg.mean() + (yy - lam * ff).mean())

    total = 0.0
    n = len(y)
    drop = [theta(np.delete(y, i), np.delete(f, i), g) for i in range(n)]
    total += (n - 1) / n * float(np.sum((np.array(drop) - np.mean(drop)) ** 2))
    big_n = len(g)
    drop = [theta(y, f, np.delete(g, j)) for j in range(big_n)]
    total += (big_n - 1) / big_n * float(np.sum((np.array(drop) - np.mean(drop)) ** 2))
    return total


def test_matches_the_jackknife_and_a_numerically_tuned_lambda() -> None:
    rng = np.random.default_rng(1)
    y, f, g = _data(rng, 80, 600)
    got = ppi_mean(y, f, g)
    lam = got["lambda"]
    assert 0 < lam < 1
    assert got["estimate"] == pytest.approx(lam * g.mean() + y.mean() - lam * f.mean())
    assert got["standard_error"] ** 2 == pytest.approx(_jackknife_variance(y, f, g, lam), rel=1e-9)
    z = stats.norm.ppf(0.975)
    assert (got["low"], got["high"]) == pytest.approx((got["estimate"] - z * got["standard_error"],
                                                       got["estimate"] + z * got["standard_error"]))
    # λ̂ is the minimiser of the plug-in variance (Var(f) pooled over both sets, Cov on the labelled)
    pooled, cov, var_y = np.var(np.r_[f, g], ddof=1), np.cov(y, f)[0, 1], np.var(y, ddof=1)
    n, big_n = len(y), len(g)

    def variance(t: float) -> float:
        return float(t**2 * pooled / big_n + (var_y - 2 * t * cov + t**2 * pooled) / n)

    best = optimize.minimize_scalar(variance, bounds=(0, 1), method="bounded", options={"xatol": 1e-10})
    assert lam == pytest.approx(best.x, abs=1e-6)
    assert got["n_labelled"] == 80 and got["n_unlabelled"] == 600 and got["lambda_tuned"] is True


def test_correlated_predictions_narrow_the_interval_and_lambda_zero_is_classical() -> None:
    rng = np.random.default_rng(2)
    y, f, g = _data(rng, 150, 3000, noise=0.05)
    got = ppi_mean(y, f, g)
    classical = got["classical"]
    assert classical["estimate"] == pytest.approx(y.mean())
    assert got["high"] - got["low"] < 0.95 * (classical["high"] - classical["low"])
    assert got["effective_labelled_n"] > 150
    zero = ppi_mean(y, f, g, lam=0.0)
    assert zero["estimate"] == pytest.approx(classical["estimate"])
    assert (zero["low"], zero["high"]) == pytest.approx((classical["low"], classical["high"]))
    assert zero["lambda_tuned"] is False
    ref = stats.ttest_1samp(y, 0).confidence_interval(0.95)  # t, not z: close but wider
    assert classical["low"] == pytest.approx(ref.low, abs=0.005)
    # λ = 1 is the original PPI: mean(f̃) + mean(y − f)
    one = ppi_mean(y, f, g, lam=1.0)
    assert one["estimate"] == pytest.approx(g.mean() + (y - f).mean())


def test_useless_predictions_get_lambda_zero_not_a_wider_interval() -> None:
    rng = np.random.default_rng(3)
    y = (rng.random(100) < 0.6).astype(float)
    f = rng.random(100)  # unrelated to y
    g = rng.random(1000)
    assert tuned_lambda(y, 1 - y, rng.random(1000)) == 0.0  # negative covariance clipped
    got = ppi_mean(y, f, g)
    assert got["high"] - got["low"] <= (got["classical"]["high"] - got["classical"]["low"]) * 1.02
    assert tuned_lambda(y, np.full(100, 0.7), np.full(50, 0.7)) == 0.0  # constant predictions


def test_coverage_by_simulation() -> None:
    rng = np.random.default_rng(4)
    truth_mean, hits, reps = 0.5, 0, 400  # E[Y] = E[truth] = 0.5
    for _ in range(reps):
        y, f, g = _data(rng, 60, 500)
        got = ppi_mean(y, f, g)
        hits += got["low"] <= truth_mean <= got["high"]
    assert hits / reps == pytest.approx(0.95, abs=0.035)  # Monte-Carlo SE ≈ 0.011


def test_wilson_against_scipy_and_small_samples() -> None:
    for k, n in ((0, 10), (3, 10), (10, 10), (57, 120)):
        ref = stats.binomtest(k, n).proportion_ci(0.95, method="wilson")
        assert wilson_interval(k, n) == pytest.approx((ref.low, ref.high), abs=1e-12)
    everyone = classical_mean([1.0] * 8)
    assert everyone["low"] is None and everyone["high"] is None  # Wald has nothing to go on
    assert everyone["wilson"]["low"] == pytest.approx(stats.binomtest(8, 8).proportion_ci(method="wilson").low)
    assert classical_mean([0.2, 0.7])["wilson"] is None  # not 0/1 labels
    same = ppi_mean([1.0, 1.0, 1.0], [0.9, 0.9, 0.9], [0.9, 0.9])
    assert same["low"] is None and "no interval" in same["note"]


def test_refuses_too_little_data() -> None:
    with pytest.raises(ValueError, match="at least 2 labelled"):
        ppi_mean([1.0], [0.9], [0.5, 0.4])
    with pytest.raises(ValueError, match="at least 2 unlabelled"):
        ppi_mean([1.0, 0.0], [0.9, 0.1], [0.5])
    with pytest.raises(ValueError, match="2 labels but 3"):
        ppi_mean([1.0, 0.0], [0.9, 0.1, 0.3], [0.5, 0.2])
    with pytest.raises(ValueError, match="finite"):
        ppi_mean([1.0, math.nan], [0.9, 0.1], [0.5, 0.2])
