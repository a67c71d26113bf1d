"""Reference computations of the clustered intervals, written apart from playlisteval's (small_sample.py):
the CR2 sandwich in matrix form, Wilson's interval as the roots of its quadratic, and the beta-binomial
profile interval from scipy's own pmfs and optimisers. Tests compare the
package's numbers with these, never with the package itself."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import linalg, optimize, special, stats


def cr2_variance(values: Sequence[float], clusters: Sequence[Any]) -> float:
    """Var of the pooled mean: (X'X)⁻¹ Σ X_g' A_g e_g e_g' A_g X_g (X'X)⁻¹, A_g = (I − H_gg)^(−1/2)."""
    y = np.asarray(values, dtype=float)
    labels = np.asarray([str(c) for c in clusters])
    x = np.ones((len(y), 1))
    bread = np.linalg.inv(x.T @ x)
    residual = y - x @ (bread @ x.T @ y)
    meat = np.zeros((1, 1))
    for g in np.unique(labels):
        idx = labels == g
        ag = np.real(linalg.sqrtm(np.linalg.inv(np.eye(int(idx.sum())) - x[idx] @ bread @ x[idx].T)))
        u = x[idx].T @ ag @ residual[idx]
        meat += np.outer(u, u)
    return float((bread @ meat @ bread)[0, 0])


def wilson_roots(p: float, n: float, q: float) -> tuple[float, float]:
    """The π with (p − π)² = q² π (1 − π) / n: (1 + q²/n) π² − (2p + q²/n) π + p² = 0."""
    roots = np.sort(np.real(np.roots([1 + q * q / n, -(2 * p + q * q / n), p * p])))
    return max(0.0, float(roots[0])), min(1.0, float(roots[-1]))


def _counts(values: Sequence[float], clusters: Sequence[Any]) -> tuple[np.ndarray, np.ndarray] | None:
    """Per cluster (successes, trials) when every cluster's sum is a whole number — the documented rule
    (docs/statistics.md) for a rate that gets the beta-binomial; None otherwise (Wilson with a design effect)."""
    y = np.asarray(values, dtype=float)
    labels = [str(c) for c in clusters]
    keys = sorted(set(labels))
    s = np.array([sum(v for v, c in zip(y, labels, strict=True) if c == g) for g in keys])
    n = np.array([labels.count(g) for g in keys], dtype=float)
    return (s, n) if np.all(s == np.round(s)) else None


def _profile(mu: float, s: np.ndarray, n: np.ndarray) -> tuple[float, float]:
    """(max over θ ∈ [e^−4, e^12] ∪ {∞} of Σ log betabinom.pmf(s; n, μθ, (1 − μ)θ), ρ = 1/(1 + θ) there),
    scipy's own pmfs and bounded Brent, the binomial coefficient left in (it cancels)."""
    def negative(log_theta: float) -> float:
        theta = np.exp(log_theta)
        return -float(np.sum(stats.betabinom.logpmf(s, n, mu * theta, (1 - mu) * theta)))

    found = optimize.minimize_scalar(negative, bounds=(-4.0, 12.0), method="bounded", options={"xatol": 1e-10})
    binomial = float(np.sum(stats.binom.logpmf(s, n, mu)))
    if binomial >= -found.fun:
        return binomial, 0.0
    return float(-found.fun), 1.0 / (1.0 + float(np.exp(found.x)))


def beta_binomial_rate(s: np.ndarray, n: np.ndarray, level: float = 0.95, null: float | None = None
                       ) -> tuple[float, float, float, float | None]:
    """(estimate, low, high, p): the set of μ whose profile log-likelihood is within q²/2 of the top, q the
    t quantile on (K − 1)(deff/(deff − 1))² df (deff = 1 + (ΣN²/N − 1)ρ̂; K − 1 below 10 clusters; the
    normal at ρ̂ = 0); bounds by brentq on logit μ; p: the signed root on the same t."""
    k, p_hat = len(s), float(s.sum() / n.sum())
    if p_hat in (0.0, 1.0):
        top, x_hat = 0.0, (-30.0 if p_hat == 0 else 30.0)
        rho = 0.0
    else:
        best = optimize.minimize_scalar(lambda x: -_profile(float(special.expit(x)), s, n)[0],
                                        bounds=(special.logit(p_hat) - 4, special.logit(p_hat) + 4),
                                        method="bounded", options={"xatol": 1e-10})
        x_hat, top = float(best.x), -float(best.fun)
        rho = _profile(float(special.expit(x_hat)), s, n)[1]
    deff = 1 + (float(np.sum(n * n)) / float(n.sum()) - 1) * rho
    df = float(k - 1) if k < 10 else ((k - 1) * (deff / (deff - 1)) ** 2 if deff > 1 else np.inf)
    q = float(stats.t.ppf(0.5 + level / 2, df))

    def gap(x: float) -> float:
        return _profile(float(special.expit(x)), s, n)[0] - (top - q * q / 2)

    low = 0.0 if gap(-30.0) >= 0 else float(special.expit(optimize.brentq(gap, -30.0, x_hat, xtol=1e-12)))
    high = 1.0 if gap(30.0) >= 0 else float(special.expit(optimize.brentq(gap, x_hat, 30.0, xtol=1e-12)))
    p = None
    if null is not None:
        statistic = np.sqrt(max(2 * (top - _profile(null, s, n)[0]), 0.0))
        p = float(2 * stats.t.sf(statistic, df))
    return p_hat, min(low, p_hat), max(high, p_hat), p


def rate(values: Sequence[float], clusters: Sequence[Any], level: float = 0.95) -> tuple[float, float, float]:
    """(estimate, low, high): for whole-number cluster sums the beta-binomial profile interval
    (``beta_binomial_rate``); else Wilson on N / deff with t(K − 1), deff 1 where the variance is 0."""
    counted = _counts(values, clusters)
    if counted is not None:
        return beta_binomial_rate(*counted, level)[:3]
    y = np.asarray(values, dtype=float)
    k = len(set(map(str, clusters)))
    p = float(y.mean())
    v = cr2_variance(y, clusters)
    n_eff = _effective(len(y), p, v, k)
    low, high = wilson_roots(p, n_eff, float(stats.t.ppf(0.5 + level / 2, k - 1)))
    return p, low, high


def _effective(n: int, p: float, v: float, k: int) -> float:
    """N / deff, deff = V / (p(1 − p)/N): 1 where V says nothing, and at least 1 below 10 clusters."""
    if v <= 0 or p in (0.0, 1.0):
        return float(n)
    n_eff = p * (1 - p) / v
    return min(n_eff, float(n)) if k < 10 else n_eff


def rate_p(values: Sequence[float], clusters: Sequence[Any], null: float) -> float:
    """Whole-number cluster sums: the beta-binomial LR test (``beta_binomial_rate``); else the score test of the rate
    against ``null`` on the same effective size, t(K − 1)."""
    counted = _counts(values, clusters)
    if counted is not None:
        p = beta_binomial_rate(*counted, null=null)[3]
        assert p is not None
        return p
    y = np.asarray(values, dtype=float)
    k = len(set(map(str, clusters)))
    p = float(y.mean())
    v = cr2_variance(y, clusters)
    n_eff = _effective(len(y), p, v, k)
    z = abs(p - null) / np.sqrt(null * (1 - null) / n_eff)
    return float(2 * stats.t.sf(z, k - 1))


def difference(d: Sequence[float], clusters: Sequence[Any], level: float = 0.95) -> tuple[float, float, float, float]:
    """(estimate, low, high, p): mean ± t(K − 1)·√CR2, clipped to [−1, 1]."""
    y = np.asarray(d, dtype=float)
    k = len(set(map(str, clusters)))
    se = np.sqrt(cr2_variance(y, clusters))
    q = float(stats.t.ppf(0.5 + level / 2, k - 1))
    m = float(y.mean())
    return m, max(-1.0, m - q * se), min(1.0, m + q * se), float(2 * stats.t.sf(abs(m) / se, k - 1))


def _unit_sets(first: Sequence[Any], second: Sequence[Any]) -> tuple[list[set[str]], list[str]]:
    sets = [{str(a), str(b)} for a, b in zip(first, second, strict=True)]
    return sets, sorted(set().union(*sets))


def dyadic_variance(values: Sequence[float], first: Sequence[Any], second: Sequence[Any]) -> float:
    """By loops over the pairs: Σ_units (Σ_{i cites u} e_i)² / (1 − N_u/N) − Σ_{two-unit dyads}
    (Σ_{i in it} e_i)² / (1 − N_g/N), over N² — no floor (the package's takes the max with the one-way CR2)."""
    y = np.asarray(values, dtype=float)
    e, n = y - y.mean(), len(y)
    sets, units = _unit_sets(first, second)
    total = 0.0
    for u in units:
        idx = [i for i in range(n) if u in sets[i]]
        if len(idx) < n:  # a unit in every pair: Σ e = 0, leverage 1 — it adds nothing
            total += sum(e[i] for i in idx) ** 2 / (1 - len(idx) / n)
    for dyad in {frozenset(s) for s in sets if len(s) == 2}:
        idx = [i for i in range(n) if sets[i] == dyad]
        total -= sum(e[i] for i in idx) ** 2 / (1 - len(idx) / n)
    return float(total / n**2)


def dyadic_df(first: Sequence[Any], second: Sequence[Any]) -> float:
    """Bell–McCaffrey df of that variance under independent pairs, from N × N matrices: Q = Σ_u c_u 1_u 1_u'
    − Σ_g c_g 1_g 1_g', M = I − 11'/N, df = tr(MQM)² / tr(MQMMQM)."""
    sets, units = _unit_sets(first, second)
    n = len(sets)
    q = np.zeros((n, n))
    for u in units:
        one = np.array([u in s for s in sets], dtype=float)
        if one.sum() < n:  # a unit in every pair adds nothing (as in dyadic_variance)
            q += np.outer(one, one) / (1 - one.sum() / n)
    for dyad in {frozenset(s) for s in sets if len(s) == 2}:
        one = np.array([s == dyad for s in sets], dtype=float)
        q -= np.outer(one, one) / (1 - one.sum() / n)
    m = np.eye(n) - np.ones((n, n)) / n
    mqm = m @ q @ m
    trace = float(np.trace(mqm))
    return trace**2 / float(np.trace(mqm @ mqm)) if trace > 0 else np.inf  # no terms: G − 1 (rate_dyadic)


def rate_dyadic(values: Sequence[float], first: Sequence[Any], second: Sequence[Any],
                level: float = 0.95) -> tuple[float, float, float]:
    """Wilson with the dyadic variance (never below the one-way CR2 of the pairs of units), t on the
    Bell–McCaffrey df (at most G − 1)."""
    y = np.asarray(values, dtype=float)
    dyads = [f"{min(str(a), str(b))}|{max(str(a), str(b))}" for a, b in zip(first, second, strict=True)]
    v = max(dyadic_variance(y, first, second), cr2_variance(y, dyads))
    g = len({str(a) for a in first} | {str(b) for b in second})
    p = float(y.mean())
    n_eff = _effective(len(y), p, v, g)
    df = min(dyadic_df(first, second), g - 1)
    low, high = wilson_roots(p, n_eff, float(stats.t.ppf(0.5 + level / 2, df)))
    return p, low, high


def mover(a: Sequence[float], b: Sequence[float], clusters: Sequence[Any], level: float = 0.95
          ) -> tuple[float, float, float, float]:
    """(estimate, low, high, p) of the paired p_a − p_b of 0/1 values by MOVER (Zou & Donner 2008): each
    side's ``beta_binomial_rate`` at the level, r the correlation of the two sides' cluster residuals
    S_g − p·N_g weighted by 1/(1 − N_g/N) (0 where a side has none, or below 10 clusters), by loops;
    L = d − √(A² + B² − 2rAB) (A = p_a − l_a, B = u_b − p_b), U likewise, clipped to [−1, 1]; p: brentq on
    the level at which the end nearer 0 reaches it."""
    labels = [str(c) for c in clusters]
    keys = sorted(set(labels))
    n = np.array([labels.count(g) for g in keys], dtype=float)
    sa = np.array([sum(v for v, c in zip(a, labels, strict=True) if c == g) for g in keys], dtype=float)
    sb = np.array([sum(v for v, c in zip(b, labels, strict=True) if c == g) for g in keys], dtype=float)
    total = float(n.sum())
    pa, pb = float(sa.sum()) / total, float(sb.sum()) / total
    ea, eb, w = [], [], []
    for g in range(len(keys)):
        ea.append(sa[g] - pa * n[g])
        eb.append(sb[g] - pb * n[g])
        w.append(1.0 / (1.0 - n[g] / total))
    va = sum(wi * x * x for wi, x in zip(w, ea, strict=True))
    vb = sum(wi * y * y for wi, y in zip(w, eb, strict=True))
    cov = sum(wi * x * y for wi, x, y in zip(w, ea, eb, strict=True))
    r = cov / np.sqrt(va * vb) if va > 1e-18 and vb > 1e-18 and len(keys) >= 10 else 0.0

    def ends(lev: float) -> tuple[float, float]:
        _, la, ua, _ = beta_binomial_rate(sa, n, lev)
        _, lb, ub, _ = beta_binomial_rate(sb, n, lev)
        d = pa - pb
        low = d - np.sqrt(max((pa - la) ** 2 + (ub - pb) ** 2 - 2 * r * (pa - la) * (ub - pb), 0.0))
        high = d + np.sqrt(max((ua - pa) ** 2 + (pb - lb) ** 2 - 2 * r * (ua - pa) * (pb - lb), 0.0))
        return float(low), float(high)

    low, high = ends(level)
    d = pa - pb
    if d == 0:
        p = 1.0
    else:
        def reach(lev: float) -> float:
            lo, hi = ends(lev)
            return lo if d > 0 else -hi

        p = 1.0 - float(optimize.brentq(reach, 1e-6, 1 - 1e-9, xtol=1e-12))
    return d, max(-1.0, low), min(1.0, high), p
