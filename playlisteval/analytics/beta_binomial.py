"""A rate's interval from the beta-binomial profile likelihood (issue 40: near-ceiling rates with clusters).

Why: the Wilson-with-design-effect interval (``small_sample.wilson``) takes the design effect from the
sample's own spread. Near 0 % or 100 % with clustering, a judge's errors sit in a few clusters (the Beta of
cluster accuracies is J-shaped); a sample of 10–40 clusters that missed them shows a higher rate *and* a
smaller spread, so the interval misses high (a 97 % judge at ICC 0.3 was covered 72–88 %, docs/statistics.md).
A likelihood that models the clusters asks, of each candidate rate μ, whether *some* overdispersion could
have produced these clusters — ten perfect clusters are not unlikely under μ = 0.97 with a high ICC — so
the interval reaches down to μ where a plug-in variance cannot.

The model: cluster g's S_g of N_g is beta-binomial with mean μ and overdispersion θ = 1/ρ − 1 (ρ the
intra-cluster correlation; θ = ∞ is the binomial, no clustering) — the standard model of overdispersed
binomial counts (Skellam 1948; Williams 1975; Crowder 1978). The interval is the profile-likelihood set
{μ : 2(ℓ(μ̂, θ̂) − max_θ ℓ(μ, θ)) ≤ q²} (e.g. Venzon & Moolgavkar 1988), q the two-sided t quantile; the
p-value against μ₀ is the signed root of the same statistic on the same t, so it never disagrees with the
interval. The t's degrees of freedom: Satterthwaite's (1946) for a variance made of a known binomial part
and a between-cluster part estimated on K − 1 df, df = (K − 1)·(deff / (deff − 1))² with deff = 1 +
(ΣN_g²/N − 1)·ρ̂ — K − 1 when the clusters dominate, ∞ (the normal quantile) when ρ̂ = 0. Below
``few_clusters`` clusters the df is K − 1 whatever ρ̂ says (a handful of clusters cannot show that the
clustering is negligible; the same rule as ``small_sample.effective_n``'s floor).

Computation: θ is maximised by golden-section search on log θ ∈ [−4, 12] (and the binomial limit), μ̂ by
golden section on logit μ, each bound by bisection on logit μ — fixed iteration counts and element-wise
numpy, so that a batch of studies gives, row for row, the very numbers each study would alone (the bench
relies on that). Clusters with N_g = 0 add nothing to the likelihood: rows of different K share one array
padded with them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray
from scipy import special

from playlisteval.analytics import distributions

Array = NDArray[np.float64]
Distinct = tuple[Array, Array, Array, Array]  # per row: distinct clusters' s, f = n − s, n, and multiplicity w
METHOD = ("beta-binomial profile likelihood (signed root on t, Satterthwaite df between N − 1 and K − 1); "
          "LR p")
LOG_THETA = (-4.0, 12.0)  # θ = 1/ρ − 1 searched over e^−4 … e^12 (ρ 0.98 … 6e-6), beside ρ = 0 exactly
LOGIT_EDGE = 30.0  # |logit μ| searched up to this (μ within 1e-13 of 0 or 1)
THETA_STEPS, MLE_STEPS, BOUND_STEPS = 18, 30, 30
_GOLDEN = (math.sqrt(5) - 1) / 2


def log_likelihood(mu: Array, theta: Array, data: Distinct) -> Array:
    """Σ_g log P(S_g = s_g) under a beta-binomial of mean ``mu`` and θ (rows; the binomial coefficient,
    the same for every μ and θ, left out)."""
    a, b, t = (mu * theta)[..., None], ((1 - mu) * theta)[..., None], theta[..., None]
    g = special.gammaln
    s, f, n, w = data
    # in place, in the order of  w * (g(s + a) - g(a) + g(f + b) - g(b) - g(n + t) + g(t)):  the same floats
    # with fewer arrays made (this runs ~10,000 times a report)
    x = g(s + a)
    x -= g(a)
    x += g(f + b)
    x -= g(b)
    x -= g(n + t)
    x += g(t)
    x *= w
    return _total(x)


def _binomial(mu: Array, data: Distinct) -> Array:
    """The θ = ∞ limit (no clustering): Σ s log μ + f log(1 − μ), 0·log 0 taken as 0."""
    m = mu[..., None]
    s, f, _, w = data
    with np.errstate(divide="ignore"):
        terms = (np.where(s > 0, s * np.log(np.maximum(m, 1e-300)), 0.0)
                 + np.where(f > 0, f * np.log(np.maximum(1 - m, 1e-300)), 0.0))
    return _total(w * terms)


def _total(terms: Array) -> Array:
    """The sum over the last axis in strict left-to-right order (a cumulative sum's last value): unlike
    np.sum's pairwise blocks, trailing zeros (padding) cannot change its rounding, so a row gives the same
    bits in any batch — and the golden-section and bisection steps, which compare these sums, the same path."""
    return np.asarray(np.cumsum(terms, axis=-1)[..., -1], dtype=np.float64)


def distinct(sums: Array, counts: Array) -> Distinct:
    """Each row's distinct clusters (s, f = n − s, n) with how many clusters share them (w), rows padded with
    w = 0: the likelihood is a sum over clusters, and identical clusters (many, with small or equal-sized
    clusters) need their terms computed once."""
    s, n = np.asarray(sums, dtype=np.float64), np.asarray(counts, dtype=np.float64)
    order = np.lexsort((n, s), axis=-1)
    s, n = np.take_along_axis(s, order, -1), np.take_along_axis(n, order, -1)
    new = np.ones(s.shape, dtype=bool)
    new[:, 1:] = (s[:, 1:] != s[:, :-1]) | (n[:, 1:] != n[:, :-1])
    group = np.cumsum(new, axis=1) - 1
    width = int(group.max()) + 1 if group.size else 1
    rows = np.broadcast_to(np.arange(len(s))[:, None], s.shape)
    w = np.zeros((len(s), width))
    np.add.at(w, (rows, group), 1.0)
    s_u, n_u = np.zeros((len(s), width)), np.zeros((len(s), width))
    s_u[rows, group], n_u[rows, group] = s, n
    empty = (w == 0) | (n_u == 0)  # padding, and clusters of no observations (which add nothing)
    s_u[empty], n_u[empty], w[empty] = 0.0, 0.0, 0.0
    return s_u, n_u - s_u, n_u, w


def _golden_max(fun: Callable[[Array], Array], low: Array, high: Array, steps: int) -> tuple[Array, Array]:
    """Element-wise golden-section search for the maximum of ``fun`` on [low, high]: (argmax, max)."""
    c, d = high - _GOLDEN * (high - low), low + _GOLDEN * (high - low)
    fc, fd = fun(c), fun(d)
    for _ in range(steps):
        left = fc > fd
        high, low = np.where(left, d, high), np.where(left, low, c)
        c_new = np.where(left, high - _GOLDEN * (high - low), d)
        d_new = np.where(left, c, low + _GOLDEN * (high - low))
        f_new = fun(np.where(left, c_new, d_new))
        fc, fd = np.where(left, f_new, fd), np.where(left, fc, f_new)
        c, d = c_new, d_new
    return np.where(fc > fd, c, d), np.maximum(fc, fd)


def profile(mu: Array, data: Distinct) -> tuple[Array, Array]:
    """(max over θ of the log-likelihood at ``mu``, the θ that attains it — ∞ for the binomial)."""
    low, high = np.full(mu.shape, LOG_THETA[0]), np.full(mu.shape, LOG_THETA[1])
    log_theta, best = _golden_max(lambda x: log_likelihood(mu, np.exp(x), data), low, high, THETA_STEPS)
    # golden section never evaluates the ends: the lowest θ (the highest ICC) can be the maximum (a few
    # clusters, all alike), and the bounds must see it
    at_low = log_likelihood(mu, np.exp(low), data)
    log_theta, best = np.where(at_low > best, low, log_theta), np.maximum(best, at_low)
    binomial = _binomial(mu, data)
    return np.maximum(best, binomial), np.where(binomial >= best, np.inf, np.exp(log_theta))


def satterthwaite_df(rho: Array, data: Distinct, clusters: NDArray[np.int64]) -> Array:
    """(K − 1)·(deff/(deff − 1))² with deff = 1 + (ΣN_g²/N − 1)·ρ: ∞ where ρ = 0 (or every cluster has one
    observation), never below K − 1."""
    _, _, n, w = data
    total = _total(w * n)
    deff = 1 + (_total(w * n * n) / total - 1) * rho
    with np.errstate(divide="ignore", invalid="ignore"):
        df = np.where(deff > 1, (clusters - 1) * (deff / (deff - 1)) ** 2, np.inf)
    return np.asarray(df, dtype=np.float64)


class Fit(NamedTuple):
    """Each row's fitted model: its distinct clusters, rate Σ s / Σ n, logit of the MLE, maximum of the log
    profile likelihood, and the t's df."""

    data: Distinct
    p_hat: Array
    x_hat: Array
    top: Array
    df: Array


def fit(sums: Array, counts: Array, clusters: NDArray[np.int64], few_clusters: int = 10) -> Fit:
    """Each row's maximum-likelihood fit (rows may be padded with clusters of count 0)."""
    s = np.asarray(sums, dtype=np.float64)
    n = np.broadcast_to(np.asarray(counts, dtype=np.float64), s.shape)
    data = distinct(s, n)
    k = np.asarray(clusters, dtype=np.int64)
    p_hat = _total(data[0] * data[3]) / _total(data[2] * data[3])  # whole counts: exact in any order
    start = special.logit(np.clip(p_hat, 1e-6, 1 - 1e-6))
    x_hat, top = _golden_max(lambda x: profile(special.expit(x), data)[0], start - 4.0, start + 4.0, MLE_STEPS)
    # all wrong / all right: the likelihood is 1 at μ = 0 / 1 (any θ)
    x_hat = np.where(p_hat <= 0, -LOGIT_EDGE, np.where(p_hat >= 1, LOGIT_EDGE, x_hat))
    top = np.where((p_hat <= 0) | (p_hat >= 1), 0.0, top)
    _, theta = profile(special.expit(x_hat), data)
    rho = np.where(np.isinf(theta), 0.0, 1.0 / (1.0 + theta))
    df = np.where(k < few_clusters, (k - 1).astype(np.float64), satterthwaite_df(rho, data, k))
    return Fit(data, p_hat, x_hat, top, df)


def quantile(df: Array, level: float) -> Array:
    """The two-sided ``level`` quantile of t on each row's df (the normal's where df = ∞)."""
    return np.asarray(np.where(np.isinf(df), distributions.norm_ppf(0.5 + level / 2),
                               distributions.t_ppf(0.5 + level / 2, np.minimum(df, 1e300))), dtype=np.float64)


def bounds(f: Fit, q: Array) -> tuple[Array, Array]:
    """Each row's (low, high): where its profile log-likelihood has dropped by q²/2 from its maximum —
    by bisection on logit μ between μ̂ (inside) and the edge. Both sides bisect together, as rows of one
    array (rows are independent: the same numbers as one side at a time, in half the numpy calls)."""
    rows = len(f.x_hat)
    cut = np.concatenate([f.top - q * q / 2] * 2)
    data: Distinct = (np.concatenate([f.data[0]] * 2), np.concatenate([f.data[1]] * 2),
                      np.concatenate([f.data[2]] * 2), np.concatenate([f.data[3]] * 2))
    inner, outer = np.concatenate([f.x_hat, f.x_hat]), np.repeat([-LOGIT_EDGE, LOGIT_EDGE], rows)
    edge_inside = profile(special.expit(outer), data)[0] >= cut
    for _ in range(BOUND_STEPS):
        middle = (inner + outer) / 2
        inside = profile(special.expit(middle), data)[0] >= cut
        inner, outer = np.where(inside, middle, inner), np.where(inside, outer, middle)
    bound = special.expit(np.where(edge_inside, outer, (inner + outer) / 2))
    return np.minimum(bound[:rows], f.p_hat), np.maximum(bound[rows:], f.p_hat)


def intervals(sums: Array, counts: Array, clusters: NDArray[np.int64], level: float,
              nulls: Array | None = None, few_clusters: int = 10) -> tuple[Array, Array, Array, Array]:
    """(low, high, p against ``nulls`` — NaN where a null is NaN or absent —, df) of each row's rate
    Σ sums / Σ counts; ``clusters``: each row's K (rows may be padded with clusters of count 0)."""
    f = fit(sums, counts, clusters, few_clusters)
    data, p_hat, top, df = f.data, f.p_hat, f.top, f.df
    low, high = bounds(f, quantile(df, level))
    p_values = np.full(p_hat.shape, np.nan)
    if nulls is not None:
        null = np.asarray(nulls, dtype=np.float64)
        tested = np.isfinite(null) & (null > 0) & (null < 1)
        safe = np.where(tested, null, 0.5)
        statistic = np.sqrt(np.maximum(2 * (top - profile(safe, data)[0]), 0.0))
        p = np.where(np.isinf(df), 2 * distributions.norm_sf(statistic),
                     2 * distributions.t_sf(statistic, np.minimum(df, 1e300)))
        p_values = np.where(tested, np.minimum(1.0, p), np.nan)
    return low, high, p_values, df
