"""The trust figures of a benchmark (issue 21): how small a difference it can detect, every pair of judges
compared with Holm's correction, stability over repeated samples, the blind (``--modality none``) run,
accuracy by where the evidence sits (trust_position.py), and best-of-5.

Why: a rate with an interval says how sure one number is; these say whether the benchmark can answer the
questions a researcher asks of it (does A beat B, given the other comparisons made; does the video matter;
is the judge stable). The statistics are the pure modules (power, multiplicity, stability, best_of,
intervals); this module only chooses the observations. Every figure's JSON carries its interval, its
``method``, ``clusters`` and ``resamples``; a no-verdict scores 0.5 as everywhere else (SPEC G4) except in
stability and best-of-5, whose modules treat it as no verdict.
"""

from __future__ import annotations

from collections import defaultdict
from itertools import combinations
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from playlisteval.analytics import best_of_runs, mover, multiplicity, power, sign_flips, small_sample, stability
from playlisteval.analytics.intervals import (
    Interval,
    Labels,
    PairedRequest,
    cluster_difference,
    cluster_mean,
    dyad_sums,
    paired_from_sums,
)
from playlisteval.analytics.rates import Bootstrap
from playlisteval.analytics.trust_data import UNITS, Observations


def _verdict(score: float) -> int | None:
    return None if score == 0.5 else int(score == 1.0)


def _boot(boot: Bootstrap) -> dict[str, Any]:
    return {"unit": boot.unit, "resamples": boot.resamples, "level": boot.level, "seed": boot.seed}


def _iv(values: ArrayLike, labels: Labels, boot: Bootstrap, method: str, null: float | None = None,
        second: list[str] | None = None) -> dict[str, Any]:
    iv = cluster_mean(values, labels, seed=boot.seed, resamples=boot.resamples, level=boot.level, null=null,
                      second=second)
    return {**iv.as_dict(), "resamples": boot.resamples, "unit": boot.unit, "method": f"{method}; {iv.method}"}


def _diff(a: ArrayLike, b: ArrayLike, labels: Labels, boot: Bootstrap, method: str,
          second: list[str] | None = None) -> dict[str, Any]:
    iv = cluster_difference(a, b, labels, seed=boot.seed, resamples=boot.resamples, level=boot.level,
                            second=second)
    return _as_difference(iv, method, boot)


def _sides(a: NDArray[np.float64], b: NDArray[np.float64], codes: NDArray[np.int64]) -> PairedRequest:
    """Each cluster's sum of ``a``, of ``b`` and its count (a paired request, one-way clusters; ``codes``:
    intervals.cluster_codes's numbering); a side with a value other than 0/1 (a no-verdict's 0.5) is sent
    as its differences, which keeps the CR2 t."""
    k = int(codes.max()) + 1
    counts = np.bincount(codes, minlength=k).astype(np.float64)
    if not bool(np.all(np.isin(a, (0.0, 1.0)) & np.isin(b, (0.0, 1.0)))):
        d = np.bincount(codes, weights=a - b, minlength=k).astype(np.float64)
        return d, None, counts, None  # the differences themselves: the CR2 t
    return (np.bincount(codes, weights=a, minlength=k).astype(np.float64),
            np.bincount(codes, weights=b, minlength=k).astype(np.float64), counts, None)


def _as_difference(iv: Interval, method: str, boot: Bootstrap) -> dict[str, Any]:
    return {**iv.as_dict(), "resamples": boot.resamples, "unit": boot.unit,
            "method": f"{method}; {iv.method}, clustered by {boot.unit}"}


def _mde_of(d: NDArray[np.float64], codes: NDArray[np.int64], unit: str, alpha: float, power_: float
            ) -> dict[str, Any]:
    """The comparison's row keys: its exact noncentral-t MDE by ``unit`` (``codes``: each pair's cluster;
    None where there is none) and whether that is because no difference ≤ 100 points is detectable (issue
    40: never the normal MDE in its place, which at few clusters is smaller than the truth)."""
    if len(d) < 2:
        return {"mde": None, "none_detectable": False}
    got = power.paired_power(d, {unit: codes}, alpha, power_)["units"][unit]
    return {"mde": got["mde"], "none_detectable": got["none_detectable"],
            **({"mde_note": got["note"]} if got["none_detectable"] else {})}


def power_figures(obs: Observations, evidence: str, alpha: float = power.ALPHA, power_: float = power.POWER
                  ) -> dict[str, Any]:
    """The MDE per clustering unit from the benchmark's own ICC: of the two best-covered main runs' paired
    difference when two judges exist, else of one judge (var(d) = 2p(1−p), conservative)."""
    mains = obs.main_runs(evidence)
    model = [j for j in mains if not j.startswith("shortcut/")] or list(mains)
    if not model:
        return {"note": f"no main run at {evidence} evidence: nothing to size", "units": {}}
    ranked = sorted(model, key=lambda j: (-len(obs.run_arrays(mains[j])[0]), j))
    a = ranked[0]
    b = next((j for j in ranked[1:]), None) or next((j for j in mains if j != a), None)
    if b is not None:
        pairs = sorted(set(obs.scores[mains[a]]) & set(obs.scores[mains[b]]))
        xa, xb = [obs.scores[mains[a]][p] for p in pairs], [obs.scores[mains[b]][p] for p in pairs]
    else:
        pairs = sorted(obs.scores[mains[a]])
        xa, xb = [obs.scores[mains[a]][p] for p in pairs], None
    if len(pairs) < 2:
        return {"note": "fewer than 2 pairs judged: nothing to size", "units": {}}
    out = power.power_report(xa, xb, {u: obs.codes(pairs, u) for u in UNITS}, alpha, power_)
    return {**out, "judges": [a] if b is None else [a, b], "evidence": evidence, "resamples": None,
            "clusters": {u: v["clusters"] for u, v in out["units"].items()}}


def paired_table(obs: Observations, evidence: str, boot: Bootstrap, alpha: float = power.ALPHA,
                 power_: float = power.POWER) -> dict[str, Any]:
    """Every pair of judges' main runs on the pairs both judged: difference, interval, p, Holm-adjusted p
    across the table, and the MDE of that comparison (by the bootstrap's unit)."""
    mains = obs.main_runs(evidence)
    rows: list[dict[str, Any]] = []
    requests: list[PairedRequest] = []  # each compared row's cluster sums of both sides
    for a, b in combinations(sorted(mains), 2):
        pairs, xa, xb = obs.common(mains[a], mains[b])  # ascending pair ids
        row: dict[str, Any] = {"judge_a": a, "judge_b": b, "run_a": mains[a], "run_b": mains[b],
                               "pairs": len(pairs)}
        if not len(pairs):
            rows.append({**row, "difference": None, "p_value": None, "mde": None, "note": "no pair judged by both"})
            continue
        d = xa - xb
        # the discordant cells of the 2×2 right/wrong table (a no-verdict, 0.5, is neither): what the
        # viewer's judge-against-judge page lists pair by pair (view/versus.py)
        row["a_right_b_wrong"] = int(np.sum((xa == 1.0) & (xb == 0.0)))
        row["b_right_a_wrong"] = int(np.sum((xa == 0.0) & (xb == 1.0)))
        # numbered as the interval and the power analysis would each number them again (first appearance)
        codes = obs.cluster_codes(pairs, boot.unit)
        second = obs.second(pairs, boot.unit)
        if second is None:  # each side's cluster sums: MOVER where both are 0/1 (intervals.paired_from_sums)
            requests.append(_sides(xa, xb, codes))
        else:  # a pair belongs to both its videos (playlists): dyadic clusters, the CR2 t of the differences
            sums, counts, members = dyad_sums(d, obs.labels(list(pairs), boot.unit), second)
            requests.append((sums, None, counts, members))
        # "difference" holds the comparison's name until its interval is drawn below
        rows.append({**row, "difference": f"{a} minus {b} accuracy", "p_value": None,
                     **_mde_of(d, codes, boot.unit, alpha, power_)})
    drawn = iter(paired_from_sums(requests, seed=boot.seed, resamples=boot.resamples, level=boot.level))
    for row in rows:
        if row["difference"] is not None:
            row["difference"] = _as_difference(next(drawn), row["difference"], boot)
            row["p_value"] = row["difference"]["p_value"]
    adjusted = multiplicity.holm([r["p_value"] for r in rows], alpha)
    for r, p, rejected in zip(rows, adjusted["adjusted"], adjusted["rejected"], strict=True):
        r["p_holm"], r["rejected"] = p, rejected
    clusters = max((r["difference"]["clusters"] for r in rows if r["difference"] is not None), default=0)
    checked = 0 < clusters <= sign_flips.CHECKED_CLUSTERS
    check_floor = min(1.0, adjusted["m"] * sign_flips.smallest_p(clusters)) if checked else None
    floor = (f"the p has no floor that matters: MOVER's smallest is {mover.P_FLOOR:g}, the cluster-robust t's "
             "none (the old 2,000 sign flips could not go below 1/2001); "
             + (f"the exact sign-flip check's smallest Holm-adjusted p is {adjusted['m']} × 2^(1 − {clusters}) "
                f"= {check_floor:.2g}" if check_floor is not None else
                f"no sign-flip check past {sign_flips.CHECKED_CLUSTERS} clusters" if clusters
                else "no comparison to check"))
    return {"evidence": evidence, "alpha": alpha, "power": power_, **_boot(boot), "smallest_p": floor,
            "smallest_p_sign_flip_holm": check_floor,
            "method": (f"paired difference of main runs on common pairs, clustered by {boot.unit}; "
                       f"{mover.METHOD} for 0/1 verdicts in one-way clusters, else "
                       f"{small_sample.DIFFERENCE_METHOD}; {multiplicity.METHOD}; "
                       f"MDE at power {power_} from the pair's own ICC"),
            "m": adjusted["m"], "rows": rows}


def _sample_groups(obs: Observations) -> dict[tuple[str, str], list[int]]:
    """(judge, options without the sample index) → the runs that sampled it (runs with a temperature)."""
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    for run in obs.runs.values():
        settings = run.settings or {}
        if settings.get("temperature") is None:
            continue
        key = {k: v for k, v in settings.items() if k != "sample"}
        groups[(run.judge, repr(sorted(key.items())))].append(run.run_id)
    return {k: sorted(v, key=lambda r: ((obs.runs[r].settings or {}).get("sample", 0), r)) for k, v in groups.items()}


def sample_stability(obs: Observations, judge: str, runs: list[int], boot: Bootstrap) -> dict[str, Any]:
    """One judge's samples (``runs``, one per sample): expected and consensus accuracy and consistency,
    each with its interval, over the pairs every sample judged (what `eval judge --samples N` prints)."""
    settings = obs.runs[runs[0]].settings or {}
    pairs = sorted(set.intersection(*(set(obs.scores[r]) for r in runs)))
    entry: dict[str, Any] = {"judge": judge, "runs": runs, "samples": len(runs),
                             "temperature": settings.get("temperature"), "evidence": settings.get("evidence")}
    if not pairs:
        return {**entry, "note": "no pair judged by every sample yet"}
    verdicts = [[_verdict(obs.scores[r][p]) for r in runs] for p in pairs]
    got = stability.stability(verdicts, obs.labels(pairs, boot.unit), seed=boot.seed, resamples=boot.resamples,
                              level=boot.level)
    got["verdicts"] = got.pop("samples")  # its count of every verdict; "samples" stays the samples per pair
    return {**entry, **got}


def stability_figures(obs: Observations, boot: Bootstrap) -> list[dict[str, Any]]:
    """Per sampled judge (``eval judge --samples N --temperature T``): its samples' stability figures."""
    return [sample_stability(obs, judge, runs, boot) for (judge, _), runs in sorted(_sample_groups(obs).items())]


def blind_figures(obs: Observations, boot: Bootstrap) -> list[dict[str, Any]]:
    """Per judge with a ``--modality none`` run: its accuracy and its difference from the same judge's run
    with the video (same evidence, scope and sides; the main run when there are several)."""
    out = []
    for run in sorted(obs.runs.values(), key=lambda r: r.run_id):
        if run.modality != "none" or not obs.scores[run.run_id]:
            continue
        blind = obs.scores[run.run_id]
        pairs = sorted(blind)
        entry: dict[str, Any] = {"judge": run.judge, "run": run.run_id, "evidence": run.evidence, "scope": run.scope,
                                 "accuracy": _iv([blind[p] for p in pairs], obs.labels(pairs, boot.unit), boot,
                                                 "accuracy with the question and answers only (no video)", 0.5,
                                                 obs.second(pairs, boot.unit))}
        video = sorted((r for r in obs.runs.values() if r.judge == run.judge and r.modality != "none"
                        and (r.evidence, r.scope, r.swapped) == (run.evidence, run.scope, run.swapped)
                        and (r.settings or {}).get("temperature") is None), key=lambda r: (not r.main, r.run_id))
        if video:
            seen = obs.scores[video[0].run_id]
            common = sorted(set(seen) & set(blind))
            entry["video_run"] = video[0].run_id
            entry["difference"] = None if not common else _diff(
                [seen[p] for p in common], [blind[p] for p in common], obs.labels(common, boot.unit), boot,
                "accuracy with the video minus without (how much the video matters)", obs.second(common, boot.unit))
        out.append(entry)
    return out


def best_of_figures(obs: Observations, ratings: dict[int, dict[int, float]], evidence: str, boot: Bootstrap
                    ) -> list[dict[str, Any]]:
    """Per judge's main run: best-of-5 from its pairwise verdicts, with its interval (chance is 20 % only
    where all four rivals were judged: each row carries its own)."""
    out = []
    # each rated pair's (question, better, worse) and each question's unit, once for every run: per run,
    # the lookups were most of the section (a question's unit is the same for each of its pairs)
    rated = {p: (q, *obs.ratings[p]) for p, q in obs.item_of.items() if q in ratings}
    unit_of = {q: obs.units[p][boot.unit] for p, (q, *_) in reversed(rated.items())}
    runs = sorted(obs.main_runs(evidence).items())
    # every run at once, as arrays (best_of_runs: best_of's numbers), the share intervals in one batch
    scored = best_of_runs.best_of_runs([obs.run_arrays(run) for _, run in runs], rated, ratings, unit_of,
                                       seed=boot.seed, resamples=boot.resamples, level=boot.level)
    for (judge, run), got in zip(runs, scored, strict=True):
        if isinstance(got, ValueError):  # no gold pair judged: said, not scored
            out.append({"judge": judge, "run": run, "note": str(got)})
            continue
        out.append({"judge": judge, "run": run, **got, "clusters": got["best_of"]["clusters"]})
    return out
