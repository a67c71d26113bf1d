"""Agreement between judges (issue 40, item 8): Krippendorff's alpha over the judges' main runs and Cohen's
kappa for each pair of judges, each with an interval clustered by question (the report's unit).

Why: accuracy says how often each judge is right, not whether judges are right on the *same* pairs. Two
70 % judges may agree on nearly every pair (one signal read twice) or little beyond chance (a panel of them
adds information). Alpha and kappa measure agreement beyond what the judges' own rates give by chance.

What is compared: each model judge's main run (evidence as the leaderboard's, full-domain scope, sides as
drawn; the shortcut/… judges only when no model judge has a run) scores a pair 1 (right), 0 (wrong) or
0.5 (no verdict, here *missing*). The letter A/B is not kept in ``Observations`` and is not needed: in
the forward main runs every judge sees a pair with the same sides (``benchmark_pair.a_is_better``), so
agreeing on which answer is better is agreeing on whether each is right.

* alpha (nominal): over the pairs every main run judged; a pair with fewer than two verdicts is not
  pairable and drops out, as Krippendorff defines. The estimate is the ``krippendorff`` package's, called
  as ``human.results.alpha`` calls it (analytics may not import human: tests/test_layers.py); the
  replicates use its closed form for two values, α = 1 − (n − 1)·o / (n₁n₀), with o = Σ_u r_u w_u / (m_u − 1)
  over pairable pairs (r right, w wrong of m verdicts) and n = n₁ + n₀.
* kappa: Cohen's (p_o − p_e) / (1 − p_e) from the 2 × 2 table of the pairs both judges gave a verdict on.

The interval: both are smooth functions of per-cluster sums (the 2 × 2 cells; o, n₁, n₀), so the
delete-one-cluster jackknife gives a standard error, and the interval is estimate ± t(K − 1)·se clipped to
[−1, 1] — the t on K − 1 df of ``small_sample``. Not the cluster percentile bootstrap, which the issue
measured too narrow with few clusters. Coverage of the 95 % interval by simulation (this module's
functions; 4 judges 50–70 % right, logistic question and pair effects, clusters of 1–7 pairs, 5 % no
verdict; 4000 studies, truth from 200,000 clusters), kappa / alpha at true ≈ 0.27 and ≈ 0.52: 20 clusters
94.3 / 94.5 % and 95.0 / 95.2 %; 40 clusters 95.0 / 95.0 % and 94.3 / 94.7 % (10 clusters 93.8–94.8 %;
the cluster percentile bootstrap 91–94 % at 20–40, 88–90 % at 10). High agreement (≈ 0.83, 2000 studies)
covers a little less: kappa 93.0 / 93.8 %, alpha 94.8 / 93.6 % at 20 / 40 clusters. With no disagreement
at all (1.0) the jackknife's se is 0; the interval is then not [1, 1] but, as ``human.results``' perfect
alpha, 1 − (a Wilson upper bound for 0 disagreeing of the N pairs, on t(K − 1)) / (the chance disagreement).
Undefined (one value only, e.g. both judges right on every pair): None, with a note.

``swap_figures`` (`leaderboard --json`'s ``swap_aggregated``): where a judge's main run has a swapped twin,
its accuracy with the two passes averaged and the share of pairs right in both, as the report's rates.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import combinations
from typing import Any

import krippendorff
import numpy as np
from numpy.typing import NDArray

from playlisteval.analytics.intervals import cluster_mean
from playlisteval.analytics.rates import Bootstrap
from playlisteval.analytics.small_sample import t_quantile
from playlisteval.analytics.trust_data import Observations

METHOD = ("delete-one-cluster jackknife standard error, estimate ± t on K − 1 df, clipped to [−1, 1]; "
          "no disagreement at all: 1 − a Wilson bound for 0 disagreeing pairs / the chance disagreement")
Stat = Callable[[NDArray[np.float64]], NDArray[np.float64]]


def _kappa(cells: NDArray[np.float64]) -> NDArray[np.float64]:
    """Cohen's kappa of 2 × 2 tables [..., (both right, a only, b only, both wrong)] (nan: undefined)."""
    n = cells.sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        a, b = (cells[..., 0] + cells[..., 1]) / n, (cells[..., 0] + cells[..., 2]) / n
        expected = a * b + (1 - a) * (1 - b)
        return np.asarray(((cells[..., 0] + cells[..., 3]) / n - expected) / (1 - expected), dtype=np.float64)


def _alpha(cells: NDArray[np.float64]) -> NDArray[np.float64]:
    """Nominal alpha of two values from summed (o, n₁, n₀) (nan: undefined)."""
    o, right, wrong = cells[..., 0], cells[..., 1], cells[..., 2]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(1 - (right + wrong - 1) * o / (right * wrong), dtype=np.float64)


def _per_cluster(rows: NDArray[np.float64], codes: NDArray[np.int64]) -> NDArray[np.float64]:
    """Rows summed per cluster, clusters with no observation left out, in a canonical (sorted) order."""
    if not len(codes):
        return np.zeros((0, rows.shape[1]))
    # a bincount per column: the same sums in the same order as np.add.at (one row after another), which is
    # unbuffered and was most of the agreement figures (325 judge pairs at 1M judgments)
    k = int(codes.max()) + 1
    out = np.stack([np.bincount(codes, weights=rows[:, j], minlength=k) for j in range(rows.shape[1])], axis=1)
    out = out[out.sum(axis=1) > 0]
    return out[np.lexsort(out.T[::-1])]


def interval(cells: NDArray[np.float64], stat: Stat, pairs: int, chance: float, level: float) -> dict[str, Any]:
    """The statistic of the summed ``cells`` with its jackknife-t interval over the K clusters (the rows);
    ``pairs`` and ``chance`` (the disagreement expected by chance) bound it when no pair disagrees."""
    k, total = len(cells), cells.sum(axis=0)
    value = float(stat(total)) if k else float("nan")
    out: dict[str, Any] = {"estimate": None if np.isnan(value) else value, "low": None, "high": None,
                           "n": pairs, "clusters": k, "level": level, "method": METHOD,
                           "df": k - 1 if k >= 2 else None}
    if out["estimate"] is None:
        return {**out, "note": "undefined: one value only (the same verdict everywhere)" if k else "no pairs"}
    if k < 2:
        return {**out, "note": "one cluster: no interval"}
    q = t_quantile(k - 1, level)
    if value >= 1.0 - 1e-12:  # no disagreement: the jackknife sees no spread, and [1, 1] would be false
        bound = q * q / (pairs + q * q)  # Wilson's upper bound for 0 disagreeing of the pairs
        return {**out, "low": max(-1.0, 1.0 - bound / chance), "high": 1.0}
    replicates = stat(total[None, :] - cells)
    if not np.all(np.isfinite(replicates)):
        return {**out, "note": "undefined without one of the clusters: no interval"}
    se = float(np.sqrt((k - 1) / k * np.sum((replicates - replicates.mean()) ** 2)))
    low, high = max(-1.0, value - q * se), min(1.0, value + q * se)
    return {**out, "low": low, "high": high} if high > low else {**out, "note": "no spread: no interval"}


def kappa(x: NDArray[np.float64], y: NDArray[np.float64], codes: NDArray[np.int64], level: float) -> dict[str, Any]:
    """Cohen's kappa of two judges' scores (1, 0; 0.5 = no verdict, left out) on the same pairs, whose
    clusters are ``codes``, with its interval and the observed agreement."""
    both = (x != 0.5) & (y != 0.5)
    a, b = x[both] == 1, y[both] == 1
    rows = np.stack([a & b, a & ~b, ~a & b, ~a & ~b], axis=1).astype(np.float64)
    cells = _per_cluster(rows, codes[both])
    n = int(both.sum())
    ra, rb = (float(a.mean()), float(b.mean())) if n else (0.0, 0.0)
    out = interval(cells, _kappa, n, 1 - (ra * rb + (1 - ra) * (1 - rb)), level)
    return {**out, "observed_agreement": float(np.mean(a == b)) if n else None}


def alpha(matrix: NDArray[np.float64], codes: NDArray[np.int64], level: float) -> dict[str, Any]:
    """Krippendorff's alpha (nominal) of judges × pairs scores (1, 0; 0.5 = missing), pairs clustered by
    ``codes``: the package's estimate, the jackknife-t interval over clusters."""
    right, wrong = (matrix == 1).sum(axis=0).astype(float), (matrix == 0).sum(axis=0).astype(float)
    pairable = right + wrong >= 2
    o = np.where(pairable, right * wrong / np.maximum(right + wrong - 1, 1), 0.0)
    rows = np.stack([o, right, wrong], axis=1)[pairable]
    cells = _per_cluster(rows, codes[pairable])
    n = float((right + wrong)[pairable].sum())
    chance = 2 * float(right[pairable].sum() * wrong[pairable].sum()) / (n * (n - 1)) if n > 1 else 0.0
    out = interval(cells, _alpha, int(pairable.sum()), chance, level)
    if out["estimate"] is None:
        return out
    counts = np.stack([right, wrong], axis=1)[pairable]  # the package's own computation, as human.results'
    return {**out, "estimate": float(krippendorff.alpha(value_counts=counts, level_of_measurement="nominal"))}


def figures(obs: Observations, evidence: str, boot: Bootstrap) -> dict[str, Any]:
    """Alpha over the judges' main runs and kappa for each pair of them, clustered by ``boot.unit``."""
    mains = obs.main_runs(evidence)
    judges = sorted(j for j in mains if not j.startswith("shortcut/")) or sorted(mains)
    head: dict[str, Any] = {"evidence": evidence, "judges": judges, "unit": boot.unit, "level": boot.level,
                            "method": METHOD, "alpha": None, "kappa": []}
    if len(judges) < 2:
        return {**head, "note": "fewer than two judges with a main run: no agreement to measure"}
    arrays = {j: obs.run_arrays(mains[j]) for j in judges}
    shared = arrays[judges[0]][0]
    for j in judges[1:]:
        shared = np.intersect1d(shared, arrays[j][0], assume_unique=True)
    if len(shared):
        matrix = np.stack([arrays[j][1][np.searchsorted(arrays[j][0], shared)] for j in judges])
        head["alpha"] = alpha(matrix, obs.codes(shared, boot.unit), boot.level)
    head["shared_pairs"] = len(shared)
    for a, b in combinations(judges, 2):
        pairs, xa, xb = obs.common(mains[a], mains[b])
        # the cells per cluster are put in canonical order (_per_cluster): any numbering of the clusters gives
        # the same kappa; this one is kept for the judge-vs-judge table's comparisons over the same pairs
        head["kappa"].append({"judge_a": a, "judge_b": b, "run_a": mains[a], "run_b": mains[b],
                              "kappa": kappa(xa, xb, obs.cluster_codes(pairs, boot.unit), boot.level)})
    return head


def swap_figures(obs: Observations, evidence: str, boot: Bootstrap) -> list[dict[str, Any]]:
    """Per judge with a forward and a swapped main run (full scope): on the pairs both judged, the
    swap-aggregated accuracy (the mean of the two passes' scores, no verdict 0.5 as everywhere) and the
    share right in both passes, each a rate with the report's interval (``intervals.cluster_mean``)."""
    swapped = {r.judge: r.run_id for r in sorted(obs.runs.values(), key=lambda r: r.run_id)
               if r.main and r.swapped and r.evidence == evidence and r.scope == "domain"}
    out = []
    for judge, forward in sorted(obs.main_runs(evidence).items()):
        if judge not in swapped:
            continue
        (pf, sf), (ps, ss) = obs.run_arrays(forward), obs.run_arrays(swapped[judge])
        pairs, i, j = np.intersect1d(pf, ps, assume_unique=True, return_indices=True)
        row: dict[str, Any] = {"judge": judge, "run_forward": forward, "run_swapped": swapped[judge],
                               "pairs": len(pairs), "averaged": None, "right_in_both": None}
        if len(pairs):
            codes = obs.codes(pairs, boot.unit)
            for key, values in (("averaged", (sf[i] + ss[j]) / 2), ("right_in_both", (sf[i] == 1) & (ss[j] == 1))):
                iv = cluster_mean(values.astype(np.float64), codes, seed=boot.seed, resamples=boot.resamples,
                                  level=boot.level, kind="rate")
                row[key] = {**iv.as_dict(), "unit": boot.unit}
        out.append(row)
    return out
