"""A paired difference of two rates of 0/1 values in one-way clusters by MOVER (issue 40: near the ceiling).

Why: the report compared two judges through the cluster-robust t of their per-cluster *differences*
(``small_sample.difference``), which cannot see that each side is a rate near 0 % or 100 %. There, a
sample of 10–40 clusters that missed the clusters where a judge errs shows a smaller spread as well as a
higher rate, and the CR2 t covered a 97 % − 92 % difference 84.4–92.8 % at K = 10 (docs/statistics.md).
Each side's own beta-binomial profile-likelihood interval (``beta_binomial``) does reach down to where the
rate may be; MOVER — the method of variance estimates recovery (Zou & Donner 2008; Newcombe 1998's hybrid
score interval is its independent case) — builds the difference's interval from them:

    L = d − √((p₁ − l₁)² + (u₂ − p₂)² − 2r(p₁ − l₁)(u₂ − p₂))
    U = d + √((u₁ − p₁)² + (p₂ − l₂)² − 2r(u₁ − p₁)(p₂ − l₂))

with d = p₁ − p₂, (l, u) each side's interval at the level, and r the correlation of the two rates: the
cluster-robust (CR2-weighted) correlation of the clusters' residuals S_g − p·N_g of the two sides. Clipped
to [−1, 1]. Where a side has no residual spread (0 % or 100 %, or every cluster alike) r is undefined and
taken as 0; below ``small_sample.FEW_CLUSTERS`` clusters too (a handful of clusters cannot estimate it).
Where the *difference* has none — every cluster's mean difference equal, e.g. both sides identical on every
pair — MOVER would shrink to (nearly) a point, and the CR2 t's own bound for that case
(``small_sample.difference``: how far the mean could move if a Wilson share of the pairs lay elsewhere)
is used, as the report did before.

The p-value is the α at which the MOVER interval at level 1 − α just reaches 0, so it agrees with the
interval by construction. A side's bound at quantile q is where its profile log-likelihood has dropped by
q²/2, so each side's profile is computed once on a grid of logit μ (``GRID`` points each way from μ̂, plus
the bound at the report's level, exact) and every other level's bound interpolated in the signed root
√(2·drop), nearly linear in logit μ; then log α is bisected for all pairs at once. The level's own interval
uses the exact bounds (the very ones ``beta_binomial.intervals`` gives each rate), and it decides on which
side of 1 − level the bisection runs, so an interval that excludes 0 never sits beside p ≥ 1 − level.
A side shared by several pairs (one judge against every other on the same pairs) is fitted once.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray
from scipy import special

from playlisteval.analytics import beta_binomial, small_sample

Array = NDArray[np.float64]
METHOD = ("MOVER (Zou & Donner 2008) from each side's beta-binomial profile-likelihood interval and the "
          "clusters' correlation of the two rates; p: the level at which the interval reaches 0")
GRID = np.concatenate([[0.0], np.geomspace(1e-3, 2 * beta_binomial.LOGIT_EDGE, 48)])  # logit μ from μ̂
ROOTS = np.concatenate([np.arange(1, 97) / 8, np.geomspace(13, 1e3, 12)])  # then points at these roots
P_FLOOR = 1e-20  # the smallest p reported: a difference whose interval excludes 0 even at level 1 − 1e-20
P_STEPS = 28  # bisection steps on log α (the bracket is at most 46 wide: p to ~2e-7 of itself)


class Sides(NamedTuple):
    """Fitted sides: rate, df, the exact bounds at the level, and per direction (lower, upper) a table of
    signed roots (nondecreasing) against logit μ for interpolating the bound at any quantile."""

    p_hat: Array
    df: Array
    low: Array
    high: Array
    roots: tuple[Array, Array]
    logits: tuple[Array, Array]


class Result(NamedTuple):
    low: Array
    high: Array
    p: Array
    df: Array  # the smaller side's Satterthwaite df (K − 1 where the CR2 t's bound was used)
    mover: NDArray[np.bool_]  # False: every cluster's difference equal, the CR2 t's bound (module doc)


def applies(sums_a: Array, sums_b: Array, counts: Array) -> bool:
    """Whether MOVER applies: whole counts on both sides (0/1 values summed per cluster), each within its
    cluster's size. Fractional values (a no-verdict's 0.5, an nDCG) keep the CR2 t."""
    def whole(x: Array) -> bool:
        return bool(np.all(np.abs(x - np.rint(x)) < 1e-9))

    return (whole(sums_a) and whole(sums_b) and whole(counts) and bool(np.all(sums_a >= -1e-9))
            and bool(np.all(sums_b >= -1e-9)) and bool(np.all(sums_a <= counts + 1e-9))
            and bool(np.all(sums_b <= counts + 1e-9)))


def fit_sides(sums: Array, counts: Array, clusters: NDArray[np.int64], level: float) -> Sides:
    """Each row's beta-binomial fit, exact bounds at ``level`` and interpolation tables (rows may be padded
    with clusters of count 0)."""
    f = beta_binomial.fit(sums, counts, clusters, small_sample.FEW_CLUSTERS)
    q = beta_binomial.quantile(f.df, level)
    low, high = beta_binomial.bounds(f, q)
    s, fail, n, w = f.data
    wide = (s[:, None, :], fail[:, None, :], n[:, None, :], w[:, None, :])  # each grid point sees its row's clusters
    edge = beta_binomial.LOGIT_EDGE

    def roots_at(x: Array) -> Array:
        return np.sqrt(2 * np.maximum(f.top[:, None] - beta_binomial.profile(special.expit(x), wide)[0], 0.0))

    # the grid starts at μ̂ — or, for a rate of 0 % or 100 % (μ̂ at the edge, the profile flat for a long way),
    # half an observation inside it, where the data begin to say something
    total = (n * w).sum(axis=1)
    start = np.where((f.p_hat <= 0) | (f.p_hat >= 1),
                     special.logit(np.clip(f.p_hat, 0.5 / total, 1 - 0.5 / total)), f.x_hat)
    roots, logits = [], []
    for side, exact in ((-1.0, low), (1.0, high)):
        # a coarse pass (geometric steps from the start), then points where it puts the roots ROOTS apart
        x = np.clip(np.concatenate([f.x_hat[:, None], start[:, None] + side * GRID[None, :]], axis=1), -edge, edge)
        x, root = _monotone(x, roots_at(x), f.x_hat, side)
        fine = np.clip(_lookup(root, x, np.broadcast_to(ROOTS, (len(x), len(ROOTS)))), -edge, edge)
        # the exact bound at the level among them, where its distance from μ̂ puts it
        with np.errstate(divide="ignore"):
            at = np.clip(special.logit(exact), -edge, edge)[:, None]
        x = np.concatenate([x, fine, at], axis=1)
        x, root = _monotone(x, np.concatenate([root, roots_at(fine), q[:, None]], axis=1), f.x_hat, side)
        roots.append(root)
        logits.append(x)
    return Sides(f.p_hat, f.df, low, high, (roots[0], roots[1]), (logits[0], logits[1]))


def _monotone(x: Array, root: Array, x_hat: Array, side: float) -> tuple[Array, Array]:
    """The points in order of their distance from μ̂, roots made nondecreasing (the bisection's reading of
    a profile that golden section may leave a hair off monotone)."""
    order = np.argsort(side * (x - x_hat[:, None]), axis=1, kind="stable")
    x, root = np.take_along_axis(x, order, 1), np.take_along_axis(root, order, 1)
    return x, np.maximum.accumulate(root, axis=1)


def _lookup(root: Array, x: Array, q: Array) -> Array:
    """Per row, the logit where the signed root reaches each of ``q`` (rows × queries): linear between the
    table's points, its last point (the edge) beyond it."""
    j = np.count_nonzero(root[:, None, :] < q[:, :, None], axis=2)
    last = root.shape[1] - 1
    hi, lo = np.minimum(j, last), np.maximum(j - 1, 0)
    r_hi, r_lo = np.take_along_axis(root, hi, 1), np.take_along_axis(root, lo, 1)
    x_hi, x_lo = np.take_along_axis(x, hi, 1), np.take_along_axis(x, lo, 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where((j > 0) & (j <= last), (q - r_lo) / (r_hi - r_lo), 1.0)
    return np.asarray(x_hi - (1.0 - share) * (x_hi - x_lo), dtype=np.float64)


def bound_at(sides: Sides, rows: NDArray[np.int64], q: Array, upper: bool) -> Array:
    """The bound of side ``rows[i]`` at quantile ``q[i]``, interpolated in its table (the edge beyond it)."""
    x = _lookup(sides.roots[int(upper)][rows], sides.logits[int(upper)][rows], q[:, None])[:, 0]
    mu, p = special.expit(x), sides.p_hat[rows]
    return np.asarray(np.maximum(mu, p) if upper else np.minimum(mu, p), dtype=np.float64)


def correlation(sums_a: Array, sums_b: Array, counts: Array) -> tuple[Array, Array]:
    """(r, se of the difference) per row: the CR2-weighted correlation of the two sides' cluster residuals
    (0 where a side has none) and the CR2 standard error of p₁ − p₂."""
    total = counts.sum(axis=1, keepdims=True)
    e1 = sums_a - sums_a.sum(axis=1, keepdims=True) / total * counts
    e2 = sums_b - sums_b.sum(axis=1, keepdims=True) / total * counts
    w = 1.0 / (1.0 - counts / total)
    v1, v2, c = (w * e1 * e1).sum(axis=1), (w * e2 * e2).sum(axis=1), (w * e1 * e2).sum(axis=1)
    scale = (1e-12 * total[:, 0]) ** 2
    varied = (v1 > scale) & (v2 > scale)
    r = np.where(varied, c / np.sqrt(np.where(varied, v1 * v2, 1.0)), 0.0)
    se = np.sqrt(np.maximum((w * (e1 - e2) ** 2).sum(axis=1), 0.0)) / total[:, 0]
    return np.clip(r, -1.0, 1.0), se


def _quantile(df: Array, alpha: Array) -> Array:
    """The two-sided 1 − α quantile of t on df (the normal's where df = ∞), precise for tiny α."""
    return np.asarray(np.where(np.isinf(df), -special.ndtri(alpha / 2),
                               -special.stdtrit(np.minimum(df, 1e300), alpha / 2)), dtype=np.float64)


def _reach(d: Array, r: Array, lower: tuple[Array, Array], upper: tuple[Array, Array], p: tuple[Array, Array]
           ) -> tuple[Array, Array]:
    """MOVER's (L, U) before clipping from the sides' (lower bounds, upper bounds, rates)."""
    a1, b2 = p[0] - lower[0], upper[1] - p[1]
    b1, a2 = upper[0] - p[0], p[1] - lower[1]
    down = np.sqrt(np.maximum(a1 * a1 + b2 * b2 - 2 * r * a1 * b2, 0.0))
    up = np.sqrt(np.maximum(b1 * b1 + a2 * a2 - 2 * r * b1 * a2, 0.0))
    return d - down, d + up


def paired(sums_a: Array, sums_b: Array, counts: Array, clusters: NDArray[np.int64], level: float) -> Result:
    """MOVER's (low, high, p against 0, df, whether MOVER was used) of each row's p₁ − p₂: rows of cluster
    sums of the two sides on the same pairs (the same ``counts``; padded with clusters of count 0), ``clusters``
    each row's K (≥ 2). Every row must satisfy ``applies``."""
    sa, sb = np.atleast_2d(np.asarray(sums_a, dtype=np.float64)), np.atleast_2d(np.asarray(sums_b, dtype=np.float64))
    n = np.broadcast_to(np.atleast_2d(np.asarray(counts, dtype=np.float64)), sa.shape)
    k = np.broadcast_to(np.asarray(clusters, dtype=np.int64), (len(sa),))
    # each distinct side fitted once: the clusters of a side in canonical order are its key
    keys: dict[bytes, int] = {}
    side_s: list[Array] = []
    side_n: list[Array] = []
    side_k: list[int] = []
    index = np.empty((2, len(sa)), dtype=np.int64)
    for i in range(len(sa)):
        for j, s in enumerate((sa[i], sb[i])):
            order = np.lexsort((n[i], s))
            key = np.concatenate([s[order], n[i][order]]).tobytes()
            if key not in keys:
                keys[key] = len(side_s)
                side_s.append(s[order])
                side_n.append(n[i][order])
                side_k.append(int(k[i]))
            index[j, i] = keys[key]
    sides = fit_sides(np.array(side_s), np.array(side_n), np.array(side_k, dtype=np.int64), level)
    ia, ib = index
    p1, p2 = sides.p_hat[ia], sides.p_hat[ib]
    d = p1 - p2
    r, se = correlation(sa, sb, n)
    # below FEW_CLUSTERS the correlation is noise (two clusters give r = ±1 whatever the truth, and MOVER's
    # width is concave in r, so noise narrows it: 84.6–89.6 % at K = 2, ICC 0.3, docs/statistics.md): r = 0,
    # conservative for judges, whose accuracies correlate positively
    r = np.where(k < small_sample.FEW_CLUSTERS, 0.0, r)
    low, high = _reach(d, r, (sides.low[ia], sides.low[ib]), (sides.high[ia], sides.high[ib]), (p1, p2))

    def gap(log_alpha: Array) -> Array:
        """|d| minus the MOVER reach toward 0 at level 1 − α: > 0 while the interval excludes 0."""
        alpha = np.exp(log_alpha)
        qa, qb = _quantile(sides.df[ia], alpha), _quantile(sides.df[ib], alpha)
        reach_low, reach_high = _reach(d, r, (bound_at(sides, ia, qa, False), bound_at(sides, ib, qb, False)),
                                       (bound_at(sides, ia, qa, True), bound_at(sides, ib, qb, True)), (p1, p2))
        return np.asarray(np.where(d > 0, reach_low, -reach_high), dtype=np.float64)

    excluded = ((d > 0) & (low > 0)) | ((d < 0) & (high < 0))
    # the bracket in log α: at ``holds`` the interval holds 0 (gap ≤ 0), at ``misses`` it does not; which side
    # of the level it lies on is decided by the level's exact interval, and p is read at ``holds``: strictly
    # below 1 − level where that interval excludes 0, at or above it where it does not
    level_at = np.log(1.0 - level)
    holds, misses = np.full(len(d), level_at), np.zeros(len(d))
    holds[excluded], misses[excluded] = np.log(P_FLOOR), level_at
    floor = excluded & (gap(holds) > 0)  # excludes 0 even at 1 − P_FLOOR
    none = ~excluded & ((d == 0) | (gap(misses) <= 0))  # holds 0 even as a point (level 0)
    for _ in range(P_STEPS):
        middle = (holds + misses) / 2
        out = gap(middle) > 0
        holds, misses = np.where(out, holds, middle), np.where(out, middle, misses)
    p = np.where(floor, P_FLOOR, np.where(none, 1.0, np.exp(holds)))
    df = np.minimum(sides.df[ia], sides.df[ib])
    low, high = np.clip(low, -1.0, 1.0), np.clip(high, -1.0, 1.0)
    # every cluster's difference equal: the CR2 t's own bound (module doc)
    flat = se <= 1e-12 * np.maximum(1.0, np.abs(d))
    for row in np.flatnonzero(flat).tolist():
        used = n[row] > 0
        got = small_sample.difference(sa[row][used] - sb[row][used], n[row][used], level, 0.0)
        if got[0] is None or got[1] is None or got[2] is None:
            raise ValueError("a paired difference needs at least 2 clusters")
        low[row], high[row], p[row], df[row] = got[0], got[1], got[2], got[3]
    return Result(low, high, p, df, ~flat)
