"""The variance of a rate whose clusters are *pairs of units* (issue 40: a pair of questions cites two videos,
and is correlated with every pair that shares either), and the degrees of freedom of its t.

Each cluster g is a pair of units (members[g] = the two units' codes, equal when both segments lie in one
video), with residual e_g = S_g − p·N_g. Dyadic-robust (Aronow, Samii & Assenova 2015; Cameron, Gelbach &
Miller 2011's multiway form): the sum of e_g·e_h over every two clusters that share a unit is
Σ_units (Σ_{g ∋ u} e_g)² − Σ_{g: two units} e_g² (a cluster with two units is otherwise counted once for
each). Each of those one-way terms gets the bias-reduced (CR2) adjustment of Bell & McCaffrey (2002) for an
intercept-only model: a unit's (or a cluster's) squared total is divided by 1 − h, h its share N_u / N of
the pairs — what ``small_sample.cr2_variance`` does for one-way clusters. Measured by ``python -m bench
science``: with G/(G − 1) in their place (before), the dyadic standard error was 12–13 % too small at 10
videos, where a unit holds ~1/5 of the pairs.

The t's degrees of freedom are Bell & McCaffrey's (the Satterthwaite df that Imbens & Kolesár 2016
recommend for CR2), under a working model of independent pairs: the variance estimate is a quadratic form
e'Qe of the pair-level residuals e = My (M = I − 11'/N), so df = tr(MQM)² / tr((MQM)²). It depends on the
design only (who cites which units), not on the outcomes. With every pair in one unit it is K − 1; with
pairs spread over two units it is far fewer than G − 1 (each pair's residual enters two units' totals).
Computed from the K clusters' incidence, never from N × N matrices.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

Array = NDArray[np.float64]


def unit_count(members: NDArray[np.int64]) -> int:
    """How many distinct units the clusters' members name."""
    return len(np.unique(members))


def _shares(counts: Array, members: NDArray[np.int64]) -> tuple[Array, NDArray[np.bool_], int]:
    """(each unit's pairs N_u, which clusters have two units, how many unit codes)."""
    units = int(members.max()) + 1
    two = members[:, 0] != members[:, 1]
    per_unit = np.asarray(np.bincount(members[:, 0], weights=counts, minlength=units)
                          + np.bincount(members[two, 1], weights=counts[two], minlength=units), dtype=np.float64)
    return per_unit, two, units


def variance(sums: Array, counts: Array, members: NDArray[np.int64]) -> float:
    """The CR2-adjusted dyadic variance of ΣS / ΣN (before any floor; see the module's docstring)."""
    total = float(counts.sum())
    residual = sums - float(sums.sum()) / total * counts
    per_unit, two, units = _shares(counts, members)
    by_unit = np.bincount(members[:, 0], weights=residual, minlength=units)
    by_unit += np.bincount(members[two, 1], weights=residual[two], minlength=units)
    # a unit in every pair has a total residual of 0 (Σ e = 0) and a leverage of 1: it adds nothing
    cited = (per_unit > 0) & (per_unit < total)
    unit_terms = by_unit[cited] ** 2 / (1.0 - per_unit[cited] / total)
    pair_terms = residual[two] ** 2 / (1.0 - counts[two] / total)
    return float(np.sum(unit_terms) - np.sum(pair_terms)) / total**2


def degrees_of_freedom(counts: Array, members: NDArray[np.int64]) -> float:
    """Bell–McCaffrey df of ``variance`` under independent pairs: tr(CB)² / tr(CBCB), B = L'(W − ww'/N)L
    over the columns j = units, then two-unit clusters (L: which columns a cluster's pairs fall in,
    W = diag(counts)), C = diag(±1/(1 − h_j)). B's nonzero blocks are used directly: P = L'WL has the
    units' block (pairs two units share), a two-unit cluster's column meets its two units and itself."""
    total = float(counts.sum())
    per_unit, two, units = _shares(counts, members)
    inside = (per_unit > 0) & (per_unit < total)  # a unit in every pair adds nothing (``variance``)
    c_unit = np.where(inside, 1.0 / np.where(inside, 1.0 - per_unit / total, 1.0), 0.0)
    n_two = counts[two]
    c_two = -1.0 / (1.0 - n_two / total)
    a, b = members[two, 0], members[two, 1]
    block = np.zeros((units, units))  # P over the units: Σ_g N_g [u ∈ g][v ∈ g]
    one = ~two
    np.add.at(block, (members[one, 0], members[one, 0]), counts[one])
    for x, y in ((a, a), (b, b), (a, b), (b, a)):
        np.add.at(block, (x, y), n_two)
    # tr(CB) = Σ_j c_j (P_jj − r_j²/N), r_j = P_jj (0/1 incidence): the units', then the two-unit clusters'
    trace = float(np.sum(c_unit * (per_unit - per_unit**2 / total)) + np.sum(c_two * (n_two - n_two**2 / total)))
    # tr(CBCB) = Σ_ij c_i c_j (P_ij − r_i r_j / N)²: Σ c c P² − (2/N) Σ c c P r r + (Σ c r²)² / N²
    cu = c_unit[:, None] * c_unit[None, :]
    ru = per_unit[:, None] * per_unit[None, :]
    cross_c = c_unit[a] + c_unit[b]
    cross_cr = c_unit[a] * per_unit[a] + c_unit[b] * per_unit[b]
    squares = (float(np.sum(cu * block**2)) + 2 * float(np.sum(c_two * n_two**2 * cross_c))
               + float(np.sum(c_two**2 * n_two**2)))
    products = (float(np.sum(cu * block * ru)) + 2 * float(np.sum(c_two * n_two * n_two * cross_cr))
                + float(np.sum(c_two**2 * n_two * n_two**2)))
    outer = float(np.sum(c_unit * per_unit**2) + np.sum(c_two * n_two**2))
    second = squares - 2 * products / total + outer**2 / total**2
    return trace * trace / second if second > 0 and trace > 0 else float(unit_count(members) - 1)
