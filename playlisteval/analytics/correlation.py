"""External validity: does a judge's accuracy on this benchmark track a published score of the same judges?

Why: a benchmark that ranks judges the way an established leaderboard does measures something real; one
that does not needs explaining. The data are one pair of numbers per judge (accuracy here, score there),
so n is the number of judges — a handful — and every printed statistic is one that holds at that size
(issue 40):

* Intervals by Fisher's z: Pearson tanh(atanh(r) ± z_{1−α/2}·√(1/(n − 3))) (scipy's
  ``PearsonRResult.confidence_interval``); Spearman the same with Bonett and Wright's (2000) variance
  (1 + ρ²/2)/(n − 3) — Fieller's 1.06/(n − 3) covered only 85 % at 10 judges and ρ = 0.95.
  Both need n ≥ 4: with 3 judges the result says there is no interval, and why.
  At |r| = 1 atanh is infinite and the interval would collapse to [1, 1], so r is clipped first. Pearson:
  to ±0.999, the largest |r| below 1 that the three printed decimals show — an r printed as 1.000 gets the
  interval of 0.999, never narrower than that of any r it could stand for. Spearman: to ±(1 − 12/(n³ − n)),
  the largest |ρ| below 1 that n distinct ranks can take (one adjacent swap from a perfect ordering).
* p-values by permutation (no normality needed): under "no association" every ordering of the published
  scores against the judges is equally likely; p is the share of orderings whose |r| (or |ρ|) is at least
  the observed one. Exact — all n! orderings — up to EXACT_UP_TO judges; beyond, DRAWS random orderings
  (seeded) with p = (hits + 1)/(draws + 1), never 0. With 4 judges the smallest attainable p is 1/24
  (Pearson) or 2/24 (Spearman: the reversed ordering reaches |ρ| = 1 too); nothing is significant with 3.
  scipy's normal-theory p (Pearson) and t-approximation p (Spearman) stay in the JSON for comparison.
* The percentile bootstrap over judges (resampling with replacement; a resample without spread is skipped
  and counted) undercovers at these sizes, so it is never printed; the JSON keeps it under ``bootstrap``,
  labelled ``printed: false`` with the reason.

Coverage of the nominal 95 % intervals, measured on bivariate normal data of known ρ (2,000 simulated
studies per cell, so ±1 point; the lowest over ρ ∈ {0, 0.5, 0.8, 0.95}; Spearman's against its population
value (6/π)·asin(ρ/2); bootstrap with 1,000 resamples):

    judges                              4      6     10     20     40
    Pearson, Fisher-z (printed)       96.5   94.5   94.5   94.3   94.8
    Pearson, percentile bootstrap     72.5   86.8   90.2   91.5   93.0
    Spearman, Fisher-z B–W (printed)  99.2   96.5   95.1   94.3   95.2
    Spearman, percentile bootstrap    45.0   76.7   94.8   95.0   95.2

Spearman's bootstrap covers from 10 judges on, but the printed interval already does at every size: one
interval per statistic is printed, so the bootstrap stays in the JSON.

Fewer than three judges is refused: two points always lie on a line.
Determinism: the judges are put in a canonical order (by their values) before resampling or drawing
orderings, so the input order never changes a result.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from playlisteval.analytics.bootstrap import percentile_interval
from playlisteval.analytics.intervals import LEVEL, RESAMPLES

EXACT_UP_TO = 9  # 9! = 362,880 orderings (~0.1 s); 10! would be ten times that
DRAWS = 100_000  # random orderings beyond: Monte-Carlo SE of a p near 0.05 is 0.0007
PEARSON_CLIP = 0.999  # the largest |r| below 1 that three printed decimals show (module doc)
BOOTSTRAP_WHY = ("not printed: in simulations of bivariate normal data a nominal 95 % percentile bootstrap "
                 "over judges covered as little as 72 % (Pearson) and 45 % (Spearman) at 4 judges, 91.5 % "
                 "(Pearson) at 20; the Fisher-z interval printed held 94-99 % (module doc)")


def _paired(x: ArrayLike, y: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    a, b = np.asarray(x, dtype=np.float64).reshape(-1), np.asarray(y, dtype=np.float64).reshape(-1)
    if len(a) != len(b):
        raise ValueError(f"a correlation needs paired lists of equal length ({len(a)} vs {len(b)})")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ValueError("every value must be a finite number (drop judges without a score first)")
    if len(a) < 3:
        raise ValueError(f"a correlation needs at least 3 judges (got {len(a)}): two points always lie on a line")
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        raise ValueError("one of the lists has the same value for every judge: no correlation is defined")
    order = np.lexsort((b, a))
    return a[order], b[order]


def spearman_clip(n: int) -> float:
    """The largest |ρ| below 1 that n distinct ranks can take: 1 − 6·2/(n(n² − 1)), one adjacent swap."""
    return 1.0 - 12.0 / (n**3 - n)


def _at_bound(r: float, n: int, spearman: bool) -> bool:
    """Whether r is clipped: Pearson beyond ±PEARSON_CLIP; Spearman only at ±1 — with tied ranks ρ can
    lie between spearman_clip(n) and 1, and such a ρ keeps its own value."""
    return abs(r) > 1 - 1e-9 if spearman else abs(r) > PEARSON_CLIP


def fisher_z_interval(r: float, n: int, level: float = LEVEL, *, spearman: bool = False
                      ) -> tuple[float, float] | None:
    """Fisher's interval of a Pearson r (variance 1/(n − 3)) or, with ``spearman``, of a Spearman ρ
    (Bonett–Wright variance (1 + ρ²/2)/(n − 3)) of n judges, |r| clipped below 1 first (module doc);
    None with n ≤ 3, where n − 3 leaves no variance to estimate."""
    if not 0 < level < 1:
        raise ValueError(f"confidence level {level} is not between 0 and 1")
    if not -1 <= r <= 1:
        raise ValueError(f"a correlation lies in [-1, 1] (got {r})")
    if n <= 3:
        return None
    if _at_bound(r, n, spearman):
        r = math.copysign(spearman_clip(n) if spearman else PEARSON_CLIP, r)
    variance = (1 + r * r / 2 if spearman else 1.0) / (n - 3)
    half = NormalDist().inv_cdf(0.5 + level / 2) * math.sqrt(variance)
    z = math.atanh(r)
    return math.tanh(z - half), math.tanh(z + half)


def _all_orderings(n: int) -> NDArray[np.intp]:
    """Every permutation of range(n), one a row (n! rows), built by inserting k at each place of every
    ordering of range(k) — a few numpy copies instead of n! Python tuples."""
    out = np.zeros((1, 0), dtype=np.intp)
    for k in range(n):
        m = len(out)
        grown = np.empty((m * (k + 1), k + 1), dtype=np.intp)
        for place in range(k + 1):
            block = grown[place * m:(place + 1) * m]
            block[:, :place], block[:, place], block[:, place + 1:] = out[:, :place], k, out[:, place:]
        out = grown
    return out


def _unit_centred(v: NDArray[np.float64]) -> NDArray[np.float64]:
    c = v - v.mean()
    return c / math.sqrt(float(c @ c))  # r of x and y = unit(x) · unit(y)


def permutation_p(x: ArrayLike, y: ArrayLike, *, seed: int, draws: int = DRAWS) -> dict[str, Any]:
    """Two-sided permutation p-values of Pearson's r and Spearman's ρ (module doc): exact over all n!
    orderings of ``y`` up to EXACT_UP_TO judges, else ``draws`` seeded random orderings."""
    if draws < 1:
        raise ValueError(f"draws must be positive (got {draws})")
    from scipy import stats  # here, not at import (issue 26)

    a, b = _paired(x, y)
    n = len(a)
    stats_of = {"pearson": (_unit_centred(a), _unit_centred(b)),
                "spearman": (_unit_centred(stats.rankdata(a)), _unit_centred(stats.rankdata(b)))}
    exact = n <= EXACT_UP_TO
    hits = dict.fromkeys(stats_of, 0)
    rng = np.random.default_rng([int(seed) % 2**63, 41])
    done = 0
    while done < (math.factorial(n) if exact else draws):
        if exact:
            orders = _all_orderings(n)
        else:  # in chunks: 100,000 × 17 judges at once would be ~14 MB per statistic
            orders = rng.permuted(np.tile(np.arange(n), (min(10_000, draws - done), 1)), axis=1)
        for name, (u, v) in stats_of.items():
            observed = abs(float(u @ v))
            # equal |r| from another ordering can differ in the last bits: count it as reached
            hits[name] += int(np.count_nonzero(np.abs(v[orders] @ u) >= observed - 1e-12 * max(1.0, observed)))
        done += len(orders)
    total = done if exact else done + 1  # a Monte-Carlo p counts the observed ordering once: never 0
    out: dict[str, Any] = {name: (h if exact else h + 1) / total for name, h in hits.items()}
    out.update(orderings=done, exact=exact, method=(
        f"exact permutation test over all {done:,} orderings of one list" if exact else
        f"Monte Carlo permutation test over {done:,} random orderings (seeded), p = (hits + 1)/(draws + 1)"))
    return out


def _row_pearson(a: NDArray[np.float64], b: NDArray[np.float64]) -> NDArray[np.float64]:
    ac, bc = a - a.mean(axis=1, keepdims=True), b - b.mean(axis=1, keepdims=True)
    r = np.einsum("ij,ij->i", ac, bc) / np.sqrt(np.einsum("ij,ij->i", ac, ac) * np.einsum("ij,ij->i", bc, bc))
    return np.clip(r, -1.0, 1.0)


def bootstrap_correlations(x: ArrayLike, y: ArrayLike, *, seed: int, resamples: int = RESAMPLES
                           ) -> tuple[NDArray[np.float64], NDArray[np.float64], int]:
    """Pearson's and Spearman's coefficient of each usable resample of the judges, and how many resamples
    were skipped for lack of spread."""
    if resamples < 1:
        raise ValueError(f"resamples must be positive (got {resamples})")
    a, b = _paired(x, y)
    rng = np.random.default_rng([int(seed) % 2**63, 31])
    draws = rng.integers(0, len(a), size=(resamples, len(a)))
    xa, yb = a[draws], b[draws]
    usable = (np.ptp(xa, axis=1) > 0) & (np.ptp(yb, axis=1) > 0)
    xa, yb = xa[usable], yb[usable]
    from scipy import stats  # here, not at import: scipy.stats is ~0.3 s of every report's start (issue 26)

    pearson = _row_pearson(xa, yb)
    spearman = _row_pearson(stats.rankdata(xa, axis=1), stats.rankdata(yb, axis=1))
    return pearson, spearman, int(resamples - usable.sum())


def _fisher(r: float, n: int, level: float, spearman: bool) -> dict[str, Any]:
    got = fisher_z_interval(r, n, level, spearman=spearman)
    if got is None:
        return {"low": None, "high": None, "interval": None, "clipped": False,
                "note": f"no interval: Fisher's z needs at least 4 judges (its variance has n − 3 = {n - 3})"}
    return {"low": got[0], "high": got[1], "clipped": _at_bound(r, n, spearman),
            "interval": "Fisher-z (Bonett–Wright variance)" if spearman else "Fisher-z"}


def correlate(x: ArrayLike, y: ArrayLike, *, seed: int, resamples: int = RESAMPLES, level: float = LEVEL,
              draws: int = DRAWS) -> dict[str, Any]:
    """Pearson and Spearman correlation of ``x`` (e.g. benchmark accuracy per judge) and ``y`` (a published
    score of the same judges): each with its Fisher-z interval (``low``/``high``, None with 3 judges) and
    permutation p (``p_value``); scipy's parametric p and the percentile bootstrap kept beside, labelled."""
    if not 0 < level < 1:
        raise ValueError(f"confidence level {level} is not between 0 and 1")
    from scipy import stats  # here, not at import (issue 26)

    a, b = _paired(x, y)
    n = len(a)
    pr, sr = stats.pearsonr(a, b), stats.spearmanr(a, b)
    perm = permutation_p(a, b, seed=seed, draws=draws)
    boot_p, boot_s, skipped = bootstrap_correlations(a, b, seed=seed, resamples=resamples)
    enough = len(boot_p) >= max(2, resamples / 2)
    kind = "exact permutation" if perm["exact"] else "Monte Carlo permutation"

    def boot(values: NDArray[np.float64]) -> dict[str, Any]:
        low, high = percentile_interval(values, level) if enough else (None, None)
        return {"low": low, "high": high, "printed": False, "why": BOOTSTRAP_WHY,
                "method": "percentile bootstrap over judges (resamples without spread skipped)",
                **({} if enough else {"note": f"no interval: {skipped} of {resamples} resamples had no spread"})}

    return {
        "n": n, "level": level, "seed": seed, "resamples": resamples, "skipped_resamples": skipped,
        "permutation": {k: perm[k] for k in ("orderings", "exact", "method")},
        "method": (f"Fisher-z intervals (Spearman with the Bonett–Wright variance), |r| = 1 clipped; {perm['method']}; "
                   "the percentile bootstrap over judges in the JSON only (it undercovers with few judges)"),
        "pearson": {"estimate": float(pr.statistic), **_fisher(float(pr.statistic), n, level, False),
                    "p_value": perm["pearson"], "p_method": kind, "p_normal_theory": float(pr.pvalue),
                    "bootstrap": boot(boot_p)},
        "spearman": {"estimate": float(sr.statistic), **_fisher(float(sr.statistic), n, level, True),
                     "p_value": perm["spearman"], "p_method": kind, "p_t_approximation": float(sr.pvalue),
                     "bootstrap": boot(boot_s)},
    }


def _p(p: float) -> str:
    return f"{p:.3f}" if p >= 0.001 else f"{p:.1e}"


def summary(result: dict[str, Any], name: str, digits: int = 3) -> str:
    """One line naming the interval and the p: "Pearson r = 0.956, 95 % Fisher-z [-0.06, 1.00], exact
    permutation p = 0.167 (24 orderings)" — the terminal and the report print the same words."""
    v, perm = result[name], result["permutation"]
    symbol = "r" if name == "pearson" else "ρ"
    if v["low"] is None:
        interval = v["note"]
    else:
        bound = PEARSON_CLIP if name == "pearson" else spearman_clip(result["n"])
        interval = (f"{100 * result['level']:g} % {v['interval']} [{v['low']:.2f}, {v['high']:.2f}]"
                    + (f" (|{symbol}| clipped to {bound:.3f} for it)" if v["clipped"] else ""))
    orderings = f"{perm['orderings']:,} {'orderings' if perm['exact'] else 'random orderings'}"
    return (f"{name.capitalize()} {symbol} = {v['estimate']:.{digits}f}, {interval}, "
            f"{v['p_method']} p = {_p(v['p_value'])} ({orderings})")
