"""Many rates' intervals at once (issue 13): the same numbers as ``intervals.interval_from_sums`` called
on each, for a fraction of the time.

A report draws ~1,200 intervals, most over the same K clusters. Every resample of K clusters uses the
same draws (``intervals._weights``: how often each of the K canonically ordered clusters is drawn, one
row per resample), and a rate's clusters, in canonical order (by sum, then count), come in runs of
equal (sum, count): a question's 10 pairs can only sum to 0, ½, 1, … 10. So a resample's Σ weight ×
sum is Σ over those runs of the run's sum × how often the resample drew the run's clusters, and that
count is a difference of two columns of the weights' running sum (computed once per K): ~20 terms per
resample instead of K. The sign-flip totals likewise, over runs of equal (sorted) differences.

The numbers stay identical, not merely close: a product is only batched when every value is a
multiple of 2^-10 (accuracies, shares and paired differences are multiples of ½) and small enough
that no partial sum can round, so every sum is exact and the order BLAS adds in cannot matter.
Anything else (nDCG, odd null values, too many clusters for one chunk, the exact enumerations of
tiny K) goes through ``interval_from_sums`` one rate at a time, as before.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from playlisteval.analytics import intervals
from playlisteval.analytics.intervals import Interval

Request = tuple[ArrayLike, ArrayLike, float | None]  # cluster sums, cluster counts, null value (or None)

_SCALE = 2.0**10  # values must be multiples of 1 / _SCALE to be batched
_EXACT_BELOW = 2.0**52  # |scaled partial sums| below this: every addition is exact
_COLUMNS = 256  # rates per chunk (bounded memory: resamples × 256 doubles per operand)


def _exact_sums(x: NDArray[np.float64], k: int) -> bool:
    """Every weighted sum of ``x`` over k draws is exact in float64, whatever the order of addition."""
    scaled = x * _SCALE
    return bool(np.all(scaled == np.round(scaled))) and float(np.abs(scaled).max(initial=0.0)) * k < _EXACT_BELOW


def intervals_from_sums(requests: Sequence[Request], *, seed: int, resamples: int = intervals.RESAMPLES,
                        level: float = intervals.LEVEL) -> list[Interval]:
    """``interval_from_sums(sums, counts, null=null, …)`` of each request, in order (same numbers)."""
    out: list[Interval | None] = [None] * len(requests)
    canon: list[tuple[NDArray[np.float64], NDArray[np.float64]]] = []
    by_k: dict[int, list[int]] = defaultdict(list)
    for i, (sums, counts, null) in enumerate(requests):
        s, n = intervals._canonical(sums, counts, level)
        canon.append((s, n))
        k = len(s)
        batched = (k >= 2 and k**k > resamples and k * resamples <= intervals._CELLS_PER_CHUNK
                   and _exact_sums(s, k) and _exact_sums(n, k)
                   and (null is None or k <= intervals.EXACT_SIGN_FLIPS_MAX or _exact_sums(s - null * n, k)))
        if batched:
            by_k[k].append(i)
        else:
            out[i] = intervals.interval_from_sums(s, n, seed=seed, resamples=resamples, level=level, null=null)
    for k, members in by_k.items():
        for start in range(0, len(members), _COLUMNS):
            chunk = members[start:start + _COLUMNS]
            for i, iv in zip(chunk, _batch(k, [canon[i] for i in chunk], [requests[i][2] for i in chunk],
                                           seed, resamples, level), strict=True):
                out[i] = iv
    return [iv for iv in out if iv is not None]


@functools.lru_cache(maxsize=2)  # up to resamples × K doubles each (32 MB)
def _running(k: int, resamples: int, seed: int, signs: bool) -> NDArray[np.float64]:
    """The drawn weights' (or the sign vectors') running sum over clusters, a row of zeros first (cluster ×
    resample, so that a run's rows are contiguous): row b − row a is how often each resample drew clusters
    a … b−1 (exact: integers)."""
    m = intervals._one_chunk_of_signs(k, resamples, seed) if signs else intervals._weights(k, resamples, seed)
    out = np.zeros((k + 1, resamples))
    out[1:] = np.cumsum(m, axis=1).T  # summed along the rows as stored (a strided cumsum is 10× slower)
    out.flags.writeable = False
    return out


def _runs(*columns: NDArray[np.float64]) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    """Starts and ends of the runs of equal values (of every column at once) along the clusters."""
    changed = np.zeros(len(columns[0]) - 1, dtype=bool)
    for c in columns:
        changed |= c[1:] != c[:-1]
    starts = np.concatenate([[0], np.flatnonzero(changed) + 1])
    return starts, np.append(starts[1:], len(columns[0]))


def _weighted(running: NDArray[np.float64], starts: NDArray[np.intp], ends: NDArray[np.intp],
              *values: NDArray[np.float64]) -> list[NDArray[np.float64]]:
    """Each resample's Σ weight × value for each of ``values`` (constant over each run)."""
    drawn = running[ends] - running[starts]  # runs × resamples
    return [v[starts] @ drawn for v in values]


def _batch(k: int, canon: list[tuple[NDArray[np.float64], NDArray[np.float64]]], nulls: list[float | None],
           seed: int, resamples: int, level: float) -> list[Interval]:
    """Rates over k clusters each (canonically ordered, exact sums): their intervals and p-values."""
    running = _running(k, resamples, int(seed), False)
    distribution = np.empty((resamples, len(canon)))
    for j, (s, n) in enumerate(canon):  # column j: rate j's resampled ratios, as bootstrap_distribution draws them
        sums, counts = _weighted(running, *_runs(s, n), s, n)
        distribution[:, j] = sums / counts
    tail = (1.0 - level) / 2
    bounds = np.quantile(distribution, np.array([tail, 1.0 - tail]), axis=0, method="inverted_cdf")
    p_values = _sign_flips(k, canon, nulls, seed, resamples)
    return [Interval(float(si.sum() / ni.sum()), float(bounds[0, j]), float(bounds[1, j]), int(round(ni.sum())),
                     k, level, p_values[j], nulls[j]) for j, (si, ni) in enumerate(canon)]


def _sign_flips(k: int, canon: list[tuple[NDArray[np.float64], NDArray[np.float64]]], nulls: list[float | None],
                seed: int, resamples: int) -> list[float | None]:
    """``intervals.sign_flip_p`` of each rate with a null value (Monte Carlo ones as one product)."""
    out: list[float | None] = [None] * len(canon)
    monte_carlo: list[int] = []
    for j, ((s, n), null) in enumerate(zip(canon, nulls, strict=True)):
        if null is None:
            continue
        if k <= intervals.EXACT_SIGN_FLIPS_MAX:
            out[j] = intervals.sign_flip_p(s - null * n, seed=seed, resamples=resamples)
        else:
            monte_carlo.append(j)
    if not monte_carlo:
        return out
    running = _running(k, resamples, int(seed), True)
    for j in monte_carlo:
        dj = np.sort(canon[j][0] - nulls[j] * canon[j][1])  # type: ignore[operator]
        (totals,) = _weighted(running, *_runs(dj), dj)
        observed = abs(dj.sum())
        tolerance = 1e-9 * max(1.0, float(np.abs(dj).sum()))  # as sign_flip_p
        if observed <= tolerance:
            out[j] = 1.0
            continue
        hits = int(np.sum(np.abs(totals) >= observed - tolerance))
        out[j] = (hits + 1) / (resamples + 1)
    return out
