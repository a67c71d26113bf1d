"""The cluster percentile bootstrap: kept for statistics with no closed-form interval (Krippendorff's alpha
of the human study) and as the naive peer that ``python -m bench science`` measures the report's methods
against (issue 40: it covers ~95 % with 40 clusters, far less with 10 or fewer).

A resample draws K of the K clusters with replacement and takes the ratio of the drawn clusters' sums;
the interval is the percentile interval of those resamples with the inverse-CDF quantile.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

LEVEL = 0.95
_CELLS_PER_CHUNK = 4_000_000  # drawn cluster indices at once (bounded memory with many clusters)


def bootstrap_distribution(sums: NDArray[np.float64], counts: NDArray[np.float64], *, seed: int,
                           resamples: int = 2000) -> NDArray[np.float64]:
    """The ratio Σ S / Σ N over ``resamples`` cluster resamples (Monte Carlo, seeded)."""
    k = len(sums)
    rng = np.random.default_rng([int(seed) % 2**63, 1])
    rows, out, done = max(1, _CELLS_PER_CHUNK // max(k, 1)), [], 0
    while done < resamples:
        m = min(rows, resamples - done)
        drawn = rng.integers(0, k, size=(m, k))
        out.append(sums[drawn].sum(axis=1) / counts[drawn].sum(axis=1))
        done += m
    return np.concatenate(out)


def percentile_interval(distribution: NDArray[np.float64], level: float = LEVEL) -> tuple[float, float]:
    """The percentile interval, with the inverse-CDF quantile: a quantile of the (discrete) bootstrap
    distribution itself, not interpolated between its atoms."""
    tail = (1.0 - level) / 2
    low, high = np.quantile(distribution, np.array([tail, 1.0 - tail]), method="inverted_cdf")
    return float(low), float(high)
