"""Intervals and tests that hold with few clusters (issue 40): a rate's Wilson score interval with a design
effect, and a mean difference's cluster-robust t, both on K − 1 degrees of freedom.

Why not the cluster percentile bootstrap (what every interval was before): measured by ``python -m bench
science``, it covers 95 % with 40 clusters but ~90 % with 10, ~78 % with 4 and ~48 % with 2 — and the
paper has about four playlists per domain. A resample of K clusters can only show the spread of those K,
and says nothing of how unsure that spread is. Both methods here carry that second uncertainty in the t
quantile on K − 1 df, and each p-value is the inversion of its own interval, so an interval that excludes
the null value never sits beside p ≥ 1 − level.

* **Rates** (values in [0, 1]: accuracies, Hit@k, shares): the estimate is the ratio p = ΣS / ΣN over K
  clusters. Its cluster-robust variance (CR2, the bias-reduced linearisation: each cluster's residual
  e_g = S_g − p·N_g scaled by 1 / (1 − N_g/N)) gives a design effect deff = V / (p(1 − p)/N) and an
  effective size n* = N / deff; the interval is Wilson's score interval of p on n* with the t quantile of
  K − 1 df in place of z. It is never empty, never outside [0, 1], and not of zero width at 0 % or 100 %
  (there V = 0 says nothing of the clustering: deff is taken as 1). The p-value against a null p₀ is
  the score test |p − p₀| / √(p₀(1 − p₀)/n*) on t(K − 1) — exactly the values the interval excludes.
* **Differences** (a − b paired per unit, values in [−1, 1]): mean d = ΣD / ΣN, CR2 standard error,
  interval d ± t·se clipped to [−1, 1], p from the same t. When every cluster has the very same mean
  difference (se = 0: both judges right on every pair, say) the interval is the range the mean could
  take if up to a Wilson upper bound of the pairs (0 of N observed) differed from it — width > 0.

By video or playlist a question belongs to the units of *both* its segments: its cluster is the pair of
units, and the variance is dyadic (``dyadic.py``: CR2-adjusted, on Bell–McCaffrey's df).

Rates of whole counts in one-way clusters (accuracies, shares of pairs) use neither Wilson nor the design
effect any more: ``beta_binomial.py``'s profile likelihood (issue 40: near 0 % / 100 % with clustering the
design effect came from a sample that had missed the bad clusters). Wilson with a design effect stays for
dyadic clusters and for values that are not counts (nDCG).

CR2 for a ratio mean is the intercept-only case of Bell & McCaffrey's estimator (the leverage of cluster g
is N_g / N); with equal clusters it equals the usual K/(K − 1) correction (CR1).
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numpy.typing import NDArray

from playlisteval.analytics import beta_binomial, distributions, dyadic

RATE_METHOD = ("beta-binomial profile likelihood, signed root on t (Satterthwaite df, K − 1 below 10 clusters); "
               "by video: Wilson score interval with a CR2 dyadic design effect, t on Bell–McCaffrey df")
FEW_CLUSTERS = 10  # below: a rate's design effect is at least 1 (effective_n)
CEILING = 0.9  # a rate this close to 0 or 1 …
CEILING_CLUSTERS = 100  # … from fewer clusters carries a caution (near_ceiling)


def near_ceiling(estimate: float, clusters: int) -> str | None:
    """A caution for a rate near 0 % or 100 % from few clusters: if a judge's errors sit in a few questions,
    a sample that missed them shows a higher rate *and* less variation. The Wilson-with-design-effect
    interval was covered 72–90 % there (a 97 % judge, ICC 0.1–0.3, 10 clusters); the beta-binomial
    interval now used for counts holds 94.9–96.7 % in the same simulation (docs/statistics.md) — but that
    simulation's clusters are beta-binomial, the model's own case, so the caution stays until a bench
    study with another distribution of cluster accuracies says how far it carries."""
    if clusters >= CEILING_CLUSTERS or 1 - CEILING < estimate < CEILING:
        return None
    return (f"near {'100' if estimate >= CEILING else '0'} % from {clusters} clusters (< {CEILING_CLUSTERS}): "
            "if the errors sit in a few of them this interval may be too narrow (docs/statistics.md)")
DIFFERENCE_METHOD = "cluster-robust t (CR2 standard error) on K − 1 df; p from the same t"


@functools.lru_cache(maxsize=4096)
def t_quantile(df: float, level: float) -> float:
    """The two-sided ``level`` quantile of Student's t on ``df`` degrees of freedom."""
    return float(distributions.t_ppf(0.5 + level / 2, df))


def t_p_value(statistic: float, df: float) -> float:
    """Two-sided p of a t statistic on ``df`` degrees of freedom (1.0 for a statistic of 0)."""
    if statistic == 0:
        return 1.0
    if math.isinf(statistic):
        return 0.0
    return float(min(1.0, 2 * distributions.t_sf(abs(statistic), df)))


def cr2_variance(sums: NDArray[np.float64], counts: NDArray[np.float64],
                 members: NDArray[np.int64] | None = None) -> float:
    """The CR2 variance of the ratio ΣS / ΣN over clusters (needs ≥ 2 clusters); with ``members``, the
    dyadic variance instead (``dyadic_variance``)."""
    if members is not None:
        return dyadic_variance(sums, counts, members)
    total = float(counts.sum())
    estimate = float(sums.sum()) / total
    residual = sums - estimate * counts
    leverage = counts / total
    return float(np.sum(residual**2 / (1.0 - leverage))) / total**2


def dyadic_variance(sums: NDArray[np.float64], counts: NDArray[np.float64], members: NDArray[np.int64]) -> float:
    """The variance of ΣS / ΣN when each cluster g is a *pair of units* (members[g] = its two units' codes):
    the CR2-adjusted dyadic variance (``dyadic.variance``), never below the one-way variance of the pairs
    of units themselves, which it must exceed in expectation."""
    return max(dyadic.variance(sums, counts, members), cr2_variance(sums, counts))


def unit_count(members: NDArray[np.int64]) -> int:
    """How many distinct units the clusters' members name."""
    return dyadic.unit_count(members)


def _df(sums: NDArray[np.float64], counts: NDArray[np.float64], members: NDArray[np.int64] | None) -> float:
    """The t's df: K − 1 for one-way clusters; for dyadic ones Bell–McCaffrey's (``dyadic``)."""
    if members is None:
        return float(len(sums) - 1)
    return min(dyadic.degrees_of_freedom(counts, members), float(unit_count(members) - 1))


def wilson(p: float, n_eff: float, q: float) -> tuple[float, float]:
    """Wilson's score interval of a share p on n_eff observations with the quantile q."""
    q2 = q * q
    denominator = 1 + q2 / n_eff
    center = (p + q2 / (2 * n_eff)) / denominator
    half = q / denominator * math.sqrt(max(p * (1 - p), 0.0) / n_eff + q2 / (4 * n_eff * n_eff))
    # the interval holds p exactly; at p = 0 or 1 rounding put the bound a hair inside it (1 − 2e-16)
    return max(0.0, min(p, center - half)), min(1.0, max(p, center + half))


def effective_n(sums: NDArray[np.float64], counts: NDArray[np.float64],
                members: NDArray[np.int64] | None = None) -> float:
    """N / design effect: how many independent observations the clusters are worth for the rate.

    Below ``FEW_CLUSTERS`` the design effect is never taken below 1: a variance on a handful of df cannot
    show that the clusters vary *less* than independent pairs would (two playlists with nearly equal
    rates gave a 54.5 % rate an interval of ±10 points on t(1)). From ``FEW_CLUSTERS`` on it is left as
    estimated, which keeps the coverage at 95 % when pairs are independent (a floor there over-covers)."""
    total = float(counts.sum())
    p = float(sums.sum()) / total
    binomial = p * (1 - p) / total
    variance = cr2_variance(sums, counts, members)
    if binomial <= 0 or variance <= 0:  # at 0 % / 100 % (or identical clusters) V tells nothing: deff 1
        return total
    deff = variance / binomial
    if _clusters(sums, members) < FEW_CLUSTERS:
        deff = max(deff, 1.0)
    return total / deff


def _two_units(members: NDArray[np.int64] | None) -> NDArray[np.int64] | None:
    """Dyadic members, or None when every cluster lies in one unit (both segments in one playlist): the
    clusters are then plainly one-way, one per unit, and get the one-way methods."""
    if members is None or bool(np.any(members[:, 0] != members[:, 1])):
        return members
    return None


def _clusters(sums: NDArray[np.float64], members: NDArray[np.int64] | None) -> int:
    """K of the t's K − 1 df: the clusters, or with dyadic clusters the units they name."""
    return len(sums) if members is None else unit_count(members)


def rate(sums: NDArray[np.float64], counts: NDArray[np.float64], level: float, null: float | None,
         members: NDArray[np.int64] | None = None) -> tuple[float | None, float | None, float | None, int]:
    """(low, high, p against ``null`` or None, df) of the rate ΣS / ΣN; no interval with one cluster."""
    members = _two_units(members)
    k = _clusters(sums, members)
    if k < 2 or len(sums) < 2:
        return None, None, None, 0
    if null is not None and not 0 <= null <= 1:
        raise ValueError(f"a rate's null value {null} is not between 0 and 1")
    p = float(sums.sum() / counts.sum())
    if likelihood_applies(sums, counts, members):  # counts in one-way clusters: beta_binomial.py (why)
        return rates_by_likelihood([(sums, counts, null)], level)[0]
    n_eff = effective_n(sums, counts, members)
    df = _df(sums, counts, members)
    q = t_quantile(df, level)
    low, high = wilson(p, n_eff, q)
    p_value = None
    if null is not None:
        if null in (0.0, 1.0):
            p_value = 1.0 if p == null else 0.0  # a rate of exactly 0 or 1 under the null cannot be otherwise
        else:
            p_value = t_p_value((p - null) / math.sqrt(null * (1 - null) / n_eff), df)
    return low, high, p_value, max(1, int(df))


def likelihood_applies(sums: NDArray[np.float64], counts: NDArray[np.float64],
                       members: NDArray[np.int64] | None) -> bool:
    """Whether a rate gets the beta-binomial interval: one-way clusters of whole counts (a share of pairs,
    questions, hits). Dyadic clusters and fractional values (nDCG) keep Wilson with a design effect."""
    return (members is None and bool(np.all(np.abs(sums - np.rint(sums)) < 1e-9))
            and bool(np.all(np.abs(counts - np.rint(counts)) < 1e-9)))


def rates_by_likelihood(rows: list[tuple[NDArray[np.float64], NDArray[np.float64], float | None]], level: float
                        ) -> list[tuple[float, float, float | None, int]]:
    """(low, high, p, df) of many rates (sums, counts, null) at once by ``beta_binomial.intervals`` — one
    array for all (shorter rows padded with empty clusters, which add nothing): the same numbers each gives
    alone, at a fraction of the numpy calls. Every row needs ≥ 2 clusters."""
    if not rows:
        return []
    width = max(len(s) for s, _, _ in rows)
    sums, counts = np.zeros((len(rows), width)), np.zeros((len(rows), width))
    for i, (s, n, _) in enumerate(rows):
        sums[i, :len(s)], counts[i, :len(n)] = np.rint(s), np.rint(n)
    nulls = np.array([math.nan if null is None else null for _, _, null in rows])
    k = np.array([len(s) for s, _, _ in rows])
    low, high, p, df = beta_binomial.intervals(sums, counts, k, level, nulls, FEW_CLUSTERS)
    out: list[tuple[float, float, float | None, int]] = []
    for i, (s, n, null) in enumerate(rows):
        estimate = float(s.sum() / n.sum())
        tested = (None if null is None else (1.0 if estimate == null else 0.0) if null in (0.0, 1.0)
                  else float(p[i]))
        out.append((float(low[i]), float(high[i]), tested, rate_df(float(df[i]))))
    return out


def rate_df(df: float) -> int:
    """A rate's df as the Interval records it: the Satterthwaite df rounded down, capped (∞: no clustering
    seen) at a million."""
    return int(min(df, 1e6))


def difference(sums: NDArray[np.float64], counts: NDArray[np.float64], level: float, null: float,
               bounds: tuple[float, float] = (-1.0, 1.0), members: NDArray[np.int64] | None = None
               ) -> tuple[float | None, float | None, float | None, int]:
    """(low, high, p against ``null``, df) of the mean ΣD / ΣN of values within ``bounds``."""
    members = _two_units(members)
    k = _clusters(sums, members)
    if k < 2 or len(sums) < 2:
        return None, None, None, 0
    total = float(counts.sum())
    d = float(sums.sum()) / total
    se = math.sqrt(cr2_variance(sums, counts, members))
    df = _df(sums, counts, members)
    q = t_quantile(df, level)
    whole = max(1, int(df))
    lo, hi = bounds
    if se > 1e-12 * max(1.0, abs(d)):
        return max(lo, d - q * se), min(hi, d + q * se), t_p_value((d - null) / se, df), whole
    # every cluster's mean is d: the interval is how far the mean could move if up to a Wilson bound of the
    # N observations (0 of N seen) lay elsewhere in the bounds; the p-value inverts that bound
    def share(quantile: float) -> float:
        return quantile * quantile / (total + quantile * quantile)

    low, high = max(lo, d - (d - lo) * share(q)), min(hi, d + (hi - d) * share(q))
    if abs(d - null) <= 1e-12:
        return low, high, 1.0, whole
    room = (d - lo) if null < d else (hi - d)
    needed = abs(d - null) / room if room > 0 else 1.0  # the share of moved observations that reaches null
    if needed >= 1:
        return low, high, 0.0, whole
    return low, high, t_p_value(math.sqrt(total * needed / (1 - needed)), df), whole
