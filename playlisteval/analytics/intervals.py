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

import functools
from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

LEVEL = 0.95
RESAMPLES = 2000
EXACT_CLUSTERS_MAX = 7  # 7^7 ≈ 0.8 M resamples enumerated at most (exact bootstrap)
EXACT_SIGN_FLIPS_MAX = 16  # 2^16 sign vectors enumerated at most; more clusters: Monte Carlo
_CELLS_PER_CHUNK = 4_000_000  # drawn cluster indices drawn at once (bounded memory with many clusters)


#: One cluster label per observation: any hashable values, or integer codes in an array (numbered faster).
Labels = Sequence[Hashable] | NDArray[Any]


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


def cluster_codes(clusters: Labels) -> NDArray[np.int64]:
    """Each observation's cluster as a number, the clusters numbered in the order they first appear.

    Integer labels in an array (codes a caller made once for many rates) are numbered with numpy; any other
    labels through a dict. Both give the same numbers for the same partition, so nothing computed from
    them depends on which way was taken."""
    if isinstance(clusters, np.ndarray) and clusters.dtype.kind in "iub":
        flat = clusters.reshape(-1)
        if len(flat) == 0:
            return np.zeros(0, dtype=np.int64)
        _, first, inverse = np.unique(flat, return_index=True, return_inverse=True)
        rank = np.empty(len(first), dtype=np.int64)
        rank[np.argsort(first)] = np.arange(len(first))  # first indices are distinct: no ties to break
        return rank[inverse.reshape(-1)]
    labels: list[Hashable] = clusters.tolist() if isinstance(clusters, np.ndarray) else list(clusters)
    index: dict[Hashable, int] = {}
    return np.fromiter((index.setdefault(label, len(index)) for label in labels), dtype=np.int64, count=len(labels))


def cluster_sums(values: ArrayLike, clusters: Labels | None = None
                 ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Per cluster: the sum of its values and its number of observations, in canonical order (by sum,
    then count). No clusters given: each observation is its own cluster."""
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    sums: NDArray[np.float64]
    counts: NDArray[np.float64]
    if clusters is None:
        sums, counts = x.copy(), np.ones_like(x)
    else:
        inverse = cluster_codes(clusters)
        if len(inverse) != len(x):
            raise ValueError(f"{len(x)} values but {len(inverse)} cluster labels")
        k = int(inverse.max()) + 1 if len(inverse) else 0
        sums = np.bincount(inverse, weights=x, minlength=k).astype(np.float64)
        counts = np.bincount(inverse, minlength=k).astype(np.float64)
    order = np.lexsort((counts, sums))
    return sums[order], counts[order]


def _draws(k: int, resamples: int, rng: np.random.Generator) -> Iterator[NDArray[np.int64]]:
    """Chunks of resamples: row r holds the k clusters drawn (with replacement) by resample r."""
    rows = max(1, _CELLS_PER_CHUNK // max(k, 1))
    done = 0
    while done < resamples:
        m = min(rows, resamples - done)
        yield rng.integers(0, k, size=(m, k))
        done += m


@functools.lru_cache(maxsize=16)
def _weights(k: int, resamples: int, seed: int) -> NDArray[np.float64]:
    """How often each of the k clusters is drawn by each resample (resamples × k), when that fits in one
    chunk. The draws depend on (seed, k, resamples) only, so every rate over k clusters reuses them: a
    report with many rates then costs one weighted sum each, and gives the same numbers as drawing
    afresh (the generator would repeat the very same draws)."""
    (draws,) = list(_draws(k, resamples, _rng(seed, 1)))
    offsets = (np.arange(resamples) * k)[:, None]
    w = np.bincount((draws + offsets).reshape(-1), minlength=resamples * k).reshape(resamples, k)
    out = w.astype(np.float64)
    out.flags.writeable = False
    return out


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
    if k * resamples <= _CELLS_PER_CHUNK:
        w = _weights(k, resamples, int(seed))
        # einsum (no BLAS): OpenBLAS threads spin on a small product, and a shared machine then makes
        # each interval 20× slower; einsum also skips the (resamples × K) temporaries of multiply-and-sum
        return np.einsum("ij,j->i", w, sums) / np.einsum("ij,j->i", w, counts)
    out = [sums[d].sum(axis=1) / counts[d].sum(axis=1) for d in _draws(k, resamples, _rng(seed, 1))]
    return np.concatenate(out)


def percentile_interval(distribution: NDArray[np.float64], level: float = LEVEL) -> tuple[float, float]:
    """The percentile interval, with the inverse-CDF quantile: a quantile of the (discrete) bootstrap
    distribution itself, not interpolated between its atoms."""
    tail = (1.0 - level) / 2
    low, high = np.quantile(distribution, np.array([tail, 1.0 - tail]), method="inverted_cdf")
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
    hits = sum(int(np.sum(np.abs((signs * d).sum(axis=1)) >= observed - tolerance))
               for signs in _signs(k, resamples, int(seed)))
    return (hits + 1) / (resamples + 1)  # the observed labelling counts as one of the permutations


def _signs(k: int, resamples: int, seed: int) -> list[NDArray[np.float64]]:
    """Random sign vectors (resamples × k, in chunks); cached like ``_weights`` when they fit one chunk."""
    if k * resamples <= _CELLS_PER_CHUNK:
        return [_one_chunk_of_signs(k, resamples, seed)]
    rng, rows, out, done = _rng(seed, 2), max(1, _CELLS_PER_CHUNK // k), [], 0
    while done < resamples:
        m = min(rows, resamples - done)
        out.append(rng.choice(np.array([-1.0, 1.0]), size=(m, k)))
        done += m
    return out


@functools.lru_cache(maxsize=16)
def _one_chunk_of_signs(k: int, resamples: int, seed: int) -> NDArray[np.float64]:
    out = _rng(seed, 2).choice(np.array([-1.0, 1.0]), size=(resamples, k))
    out.flags.writeable = False
    return out


def _canonical(sums: ArrayLike, counts: ArrayLike, level: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The clusters checked and put in canonical order (by sum, then count): the result cannot depend on
    ids or on the order rows came in."""
    s = np.asarray(sums, dtype=np.float64).reshape(-1)
    n = np.asarray(counts, dtype=np.float64).reshape(-1)
    if len(s) != len(n):
        raise ValueError(f"{len(s)} cluster sums but {len(n)} counts")
    if len(s) == 0 or n.sum() <= 0:
        raise ValueError("a rate of no observations")
    if np.any(n <= 0):
        raise ValueError("a cluster without observations")
    if not 0 < level < 1:
        raise ValueError(f"confidence level {level} is not between 0 and 1")
    order = np.lexsort((n, s))
    return s[order], n[order]


def interval_from_sums(sums: ArrayLike, counts: ArrayLike, *, seed: int, resamples: int = RESAMPLES,
                       level: float = LEVEL, null: float | None = None, exact: bool | None = None) -> Interval:
    """The rate Σ sums / Σ counts of K clusters with its cluster-bootstrap interval (and, with ``null``,
    the sign-flip p-value against it). For callers that aggregate per cluster themselves (in SQL); many
    rates at once: ``batch.intervals_from_sums``."""
    s, n = _canonical(sums, counts, level)
    low = high = None
    if len(s) >= 2:
        low, high = percentile_interval(bootstrap_distribution(s, n, seed=seed, resamples=resamples, exact=exact),
                                        level)
    p = None if null is None else sign_flip_p(s - null * n, seed=seed, resamples=resamples)
    return Interval(float(s.sum() / n.sum()), low, high, int(round(n.sum())), len(s), level, p, null)


def bootstrap_mean(values: ArrayLike, clusters: Labels | None = None, *, seed: int,
                   resamples: int = RESAMPLES, level: float = LEVEL, null: float | None = None,
                   exact: bool | None = None) -> Interval:
    """The mean of ``values`` (pooled over observations) with its cluster-bootstrap interval; with
    ``null``, also the sign-flip p-value of the mean against that value."""
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    if len(x) == 0:
        raise ValueError("a rate of no observations")
    sums, counts = cluster_sums(x, clusters)
    return interval_from_sums(sums, counts, seed=seed, resamples=resamples, level=level, null=null, exact=exact)


def bootstrap_difference(a: ArrayLike, b: ArrayLike, clusters: Labels | None = None, *,
                         seed: int, resamples: int = RESAMPLES, level: float = LEVEL,
                         exact: bool | None = None) -> Interval:
    """Paired: ``a[i]`` and ``b[i]`` are one unit (a pair judged both ways) in cluster ``clusters[i]``.
    The mean difference a − b, its cluster-bootstrap interval (both arms resampled together) and the
    sign-flip p-value against no difference."""
    x, y = np.asarray(a, dtype=np.float64).reshape(-1), np.asarray(b, dtype=np.float64).reshape(-1)
    if len(x) != len(y):
        raise ValueError(f"a paired difference needs as many values on both sides ({len(x)} vs {len(y)})")
    return bootstrap_mean(x - y, clusters, seed=seed, resamples=resamples, level=level, null=0.0, exact=exact)
