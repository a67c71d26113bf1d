"""External validity: does a judge's accuracy on this benchmark track a published score of the same judges?

Why: a benchmark that ranks judges the way an established leaderboard does measures something real; one
that does not needs explaining. The data are one pair of numbers per judge (accuracy here, score there),
so n is the number of judges — small — and every statistic says so:

* Pearson's r and Spearman's rho with scipy's p-values (``pearsonr``: exact under bivariate normality;
  ``spearmanr``: the t approximation, rough for a handful of judges).
* A percentile bootstrap interval of each, resampling judges with replacement (seeded). A resample in
  which either list has no spread (the same judge drawn every time, or tied values) has no correlation; it
  is skipped and counted, not scored as 0. With fewer than half the resamples usable there is no interval.
* For Pearson also the Fisher-z interval, tanh(atanh(r) ± z/√(n − 3)) — needs n > 3 and |r| < 1.

Fewer than three judges is refused: two points always lie on a line.
Determinism: the judges are put in a canonical order (by their values) before resampling, so the input
order never changes the interval.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from playlisteval.analytics.intervals import LEVEL, RESAMPLES, percentile_interval


def _paired(x: ArrayLike, y: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    a, b = np.asarray(x, dtype=np.float64).reshape(-1), np.asarray(y, dtype=np.float64).reshape(-1)
    if len(a) != len(b):
        raise ValueError(f"a correlation needs paired lists of equal length ({len(a)} vs {len(b)})")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ValueError("every value must be a finite number (drop judges without a score first)")
    if len(a) < 3:
        raise ValueError(f"a correlation needs at least 3 judges (got {len(a)}): two points always lie on a line")
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        raise ValueError("one of the lists has the same value for every judge: no correlation is defined")
    order = np.lexsort((b, a))
    return a[order], b[order]


def fisher_z_interval(r: float, n: int, level: float = LEVEL) -> tuple[float, float] | None:
    """Fisher's interval of a Pearson correlation r of n pairs; None with n ≤ 3 or |r| = 1."""
    if not 0 < level < 1:
        raise ValueError(f"confidence level {level} is not between 0 and 1")
    if n <= 3 or abs(r) >= 1:
        return None
    half = NormalDist().inv_cdf(0.5 + level / 2) / math.sqrt(n - 3)
    z = math.atanh(r)
    return math.tanh(z - half), math.tanh(z + half)


def _row_pearson(a: NDArray[np.float64], b: NDArray[np.float64]) -> NDArray[np.float64]:
    ac, bc = a - a.mean(axis=1, keepdims=True), b - b.mean(axis=1, keepdims=True)
    r = np.einsum("ij,ij->i", ac, bc) / np.sqrt(np.einsum("ij,ij->i", ac, ac) * np.einsum("ij,ij->i", bc, bc))
    return np.clip(r, -1.0, 1.0)


def bootstrap_correlations(x: ArrayLike, y: ArrayLike, *, seed: int, resamples: int = RESAMPLES
                           ) -> tuple[NDArray[np.float64], NDArray[np.float64], int]:
    """Pearson's and Spearman's coefficient of each usable resample of the judges, and how many resamples
    were skipped for lack of spread."""
    if resamples < 1:
        raise ValueError(f"resamples must be positive (got {resamples})")
    a, b = _paired(x, y)
    rng = np.random.default_rng([int(seed) % 2**63, 31])
    draws = rng.integers(0, len(a), size=(resamples, len(a)))
    xa, yb = a[draws], b[draws]
    usable = (np.ptp(xa, axis=1) > 0) & (np.ptp(yb, axis=1) > 0)
    xa, yb = xa[usable], yb[usable]
    from scipy import stats  # here, not at import: scipy.stats is ~0.3 s of every report's start (issue 26)

    pearson = _row_pearson(xa, yb)
    spearman = _row_pearson(stats.rankdata(xa, axis=1), stats.rankdata(yb, axis=1))
    return pearson, spearman, int(resamples - usable.sum())


def correlate(x: ArrayLike, y: ArrayLike, *, seed: int, resamples: int = RESAMPLES, level: float = LEVEL
              ) -> dict[str, Any]:
    """Pearson and Spearman correlation of ``x`` (e.g. benchmark accuracy per judge) and ``y`` (a published
    score of the same judges), with p-values, percentile bootstrap intervals and Pearson's Fisher-z interval."""
    if not 0 < level < 1:
        raise ValueError(f"confidence level {level} is not between 0 and 1")
    from scipy import stats  # here, not at import (issue 26)

    a, b = _paired(x, y)
    pr, sr = stats.pearsonr(a, b), stats.spearmanr(a, b)
    boot_p, boot_s, skipped = bootstrap_correlations(a, b, seed=seed, resamples=resamples)
    enough = len(boot_p) >= max(2, resamples / 2)
    p_low, p_high = percentile_interval(boot_p, level) if enough else (None, None)
    s_low, s_high = percentile_interval(boot_s, level) if enough else (None, None)
    fisher = fisher_z_interval(float(pr.statistic), len(a), level)
    out: dict[str, Any] = {
        "n": len(a), "resamples": resamples, "skipped_resamples": skipped, "level": level, "seed": seed,
        "method": "percentile bootstrap over judges (resamples without spread skipped); p-values by scipy",
        "pearson": {"estimate": float(pr.statistic), "p_value": float(pr.pvalue), "low": p_low, "high": p_high,
                    "fisher_z": None if fisher is None else {"low": fisher[0], "high": fisher[1]},
                    "method": "Pearson r; p exact under bivariate normality; Fisher-z and bootstrap intervals"},
        "spearman": {"estimate": float(sr.statistic), "p_value": float(sr.pvalue), "low": s_low, "high": s_high,
                     "method": "Spearman rho (average ranks for ties); p by the t approximation; bootstrap"},
    }
    if not enough:
        out["note"] = f"no bootstrap interval: {skipped} of {resamples} resamples had no spread"
    return out
