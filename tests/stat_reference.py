"""Reference computations of the clustered intervals, written apart from playlisteval's (small_sample.py):
the CR2 sandwich in matrix form and Wilson's interval as the roots of its quadratic. Tests compare the
package's numbers with these, never with the package itself."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import linalg, stats


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


def rate(values: Sequence[float], clusters: Sequence[Any], level: float = 0.95) -> tuple[float, float, float]:
    """(estimate, low, high): Wilson on N / deff with t(K − 1); deff 1 where the variance is 0."""
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
    """The score test of the rate against ``null`` on the same effective size, t(K − 1)."""
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


def dyadic_variance(values: Sequence[float], first: Sequence[Any], second: Sequence[Any]) -> float:
    """Σ e_i·e_j over every two observations whose unit sets {first, second} intersect (i = j included),
    × G/(G − 1) / N², by a double loop — no floor (the package's takes the max with the one-way CR2)."""
    y = np.asarray(values, dtype=float)
    e = y - y.mean()
    sets = [{str(a), str(b)} for a, b in zip(first, second, strict=True)]
    shared = sum(e[i] * e[j] for i in range(len(y)) for j in range(len(y)) if sets[i] & sets[j])
    g = len(set().union(*sets))
    return float(shared * g / (g - 1) / len(y) ** 2)


def rate_dyadic(values: Sequence[float], first: Sequence[Any], second: Sequence[Any],
                level: float = 0.95) -> tuple[float, float, float]:
    """``rate`` with the dyadic variance (never below the one-way CR2 of the pairs of units), t(G − 1)."""
    y = np.asarray(values, dtype=float)
    dyads = [f"{min(str(a), str(b))}|{max(str(a), str(b))}" for a, b in zip(first, second, strict=True)]
    v = max(dyadic_variance(y, first, second), cr2_variance(y, dyads))
    g = len({str(a) for a in first} | {str(b) for b in second})
    p = float(y.mean())
    n_eff = _effective(len(y), p, v, g)
    low, high = wilson_roots(p, n_eff, float(stats.t.ppf(0.5 + level / 2, g - 1)))
    return p, low, high
