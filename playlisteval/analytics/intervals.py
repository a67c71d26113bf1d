"""Confidence intervals and paired tests for rates whose observations come in clusters (issues 9, 40).

A benchmark's pairs come from fewer questions, and the pairs of one question are correlated (the same
evidence, the same gold answer). So every rate (an accuracy, a Hit@k, an nDCG) is a ratio
``Σ value / Σ count`` over *clusters* (questions by default; videos or playlists on request), and its
interval accounts for the clusters: a rate of counts gets the beta-binomial profile-likelihood interval,
another rate in [0, 1] Wilson's score interval on its effective size (design effect from the
cluster-robust variance), a paired difference of two 0/1 rates (judge against judge) MOVER from the two
sides' beta-binomial intervals (``mover``), another paired difference a cluster-robust t — all on
small-sample df, so that they still hold with the few playlists of a domain (``small_sample``: why, and
how it was measured). Each p-value is its interval's own test, so the two never disagree; a paired
difference also carries the exact sign-flip p over its clusters (``sign_flips``) as a check.

Determinism: the clusters are put in a canonical order by their own numbers before anything is computed,
so the result depends on the multiset of cluster sums only — never on store ids or on the order rows
were read (charter: same seed, same benchmark, same numbers on any store).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from playlisteval.analytics import mover, sign_flips, small_sample

LEVEL = 0.95
RESAMPLES = 2000  # Monte-Carlo draws of a sign-flip check that is neither enumerable nor on a lattice

#: One cluster label per observation: any hashable values, or integer codes in an array (numbered faster).
Labels = Sequence[Hashable] | NDArray[Any]
#: A rate to compute: its cluster sums, cluster counts and null value (None: no test; 0.0: a difference),
#: and optionally the clusters' two units each (dyadic clusters, ``interval_from_sums``'s ``members``).
Request = tuple[ArrayLike, ArrayLike, float | None] | tuple[ArrayLike, ArrayLike, float | None, ArrayLike | None]
#: A paired difference a − b to compute: the clusters' sums of a, of b, their counts, and the dyadic members
#: (or None). Sums of b None: the first are the sums of the differences themselves (the CR2 t).
PairedRequest = tuple[ArrayLike, ArrayLike | None, ArrayLike, ArrayLike | None]


@dataclass(frozen=True)
class Interval:
    """A rate with its interval; ``low``/``high`` are None with fewer than two clusters (one question
    cannot show how much the rate would vary: no interval rather than a false one)."""

    estimate: float
    low: float | None
    high: float | None
    n: int  # observations (pairs, questions)
    clusters: int  # units the interval accounts for
    level: float = LEVEL
    p_value: float | None = None  # paired comparisons and tests against a null value
    null: float | None = None  # the value p_value tests against
    method: str = ""  # how the interval and p were computed (small_sample's RATE_METHOD / DIFFERENCE_METHOD,
    # mover.METHOD)
    df: int | None = None  # degrees of freedom of the t quantile (K − 1; a rate's: Satterthwaite's)
    p_sign_flip: float | None = None  # a difference's exact (or Monte-Carlo) sign-flip p over its clusters
    p_holm: float | None = None  # p adjusted within its family (multiplicity.adjust_family)
    family: str | None = None  # the named family of tests p_holm was adjusted in, with its size
    caution: str | None = None  # why the interval may be narrower than it says (small_sample.near_ceiling)

    @property
    def has_interval(self) -> bool:
        return self.low is not None and self.high is not None

    def excludes(self, value: float) -> bool:
        """True when ``value`` lies outside the interval (never when there is no interval)."""
        return self.low is not None and self.high is not None and not self.low <= value <= self.high

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"estimate": self.estimate, "low": self.low, "high": self.high, "n": self.n,
                               "clusters": self.clusters, "level": self.level, "method": self.method,
                               "df": self.df}
        if self.p_value is not None:
            out["p_value"], out["null"] = self.p_value, self.null
        if self.p_sign_flip is not None:
            out["p_sign_flip"] = self.p_sign_flip
        if self.family is not None:
            out["p_holm"], out["family"] = self.p_holm, self.family
        if self.caution is not None:
            out["caution"] = self.caution
        return out


def cluster_codes(clusters: Labels) -> NDArray[np.int64]:
    """Each observation's cluster as a number, the clusters numbered in the order they first appear.

    Integer labels in an array (codes a caller made once for many rates) are numbered with numpy; any other
    labels through a dict. Both give the same numbers for the same partition, so nothing computed from
    them depends on which way was taken."""
    if isinstance(clusters, np.ndarray) and clusters.dtype.kind in "iub":
        flat = clusters.reshape(-1)
        if len(flat) == 0:
            return np.zeros(0, dtype=np.int64)
        codes = np.array(flat, dtype=np.int64)
        seen = np.maximum.accumulate(codes)
        if codes[0] == 0 and bool(np.all(codes[1:] <= seen[:-1] + 1)) and int(codes.min()) >= 0:
            # numbered so already (codes a caller ranked once, trust_data.Observations.cluster_codes): the very
            # numbers, without the sort (the trust figures number ~650 such sets a report)
            return codes
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


def _members(members: ArrayLike | None, sums: ArrayLike, counts: ArrayLike) -> NDArray[np.int64] | None:
    """Dyadic clusters' two units, in the canonical order ``_canonical`` gives their sums (sum, count,
    then the units, so that equal clusters cannot swap their members between runs)."""
    if members is None:
        return None
    m = np.asarray(members, dtype=np.int64).reshape(-1, 2)
    s, n = np.asarray(sums, dtype=np.float64).reshape(-1), np.asarray(counts, dtype=np.float64).reshape(-1)
    if len(m) != len(s):
        raise ValueError(f"{len(s)} clusters but {len(m)} members")
    return m[np.lexsort((m[:, 1], m[:, 0], n, s))]



def interval_from_sums(sums: ArrayLike, counts: ArrayLike, *, seed: int = 0, resamples: int = RESAMPLES,
                       level: float = LEVEL, null: float | None = None, kind: str | None = None,
                       members: ArrayLike | None = None,
                       computed: tuple[float, float, float | None, int] | None = None) -> Interval:
    """The rate Σ sums / Σ counts of K clusters with its interval (and, with ``null``, its p-value).

    ``kind``: "rate" (values in [0, 1]: the beta-binomial for counts, else Wilson with a design effect) or
    "difference" (paired a − b in [−1, 1]: cluster-robust t, with the sign-flip check);
    None: a difference when tested against 0 or when
    some cluster's mean lies outside [0, 1], else a rate. ``seed``/``resamples`` serve the sign-flip check
    only when it can be neither enumerated nor computed exactly. ``members``: for clusters that are pairs of
    units (a pair's two videos), each one's two unit codes — the variance is then dyadic
    (``small_sample.dyadic_variance``), df = units − 1, and there is no sign-flip check (flipping a pair of
    videos' total alone is not a null of dyadic data). ``computed``: a rate's (low, high, p, df) already
    computed for these canonical clusters (``intervals_from_sums`` batches the beta-binomial ones)."""
    m = _members(members, sums, counts)
    s, n = _canonical(sums, counts, level)
    estimate = float(s.sum() / n.sum())
    if kind is None:
        means = s / n
        kind = "difference" if null == 0.0 or bool(np.any((means < -1e-12) | (means > 1 + 1e-12))) else "rate"
    if kind == "rate":
        low, high, p, df = computed if computed is not None else small_sample.rate(s, n, level, null, m)
        units = len(s) if m is None else small_sample.unit_count(m)
        return Interval(estimate, low, high, int(round(n.sum())), len(s), level, p, null, small_sample.RATE_METHOD,
                        df or None, caution=small_sample.near_ceiling(estimate, units) if df else None)
    if kind != "difference":
        raise ValueError(f"unknown kind of rate {kind!r}: 'rate' or 'difference'")
    tested = 0.0 if null is None else null
    low, high, p, df = small_sample.difference(s, n, level, tested, members=m)
    check = (sign_flips.sign_flip_p(s - tested * n, seed=seed, resamples=resamples)
             if len(s) >= 2 and m is None else None)
    return Interval(estimate, low, high, int(round(n.sum())), len(s), level, p, tested,
                    small_sample.DIFFERENCE_METHOD, df or None, check)


def intervals_from_sums(requests: Sequence[Request], *, seed: int = 0, resamples: int = RESAMPLES,
                        level: float = LEVEL) -> list[Interval]:
    """``interval_from_sums(sums, counts, null=null, …)`` of each request, in order; the rates that get the
    beta-binomial interval are computed together (``small_sample.rates_by_likelihood``: one array for all,
    where one at a time would cost ~1,800 small numpy calls each)."""
    batch: dict[int, tuple[NDArray[np.float64], NDArray[np.float64], float | None]] = {}
    for i, r in enumerate(requests):
        if len(r) > 3 and r[3] is not None:
            continue
        s, n = _canonical(r[0], r[1], level)
        means = s / n
        null = r[2]
        is_rate = not (null == 0.0 or bool(np.any((means < -1e-12) | (means > 1 + 1e-12))))
        if is_rate and len(s) >= 2 and small_sample.likelihood_applies(s, n, None):
            batch[i] = (s, n, null)
    done = dict(zip(batch, small_sample.rates_by_likelihood(list(batch.values()), level), strict=True))
    return [interval_from_sums(r[0], r[1], seed=seed, resamples=resamples, level=level, null=r[2],
                               members=r[3] if len(r) > 3 else None, computed=done.get(i))
            for i, r in enumerate(requests)]


def cluster_mean(values: ArrayLike, clusters: Labels | None = None, *, seed: int = 0, resamples: int = RESAMPLES,
                 level: float = LEVEL, null: float | None = None, kind: str | None = None,
                 second: Labels | None = None) -> Interval:
    """The mean of ``values`` (pooled over observations) with its interval over the clusters; with
    ``null``, also its p-value against that value. ``second``: each observation's second unit (the video
    of a pair's second segment, when ``clusters`` holds the first's): the clusters are then dyadic."""
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    if len(x) == 0:
        raise ValueError("a rate of no observations")
    if second is not None and clusters is not None:
        sums, counts, members = dyad_sums(x, clusters, second)
        return interval_from_sums(sums, counts, seed=seed, resamples=resamples, level=level, null=null, kind=kind,
                                  members=members)
    sums, counts = cluster_sums(x, clusters)
    return interval_from_sums(sums, counts, seed=seed, resamples=resamples, level=level, null=null, kind=kind)


def dyad_sums(values: NDArray[np.float64], first: Labels, second: Labels
              ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.int64]]:
    """Per unordered pair of units (first, second): the values' sum, their count and the two unit codes
    (one numbering for both lists)."""
    a, b = list(first), list(second)
    if not len(a) == len(b) == len(values):
        raise ValueError(f"{len(values)} values but {len(a)} and {len(b)} unit labels")
    codes = cluster_codes(a + b)
    lo, hi = np.minimum(codes[:len(a)], codes[len(a):]), np.maximum(codes[:len(a)], codes[len(a):])
    dyads, inverse = np.unique(np.stack([lo, hi], axis=1), axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    sums = np.bincount(inverse, weights=values, minlength=len(dyads)).astype(np.float64)
    counts = np.bincount(inverse, minlength=len(dyads)).astype(np.float64)
    return sums, counts, dyads.astype(np.int64)


def paired_from_sums(requests: Sequence[PairedRequest], *, seed: int = 0, resamples: int = RESAMPLES,
                     level: float = LEVEL) -> list[Interval]:
    """The paired difference a − b of each request against 0 (issue 40): MOVER from the two sides' beta-
    binomial intervals where both are whole counts in one-way clusters (``mover``: a rate near 0 % or 100 %
    is seen as such), else the cluster-robust t of the differences (``interval_from_sums``). All MOVER
    requests are computed together, each distinct side fitted once (one judge against every other)."""
    out: list[Interval | None] = [None] * len(requests)
    batch: list[tuple[int, NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]] = []
    for i, (a, b, counts, members) in enumerate(requests):
        sa, n = np.asarray(a, dtype=np.float64).reshape(-1), np.asarray(counts, dtype=np.float64).reshape(-1)
        if b is None:
            out[i] = interval_from_sums(sa, n, seed=seed, resamples=resamples, level=level, null=0.0,
                                        kind="difference", members=members)
            continue
        sb = np.asarray(b, dtype=np.float64).reshape(-1)
        if not len(sa) == len(sb) == len(n):
            raise ValueError(f"a paired difference needs one sum per cluster on both sides ({len(sa)}, {len(sb)}, "
                             f"{len(n)} counts)")
        _canonical(sa - sb, n, level)  # the same checks as any difference
        if members is None and len(sa) >= 2 and mover.applies(sa, sb, n):
            order = np.lexsort((n, sb, sa))  # canonical: the result cannot depend on the clusters' order
            batch.append((i, sa[order], sb[order], n[order]))
        else:
            out[i] = interval_from_sums(sa - sb, n, seed=seed, resamples=resamples, level=level, null=0.0,
                                        kind="difference", members=members)
    if batch:
        width = max(len(n) for _, _, _, n in batch)
        grid = np.zeros((3, len(batch), width))
        for row, (_, sa, sb, n) in enumerate(batch):
            grid[0, row, :len(n)], grid[1, row, :len(n)], grid[2, row, :len(n)] = sa, sb, n
        got = mover.paired(grid[0], grid[1], grid[2], np.array([len(n) for _, _, _, n in batch]), level)
        for row, (i, sa, sb, n) in enumerate(batch):
            s, c = _canonical(sa - sb, n, level)
            out[i] = Interval(float(s.sum() / c.sum()), float(got.low[row]), float(got.high[row]), int(round(c.sum())),
                              len(s), level, float(got.p[row]), 0.0,
                              mover.METHOD if got.mover[row] else small_sample.DIFFERENCE_METHOD,
                              small_sample.rate_df(float(got.df[row])),
                              sign_flips.sign_flip_p(s, seed=seed, resamples=resamples))
    return [iv for iv in out if iv is not None]


def cluster_difference(a: ArrayLike, b: ArrayLike, clusters: Labels | None = None, *,
                       seed: int = 0, resamples: int = RESAMPLES, level: float = LEVEL,
                       second: Labels | None = None) -> Interval:
    """Paired: ``a[i]`` and ``b[i]`` are one unit (a pair judged both ways) in cluster ``clusters[i]``.
    The mean difference a − b, its interval and p against no difference (and the sign-flip check): MOVER
    for 0/1 values in one-way clusters (``paired_from_sums``), else (a no-verdict's 0.5, a share, dyadic
    clusters) the cluster-robust t."""
    x, y = np.asarray(a, dtype=np.float64).reshape(-1), np.asarray(b, dtype=np.float64).reshape(-1)
    if len(x) != len(y):
        raise ValueError(f"a paired difference needs as many values on both sides ({len(x)} vs {len(y)})")
    if (second is not None and clusters is not None) or not bool(np.all(np.isin(x, (0.0, 1.0))
                                                                       & np.isin(y, (0.0, 1.0)))):
        return cluster_mean(x - y, clusters, seed=seed, resamples=resamples, level=level, null=0.0,
                            kind="difference", second=second)
    if len(x) == 0:
        raise ValueError("a rate of no observations")
    codes = cluster_codes(clusters) if clusters is not None else np.arange(len(x))
    if len(codes) != len(x):
        raise ValueError(f"{len(x)} values but {len(codes)} cluster labels")
    k = int(codes.max()) + 1
    sums = [np.bincount(codes, weights=v, minlength=k).astype(np.float64) for v in (x, y)]
    counts = np.bincount(codes, minlength=k).astype(np.float64)
    return paired_from_sums([(sums[0], sums[1], counts, None)], seed=seed, resamples=resamples, level=level)[0]
