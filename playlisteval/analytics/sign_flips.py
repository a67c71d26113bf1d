"""The sign-flip permutation test of clustered totals, with no floor on its p-value where it can be exact
(issue 40): the check beside every paired difference's cluster-robust t.

Under the null, each cluster's total (of differences, or of value − null) is as likely negated; the
statistic is |Σ totals|. The p-value is the share of the 2^K sign vectors whose |total| reaches the
observed one, computed

* by enumerating the 2^K vectors when K ≤ ``EXACT_SIGN_FLIPS_MAX``;
* exactly for any K when the totals lie on a lattice (integer multiples of 1/``LATTICE``: accuracies,
  their differences, Hit@k — every total a multiple of ½), as the distribution of a sum of independent
  ±a_i, built one cluster at a time over the lattice (a subset-sum convolution: K × Σ|a| steps);
* otherwise by Monte Carlo over ``resamples`` random sign vectors, whose p cannot go below
  1 / (resamples + 1): the method says so, with that floor.

Past ``CHECKED_CLUSTERS`` clusters the check is not computed (None): with that many clusters the
cluster-robust t it checks is as good as exact, and a report compares hundreds of pairs of runs (at 1,000
questions the convolutions alone were 2.2 s of a cold report, issue 26's budget).

Before, every K > 16 went to Monte Carlo with 2,000 draws, so no p could fall below 1/2001 and Holm over
136 judge pairs could reject nothing (issue 40's first finding).
"""

from __future__ import annotations

import functools

import numpy as np
from numpy.typing import ArrayLike, NDArray

EXACT_SIGN_FLIPS_MAX = 16  # 2^16 sign vectors enumerated at most
LATTICE = 64  # totals that are multiples of 1/64 are tested exactly by convolution
_LATTICE_CELLS_MAX = 20_000_000  # K × Σ|a| on the lattice: beyond, Monte Carlo
CHECKED_CLUSTERS = 200  # beyond, no check at all (sign_flip returns None): the t needs none there
_CELLS_PER_CHUNK = 4_000_000


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng([int(seed) % 2**63, 2])


def _on_lattice(d: NDArray[np.float64]) -> NDArray[np.int64] | None:
    """The totals as integers: multiplied by the smallest power of two up to ``LATTICE`` that makes them
    whole, then divided by their gcd (halves stay a lattice of step ½, not 1/64: the convolution costs
    K × Σa); None when none does or the convolution would be too large."""
    scale = 1
    while scale <= LATTICE:
        scaled = d * scale
        rounded = np.round(scaled)
        if np.all(np.abs(scaled - rounded) <= 1e-6):
            a = np.abs(rounded).astype(np.int64)
            a //= int(np.gcd.reduce(a)) if np.any(a) else 1
            return a if len(a) * int(a.sum()) <= _LATTICE_CELLS_MAX else None
        scale *= 2
    return None


def _lattice_distribution(a: NDArray[np.int64]) -> NDArray[np.float64]:
    """P(the + subset's sum = s) for s = 0 … Σa under random signs (Σ ±a_i = 2s − Σa), exactly."""
    total = int(a.sum())
    dist = np.zeros(total + 1)
    dist[0] = 1.0
    reach = 0
    for value in a.tolist():
        if value == 0:
            continue
        nxt = dist[: reach + value + 1] * 0.5
        nxt[value:] += dist[: reach + 1] * 0.5
        dist[: reach + value + 1] = nxt
        reach += value
    return dist


def sign_flip_p(cluster_totals: ArrayLike, *, seed: int = 0, resamples: int = 2000) -> float | None:
    """Two-sided sign-flip p of the clusters' totals (see the module's docstring for how it is computed);
    None where it is not computed (too many clusters off the lattice)."""
    return sign_flip(cluster_totals, seed=seed, resamples=resamples)[0]


def sign_flip(cluster_totals: ArrayLike, *, seed: int = 0, resamples: int = 2000) -> tuple[float | None, str]:
    """(p, how it was computed: 'enumerated', 'exact', 'Monte Carlo (floor 1/N)' or 'not computed')."""
    d = np.sort(np.asarray(cluster_totals, dtype=np.float64).reshape(-1))
    k = len(d)
    observed = abs(d.sum())
    tolerance = 1e-9 * max(1.0, float(np.abs(d).sum()))  # equal totals must count as equal
    if k == 0 or observed <= tolerance:
        return 1.0, "exact"
    if k > CHECKED_CLUSTERS:
        return None, f"not computed ({k} clusters: the cluster-robust t needs no check there)"
    if k <= EXACT_SIGN_FLIPS_MAX:
        bits = _bits(k)
        totals = ((1 - 2 * bits) * d).sum(axis=1)
        return float(np.mean(np.abs(totals) >= observed - tolerance)), "enumerated"
    a = _on_lattice(d)
    if a is not None:
        dist = _lattice_distribution(a)
        total = int(a.sum())
        sums = 2 * np.arange(total + 1) - total  # Σ ±a for each size of the + subset's sum
        observed_int = abs(int((np.sign(d) * a).sum()))  # the observed total on the lattice, exactly
        return float(min(1.0, dist[np.abs(sums) >= observed_int].sum())), "exact"
    hits = 0
    rng, rows, done = _rng(seed), max(1, _CELLS_PER_CHUNK // k), 0
    while done < resamples:
        m = min(rows, resamples - done)
        signs = rng.choice(np.array([-1.0, 1.0]), size=(m, k))
        hits += int(np.sum(np.abs(signs @ d) >= observed - tolerance))
        done += m
    return (hits + 1) / (resamples + 1), f"Monte Carlo, {resamples} draws (floor {1 / (resamples + 1):.1e})"


@functools.lru_cache(maxsize=4)
def _bits(k: int) -> NDArray[np.int64]:
    out = (np.arange(2**k)[:, None] >> np.arange(k)) & 1
    out.flags.writeable = False
    return out


def smallest_p(clusters: int) -> float:
    """The smallest two-sided p an exact sign-flip test of K clusters can give: 2 / 2^K."""
    return float(2.0 ** (1 - clusters)) if clusters >= 1 else 1.0
