"""Power analysis for comparing two judges on one paired benchmark whose pairs come in clusters.

Why: a difference between two judges is only worth reporting if the benchmark could have detected it.
Pairs of one question (or video, or playlist) share evidence and difficulty, so they are not independent:
the benchmark holds fewer *effective* pairs than rows, and the smallest difference it can detect grows
with the clustering. This module turns the per-pair paired differences into that smallest difference
(the minimum detectable difference, MDE) and into the number of pairs needed for a given difference.

Choices (stated in every result's ``method``):

* ICC: the one-way ANOVA estimator with unequal cluster sizes (n0 = (N − Σn_g²/N)/(K − 1)),
  ``(MSB − MSW) / (MSB + (n0 − 1)·MSW)``, clipped to [0, 1] (a negative estimate means "no clustering
  seen", not anti-correlation worth using). Undefined (None) with one cluster, with every cluster a
  single pair, or when the values do not vary at all.
* Design effect: the form for unequal cluster sizes, ``1 + ((cv² + 1)·m̄ − 1)·ICC`` (Kish; Eldridge et
  al. 2006), m̄ the mean cluster size and cv the coefficient of variation of the sizes with the
  population standard deviation, so that (cv² + 1)·m̄ = Σn_g²/N exactly; with equal sizes it is the
  textbook ``1 + (m̄ − 1)·ICC``. Benchmarks here have very unequal clusters (a playlist holds many videos),
  and the equal-size form would understate the loss.
* MDE with the number of clusters K given: ``δ · sd · √(deff / n)``, δ the exact noncentrality at which a
  level-α t-test on K − 1 degrees of freedom (the variance of a clustered mean is estimated from K cluster
  totals) has the requested power under the noncentral t, both rejection tails counted when two-sided
  (solved with the noncentral t of analytics/distributions.py and a root finder). Why not
  ``q_{1−α/2} + q_power`` on t quantiles: at few degrees of freedom that sum understates the MDE (two-sided
  0.05 at 80 %: K = 2, 14.08 against the exact 16.33; K = 3, 5.36 against 5.65), and few clusters are
  exactly where the MDE matters. Without K: the normal formula ``(z_{1−α/2} + z_power) · sd · √(deff / n)``
  (large samples; the opposite tail, under 0.01 % power at 80 %, ignored).
* "None detectable": a difference of two accuracies is at most 1 (100 points); an MDE above that means no
  possible difference reaches the requested power, so the result is ``mde: None`` with a ``note`` saying so
  (``none_detectable: True``), never a number over 100 points.
* Pairs needed: the normal-quantile inverse of the same formula (the number of clusters is not known
  before the pairs are), assuming new pairs come in clusters of the same size distribution, so that the
  design effect stays as measured.
* One judge only (no paired data): the paired difference of two judges that err independently with the
  same accuracy p has var(d) = 2·p·(1 − p) (exact for 0/1 correctness; an upper bound for per-pair
  accuracies in [0, 1]). Real judges fail on the same hard pairs, which makes var(d) smaller, so the MDE
  from this assumption is conservative. The ICC of that judge's correctness stands in for the ICC of
  the difference (also conservative: a shared difficulty cancels in a difference).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from playlisteval.analytics import distributions
from playlisteval.analytics.intervals import Labels, cluster_codes

ALPHA = 0.05
POWER = 0.8
DIFFERENCES = (0.03, 0.05, 0.10)
MAX_DIFFERENCE = 1.0  # two accuracies in [0, 1] differ by at most 1 (100 points)
NONE_DETECTABLE = "none detectable"


def _values(values: ArrayLike, what: str) -> NDArray[np.float64]:
    try:
        x = np.asarray(values, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError) as exc:  # None entries (no verdicts) must be decided by the caller
        raise ValueError(f"{what}: every entry must be a number") from exc
    if not np.all(np.isfinite(x)):  # None becomes NaN
        raise ValueError(f"{what}: every entry must be a finite number, not None or NaN (decide what a missing "
                         "verdict counts as first)")
    return x


def _groups(clusters: Labels, n: int, unit: str) -> NDArray[np.int64]:
    g = cluster_codes(clusters)
    if len(g) != n:
        raise ValueError(f"unit {unit!r}: {n} pairs but {len(g)} cluster labels")
    return g


def icc_oneway(values: ArrayLike, clusters: Labels) -> float | None:
    """The one-way ANOVA intra-cluster correlation of ``values``, clipped to [0, 1]; None where it is not
    estimable (one cluster, only single-pair clusters, or no variation at all)."""
    y = _values(values, "values")
    g = _groups(clusters, len(y), "icc")
    sizes = np.bincount(g).astype(np.float64)
    n, k = float(len(y)), len(sizes)
    if k < 2 or n <= k:
        return None
    means = np.bincount(g, weights=y) / sizes
    msb = float(np.sum(sizes * (means - y.mean()) ** 2)) / (k - 1)
    msw = float(np.sum((y - means[g]) ** 2)) / (n - k)
    n0 = (n - float(np.sum(sizes**2)) / n) / (k - 1)
    denominator = msb + (n0 - 1.0) * msw
    if denominator <= 0:
        return None
    return float(min(1.0, max(0.0, (msb - msw) / denominator)))


def design_effect(cluster_sizes: ArrayLike, icc: float) -> float:
    """``1 + ((cv² + 1)·m̄ − 1)·ICC`` = ``1 + (Σn²/N − 1)·ICC`` for clusters of the given sizes."""
    sizes = _values(cluster_sizes, "cluster sizes")
    if len(sizes) == 0 or np.any(sizes <= 0):
        raise ValueError("a design effect needs at least one cluster, each with at least one pair")
    if not 0 <= icc <= 1:
        raise ValueError(f"ICC {icc} is not between 0 and 1")
    return float(1.0 + (float(np.sum(sizes**2)) / float(np.sum(sizes)) - 1.0) * icc)


# a report asks the same few quantiles for every judge-vs-judge row; scipy's ppf costs ~0.1 ms a call
@functools.lru_cache(maxsize=256)
def _quantiles(alpha: float, power: float, two_sided: bool, df: int | None) -> float:
    if not 0 < alpha < 1:
        raise ValueError(f"alpha {alpha} is not between 0 and 1")
    if not 0 < power < 1:
        raise ValueError(f"power {power} is not between 0 and 1")
    a = 1 - alpha / 2 if two_sided else 1 - alpha
    if df is None:
        return float(distributions.norm_ppf(a) + distributions.norm_ppf(power))
    return float(distributions.t_ppf(a, df) + distributions.t_ppf(power, df))


@functools.lru_cache(maxsize=256)
def noncentrality(alpha: float, power: float, two_sided: bool, df: int) -> float:
    """The noncentrality δ at which a level-``alpha`` t-test on ``df`` degrees of freedom rejects with
    probability ``power`` (exact, under the noncentral t; both tails when ``two_sided``)."""
    if not 0 < alpha < 1 or not 0 < power < 1:
        raise ValueError(f"alpha {alpha} and power {power} must lie between 0 and 1")
    if power <= alpha:  # a test rejects with probability alpha at δ = 0 already: nothing to solve
        raise ValueError(f"power {power} must exceed alpha {alpha}")
    if df < 1:
        raise ValueError(f"a t-test needs at least 1 degree of freedom (got {df})")
    from scipy import optimize  # here, not at import (issue 26)

    crit = float(distributions.t_ppf(1 - alpha / 2 if two_sided else 1 - alpha, df))

    def shortfall(delta: float) -> float:
        lower = distributions.nct_cdf(-crit, df, delta) if two_sided else 0.0
        # scipy returns NaN where that far tail underflows (df 1, δ ≈ 15: it is below 1e-15 there)
        return distributions.nct_sf(crit, df, delta) + (lower if math.isfinite(lower) else 0.0) - power

    high = crit + float(distributions.norm_ppf(power)) + 1.0  # the normal guess, too low at few df: doubled until past
    while shortfall(high) < 0:
        high *= 2
    return float(optimize.brentq(shortfall, 0.0, high, xtol=1e-12, rtol=1e-12))


def minimum_detectable_difference(sd_of_paired_difference: float, n_pairs: int, design_effect: float,
                                  alpha: float = ALPHA, power: float = POWER, two_sided: bool = True, *,
                                  clusters: int | None = None) -> float:
    """The smallest true mean difference detected with probability ``power`` by a level-``alpha`` test on
    ``n_pairs`` paired differences of standard deviation ``sd_of_paired_difference``; with ``clusters``
    (their number) the exact noncentral-t solution on clusters − 1 degrees of freedom, else the normal
    formula. May exceed 1 (100 points): the caller decides what an undetectable difference shows."""
    if not sd_of_paired_difference > 0:
        raise ValueError("the paired differences have no variance: no power analysis is possible")
    if n_pairs < 1:
        raise ValueError("a power analysis needs at least one pair")
    if not design_effect >= 1:
        raise ValueError(f"design effect {design_effect} is below 1")
    if clusters is not None and clusters < 2:
        raise ValueError(f"t quantiles need at least 2 clusters (got {clusters})")
    se = sd_of_paired_difference * math.sqrt(design_effect / n_pairs)
    if clusters is None:
        return _quantiles(alpha, power, two_sided, None) * se
    return noncentrality(alpha, power, two_sided, clusters - 1) * se


def mde_cell(figure: Mapping[str, Any]) -> str | None:
    """What an MDE cell shows for a unit or a judge − judge row: points to one decimal, "none detectable",
    or None where there is no figure (the table's "—")."""
    if figure.get("none_detectable"):
        return NONE_DETECTABLE
    mde = figure.get("mde")
    return None if mde is None else f"{100 * float(mde):.1f}"


def pairs_needed(difference: float, sd: float, design_effect: float, alpha: float = ALPHA, power: float = POWER,
                 two_sided: bool = True) -> int:
    """Pairs (rounded up) for a level-``alpha`` test to detect ``difference`` with probability ``power``
    (normal quantiles; clusters assumed to keep their measured sizes, so the design effect stays)."""
    if not difference > 0:
        raise ValueError(f"the difference to detect must be positive (got {difference})")
    if not sd > 0:
        raise ValueError("the paired differences have no variance: no power analysis is possible")
    if not design_effect >= 1:
        raise ValueError(f"design effect {design_effect} is below 1")
    n = design_effect * (_quantiles(alpha, power, two_sided, None) * sd / difference) ** 2
    return int(math.ceil(n - 1e-9))  # an exact integer must not round up by floating-point noise


def _unit(name: str, icc_values: NDArray[np.float64], labels: Labels, sd: float, alpha: float,
          power: float, two_sided: bool, differences: Sequence[float], paired: bool) -> dict[str, Any]:
    g = _groups(labels, len(icc_values), name)
    sizes = np.bincount(g).astype(np.float64)
    n, k = len(icc_values), len(sizes)
    m = n / k
    cv = float(np.std(sizes) / m)
    icc = icc_oneway(icc_values, labels)
    weighted = float(np.sum(sizes**2)) / n  # (cv² + 1)·m̄
    # every cluster a single pair: no clustering, whatever the ICC
    deff = 1.0 if weighted == 1.0 else None if icc is None else design_effect(sizes, icc)
    out: dict[str, Any] = {
        "unit": name, "clusters": k, "mean_cluster_size": m, "cluster_size_cv": cv, "icc": icc,
        "design_effect": deff, "effective_n": None if deff is None else n / deff, "mde": None, "mde_normal": None,
        "pairs_for": None,
        "method": (f"ICC of the {'paired difference' if paired else 'single judge correctness'} by {name} "
                   "(one-way ANOVA, clipped to [0, 1]); design effect 1+((cv²+1)m̄−1)·ICC; "
                   f"MDE (exact noncentral t, {k - 1} df, and normal) at alpha {alpha}"
                   f"{' two-sided' if two_sided else ''}, power {power}; none detectable above "
                   f"{100 * MAX_DIFFERENCE:.0f} points; pairs needed by normal quantiles at the same cluster sizes"),
        "none_detectable": False,
    }
    if deff is None or not sd > 0:
        out["note"] = "no power analysis: " + (
            f"the ICC by {name} is not estimable ({k} clusters)" if sd > 0 else
            "the paired differences do not vary" if paired else "the judge is right on every pair or on none")
        return out
    mde = minimum_detectable_difference(sd, n, deff, alpha, power, two_sided, clusters=k)  # k ≥ 2 here
    normal = minimum_detectable_difference(sd, n, deff, alpha, power, two_sided)
    # an MDE over 100 points is no MDE: no difference two accuracies can have reaches the power
    out["mde"] = mde if mde <= MAX_DIFFERENCE else None
    out["mde_normal"] = normal if normal <= MAX_DIFFERENCE else None
    if mde > MAX_DIFFERENCE:
        out["none_detectable"] = True
        out["note"] = (f"{NONE_DETECTABLE}: with {k} clusters by {name} no difference of at most "
                       f"{100 * MAX_DIFFERENCE:.0f} points is detected with power {power} at alpha {alpha}")
    out["pairs_for"] = [{"difference": d, "pairs": (p := pairs_needed(d, sd, deff, alpha, power, two_sided)),
                         "clusters": int(math.ceil(p / m - 1e-9))} for d in differences]
    return out


def _report(icc_values: NDArray[np.float64], sd: float, observed: float | None, variance: str,
            clusters: Mapping[str, Labels], alpha: float, power: float, differences: Sequence[float],
            two_sided: bool, paired: bool) -> dict[str, Any]:
    if not clusters:
        raise ValueError("no clustering unit given (pass e.g. {'question': labels})")
    units = {name: _unit(name, icc_values, labels, sd, alpha, power, two_sided, differences, paired)
             for name, labels in clusters.items()}
    return {"n_pairs": len(icc_values), "paired": paired, "observed_difference": observed,
            "sd_of_paired_difference": sd, "alpha": alpha, "power": power, "two_sided": two_sided,
            "method": f"cluster-adjusted power analysis of a paired difference; {variance}", "units": units}


def _enough(x: NDArray[np.float64]) -> None:
    if len(x) < 2:
        raise ValueError(f"a power analysis needs at least 2 pairs (got {len(x)})")


def paired_power(paired_differences: ArrayLike, clusters: Mapping[str, Labels], alpha: float = ALPHA,
                 power: float = POWER, *, differences: Sequence[float] = DIFFERENCES,
                 two_sided: bool = True) -> dict[str, Any]:
    """``power_report`` from the per-pair differences d_i = correct_A − correct_B (in [−1, 1]) directly."""
    d = _values(paired_differences, "paired_differences")
    _enough(d)
    if np.any((d < -1) | (d > 1)):
        raise ValueError("paired_differences: a difference of two correctness values lies in [-1, 1]")
    return _report(d, float(np.std(d, ddof=1)), float(d.mean()), "sample variance of the paired differences "
                   "(ddof 1)", clusters, alpha, power, differences, two_sided, True)


def power_report(correct_a: ArrayLike, correct_b: ArrayLike | None, clusters: Mapping[str, Labels],
                 alpha: float = ALPHA, power: float = POWER, *, differences: Sequence[float] = DIFFERENCES,
                 two_sided: bool = True) -> dict[str, Any]:
    """The MDE and the pairs needed under each clustering unit (``clusters[name]`` = one label per pair).

    ``correct_a``/``correct_b`` are per-pair correctness (0/1) or accuracy in [0, 1] of the two judges on
    the same pairs; ``correct_b`` None: one judge only, and var(d) = 2p(1−p) is assumed (module doc)."""
    a = _values(correct_a, "correct_a")
    _enough(a)
    if np.any((a < 0) | (a > 1)):
        raise ValueError("correct_a: per-pair correctness must lie in [0, 1]")
    if correct_b is not None:
        b = _values(correct_b, "correct_b")
        if len(b) != len(a):
            raise ValueError(f"paired judges need the same pairs ({len(a)} vs {len(b)})")
        if np.any((b < 0) | (b > 1)):
            raise ValueError("correct_b: per-pair correctness must lie in [0, 1]")
        return paired_power(a - b, clusters, alpha, power, differences=differences, two_sided=two_sided)
    p = float(a.mean())
    variance = ("one judge only: var(d) = 2p(1-p), two independent judges of equal accuracy p "
                "(conservative; ICC of that judge's correctness stands in for the ICC of d)")
    return _report(a, math.sqrt(2 * p * (1 - p)), None, variance, clusters, alpha, power, differences, two_sided,
                   False)
