"""Confidence intervals and paired tests for rates whose observations come in clusters (issue 9).

A benchmark's pairs come from fewer questions, and the pairs of one question are correlated (the same
evidence, the same gold answer). So every rate (an accuracy, a Hit@k, an nDCG) is a ratio
``Σ value / Σ count`` over *clusters* (questions by default; videos or playlists on request), and the
bootstrap resamples whole clusters: a resample draws K of the K clusters with replacement and takes
the ratio of the drawn clusters' sums. The interval is the percentile interval of those resamples,
with the inverse-CDF quantile, so that with few clusters (K^K ≤ the number of resamples) the exact
bootstrap distribution — every ordered draw enumerated, each of weight K^-K — gives the same kind of
answer as the Monte-Carlo one converges to.

Paired comparisons (retrieved − uniform evidence, one judge − another, a scope against the next) are a
mean of per-unit differences over the units present in both arms; their p-value is a sign-flip
permutation test over the clusters' summed differences (exact when there are at most
``EXACT_SIGN_FLIPS_MAX`` clusters), and a single rate can be tested the same way against a null value
(a shortcut judge against 50 %).

Determinism: the clusters are put in a canonical order by their own numbers before anything is drawn,
so the result depends on the seed and on the multiset of cluster sums only — never on store ids or on
the order rows were read (charter: same seed, same benchmark, same numbers on any store).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

LEVEL = 0.95
RESAMPLES = 2000
EXACT_CLUSTERS_MAX = 7  # 7^7 ≈ 0.8 M resamples enumerated at most (exact bootstrap)
EXACT_SIGN_FLIPS_MAX = 16  # 2^16 sign vectors enumerated at most; more clusters: Monte Carlo
_CELLS_PER_CHUNK = 4_000_000  # resample-weight cells drawn at once (bounded memory with many clusters)
_QUANTILE = "inverted_cdf"  # a quantile of the (discrete) bootstrap distribution itself, not interpolated


@dataclass(frozen=True)
class Interval:
    """A rate with its percentile interval; ``low``/``high`` are None with fewer than two clusters
    (one question cannot show how much the rate would vary: no interval rather than a false one)."""

    estimate: float
    low: float | None
    high: float | None
    n: int  # observations (pairs, questions)
    clusters: int  # units resampled
    level: float = LEVEL
    p_value: float | None = None  # paired comparisons and tests against a null value
    null: float | None = None  # the value p_value tests against

    @property
    def has_interval(self) -> bool:
        return self.low is not None and self.high is not None

    def excludes(self, value: float) -> bool:
        """True when ``value`` lies outside the interval (never when there is no interval)."""
        return self.low is not None and self.high is not None and not self.low <= value <= self.high

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"estimate": self.estimate, "low": self.low, "high": self.high, "n": self.n,
                               "clusters": self.clusters, "level": self.level}
        if self.p_value is not None:
            out["p_value"], out["null"] = self.p_value, self.null
        return out


def _rng(seed: int, stream: int) -> np.random.Generator:
    """One generator per purpose (bootstrap, sign flips) from the project seed."""
    return np.random.default_rng([int(seed) % 2**63, stream])


def cluster_sums(values: ArrayLike, clusters: Sequence[Hashable] | ArrayLike | None = None
                 ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Per cluster: the sum of its values and its number of observations, in canonical order (by sum,
    then count). No clusters given: each observation is its own cluster."""
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    if clusters is None:
        sums, counts = x.copy(), np.ones_like(x)
    else:
        labels = list(clusters) if not isinstance(clusters, np.ndarray) else clusters.tolist()
        if len(labels) != len(x):
            raise ValueError(f"{len(x)} values but {len(labels)} cluster labels")
        index: dict[Hashable, int] = {}
        inverse = np.fromiter((index.setdefault(label, len(index)) for label in labels), dtype=np.int64,
                              count=len(labels))
        sums = np.bincount(inverse, weights=x, minlength=len(index))
        counts = np.bincount(inverse, minlength=len(index)).astype(np.float64)
    order = np.lexsort((counts, sums))
    return sums[order], counts[order]


def _weights(k: int, resamples: int, rng: np.random.Generator) -> Iterator[NDArray[np.int64]]:
    """Chunks of resample weights: row r says how often each of the k clusters was drawn."""
    rows = max(1, _CELLS_PER_CHUNK // max(k, 1))
    done = 0
    while done < resamples:
        m = min(rows, resamples - done)
        yield rng.multinomial(k, np.full(k, 1.0 / k), size=m)
        done += m


def exact_distribution(sums: NDArray[np.float64], counts: NDArray[np.float64]) -> NDArray[np.float64]:
    """Every one of the K^K equally likely ordered resamples' ratio, sorted (the exact bootstrap
    distribution; only for tiny K)."""
    k = len(sums)
    draws = np.indices((k,) * k).reshape(k, -1).T  # row = the clusters drawn, in draw order
    return np.sort(sums[draws].sum(axis=1) / counts[draws].sum(axis=1))


def bootstrap_distribution(sums: NDArray[np.float64], counts: NDArray[np.float64], *, seed: int,
                           resamples: int = RESAMPLES, exact: bool | None = None) -> NDArray[np.float64]:
    """The ratio Σ S / Σ N over cluster resamples. ``exact`` None: enumerate when K^K ≤ resamples."""
    k = len(sums)
    if exact is None:
        exact = k**k <= resamples
    if exact:
        if k > EXACT_CLUSTERS_MAX:
            raise ValueError(f"exact bootstrap of {k} clusters would enumerate {k}^{k} resamples")
        return exact_distribution(sums, counts)
    out = [(w @ sums) / (w @ counts) for w in _weights(k, resamples, _rng(seed, 1))]
    return np.concatenate(out)


def percentile_interval(distribution: NDArray[np.float64], level: float = LEVEL) -> tuple[float, float]:
    tail = (1.0 - level) / 2
    low, high = np.quantile(distribution, [tail, 1.0 - tail], method=_QUANTILE)
    return float(low), float(high)


def sign_flip_p(cluster_totals: ArrayLike, *, seed: int, resamples: int = RESAMPLES) -> float:
    """Two-sided p-value of a sign-flip permutation test: under the null each cluster's total (of
    differences, or of value − null) is as likely negated; the statistic is the grand total."""
    d = np.sort(np.asarray(cluster_totals, dtype=np.float64).reshape(-1))
    observed = abs(d.sum())
    tolerance = 1e-9 * max(1.0, float(np.abs(d).sum()))  # equal totals must count as equal
    k = len(d)
    if k == 0 or observed <= tolerance:
        return 1.0
    if k <= EXACT_SIGN_FLIPS_MAX:
        bits = (np.arange(2**k)[:, None] >> np.arange(k)) & 1
        totals = ((1 - 2 * bits) * d).sum(axis=1)
        return float(np.mean(np.abs(totals) >= observed - tolerance))
    rng = _rng(seed, 2)
    hits = 0
    rows = max(1, _CELLS_PER_CHUNK // k)
    done = 0
    while done < resamples:
        m = min(rows, resamples - done)
        signs = rng.choice(np.array([-1.0, 1.0]), size=(m, k))
        hits += int(np.sum(np.abs(signs @ d) >= observed - tolerance))
        done += m
    return (hits + 1) / (resamples + 1)  # the observed labelling counts as one of the permutations


def bootstrap_mean(values: ArrayLike, clusters: Sequence[Hashable] | ArrayLike | None = None, *, seed: int,
                   resamples: int = RESAMPLES, level: float = LEVEL, null: float | None = None,
                   exact: bool | None = None) -> Interval:
    """The mean of ``values`` (pooled over observations) with its cluster-bootstrap interval; with
    ``null``, also the sign-flip p-value of the mean against that value."""
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    if len(x) == 0:
        raise ValueError("a rate of no observations")
    if not 0 < level < 1:
        raise ValueError(f"confidence level {level} is not between 0 and 1")
    sums, counts = cluster_sums(x, clusters)
    estimate = float(sums.sum() / counts.sum())
    low = high = None
    if len(sums) >= 2:
        low, high = percentile_interval(bootstrap_distribution(sums, counts, seed=seed, resamples=resamples,
                                                               exact=exact), level)
    p = None
    if null is not None:
        shifted, _ = cluster_sums(x - null, clusters)
        p = sign_flip_p(shifted, seed=seed, resamples=resamples)
    return Interval(estimate, low, high, len(x), len(sums), level, p, null)


def bootstrap_difference(a: ArrayLike, b: ArrayLike, clusters: Sequence[Hashable] | ArrayLike | None = None, *,
                         seed: int, resamples: int = RESAMPLES, level: float = LEVEL,
                         exact: bool | None = None) -> Interval:
    """Paired: ``a[i]`` and ``b[i]`` are one unit (a pair judged both ways) in cluster ``clusters[i]``.
    The mean difference a − b, its cluster-bootstrap interval (both arms resampled together) and the
    sign-flip p-value against no difference."""
    x, y = np.asarray(a, dtype=np.float64).reshape(-1), np.asarray(b, dtype=np.float64).reshape(-1)
    if len(x) != len(y):
        raise ValueError(f"a paired difference needs as many values on both sides ({len(x)} vs {len(y)})")
    return bootstrap_mean(x - y, clusters, seed=seed, resamples=resamples, level=level, null=0.0, exact=exact)
