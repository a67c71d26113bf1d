"""`human report` (SPEC H4, paper Table 22): what people said about the benchmark's intended answers.

1. Attention checks: an annotator who picks the wrong answer of any check fails, and *all* their
   ratings are discarded (and counted). Checks themselves are not study pairs.
2. The rest are the valid ratings of study pairs. Krippendorff's alpha (nominal) is computed by the
   ``krippendorff`` package over the ratings' slots (A or B) per pair, the way the annotators chose them;
   its interval is a percentile bootstrap over pairs (whole pairs are resampled, seeded).
3. Agreement with the intended answer: per rating, and per pair by majority (agrees / overturns /
   tied); unanimous pairs have at least two ratings, all alike; the slot preference is the share of
   ratings that picked A. Rates carry cluster-bootstrap intervals (ratings clustered by pair).
4. The same by domain and by rating gap.
"""

from __future__ import annotations

import math
import warnings
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import krippendorff
import numpy as np
from sqlalchemy.engine import Engine
from sqlmodel import col, select

from playlisteval.analytics.bootstrap import percentile_interval
from playlisteval.analytics.intervals import cluster_mean
from playlisteval.select.pairs import pair_texts
from playlisteval.store.engine import transaction
from playlisteval.store.tables import HumanRating, HumanStudy, HumanTask, ModelCall

SLOTS = ("A", "B")


@dataclass(frozen=True)
class TaskFacts:
    task_id: int
    item_id: int
    domain: str
    gap: int
    intended: str  # the slot of the intended answer
    check: bool  # an attention check
    pair_id: int = 0  # the benchmark pair it shows (issue 21: PPI joins the judges' verdicts on it)


@dataclass(frozen=True)
class RatingFacts:
    task_id: int
    annotator: str
    choice: str


def value_counts(units: list[list[str]]) -> np.ndarray:
    """Units × values (A, B): how many ratings of each unit chose each slot."""
    return np.array([[u.count(v) for v in SLOTS] for u in units], dtype=float).reshape(-1, len(SLOTS))


def alpha(counts: np.ndarray) -> float | None:
    """Krippendorff's alpha, nominal; None when undefined (no pair rated twice, or one value only)."""
    if counts.size == 0 or not np.any(counts.sum(axis=1) >= 2):
        return None
    try:
        with warnings.catch_warnings():  # one value only: 0/0, reported as undefined below
            warnings.simplefilter("ignore", RuntimeWarning)
            value = float(krippendorff.alpha(value_counts=counts, level_of_measurement="nominal"))
    except (ValueError, ZeroDivisionError):
        return None
    return None if math.isnan(value) else value


def alpha_interval(counts: np.ndarray, *, seed: int, resamples: int, level: float) -> list[float] | None:
    """Percentile interval of alpha over bootstrap resamples of the units (pairs); resamples where alpha
    is undefined are left out. Units are put in a canonical order first, so ids never matter."""
    pairable = counts[counts.sum(axis=1) >= 2]
    if resamples <= 0 or len(pairable) < 2:
        return None
    pairable = pairable[np.lexsort(pairable.T[::-1])]
    rng = np.random.default_rng([int(seed) % 2**63, 22])
    draws = [alpha(pairable[rng.integers(0, len(pairable), len(pairable))]) for _ in range(resamples)]
    kept = np.array([d for d in draws if d is not None])
    if len(kept) < max(2, resamples // 2):
        return None
    low, high = percentile_interval(kept, level)
    if high > low:
        return [low, high]
    return _perfect_alpha_interval(pairable, level)


def _perfect_alpha_interval(pairable: np.ndarray, level: float) -> list[float] | None:
    """Every resample agrees perfectly (alpha 1): not [1, 1] (issue 40). Alpha is 1 − D_o / D_e; with no
    disagreement seen among the units, D_o is bounded by Wilson's upper bound for 0 of the units, so alpha
    ≥ 1 − that bound / D_e (D_e, the disagreement expected by chance, from the values' totals)."""
    totals = pairable.sum(axis=0)
    n = float(totals.sum())
    expected = 1.0 - float((totals * (totals - 1)).sum()) / (n * (n - 1)) if n > 1 else 0.0
    if expected <= 0:  # one value only: alpha is undefined, so is its interval
        return None
    z = NormalDist().inv_cdf(0.5 + level / 2)
    bound = z * z / (len(pairable) + z * z)
    return [max(-1.0, 1.0 - bound / expected), 1.0]


def _rate(values: list[float], clusters: list[Any], seed: int, resamples: int, level: float
          ) -> tuple[float | None, list[float] | None]:
    if not values:
        return None, None
    iv = cluster_mean(values, clusters, seed=seed, resamples=max(resamples, 1), level=level)
    return iv.estimate, ([iv.low, iv.high] if iv.low is not None and iv.high is not None else None)


def _block(tasks: dict[int, TaskFacts], by_task: dict[int, list[str]], seed: int, resamples: int,
           level: float) -> dict[str, Any]:
    ratings = [(t, c) for t, choices in sorted(by_task.items()) for c in choices]
    agree, agree_ci = _rate([float(c == tasks[t].intended) for t, c in ratings], [t for t, _ in ratings],
                            seed, resamples, level)
    slot_a, slot_a_ci = _rate([float(c == "A") for _, c in ratings], [t for t, _ in ratings], seed, resamples, level)
    majority: Counter[str] = Counter()
    unanimous = 0
    for t, choices in by_task.items():
        with_intended = sum(c == tasks[t].intended for c in choices)
        majority["agrees" if 2 * with_intended > len(choices) else
                 "overturns" if 2 * with_intended < len(choices) else "tied"] += 1
        unanimous += len(choices) >= 2 and len(set(choices)) == 1
    n_tasks = len(by_task)
    return {"n_tasks": n_tasks, "n_ratings": len(ratings), "agree_with_intended": agree,
            "agree_with_intended_ci": agree_ci, "unanimous": unanimous, "majority_agrees": majority["agrees"],
            "majority_overturns": majority["overturns"], "majority_tied": majority["tied"],
            "majority_agrees_share": majority["agrees"] / n_tasks if n_tasks else None,
            "slot_a": slot_a, "slot_a_ci": slot_a_ci}


def valid_choices(task_map: dict[int, TaskFacts], ratings: list[RatingFacts]) -> tuple[list[str], dict[int, list[str]]]:
    """The annotators who failed an attention check, and task → the valid choices (checks and every rating
    of a failed annotator left out), each task's in annotator order."""
    failed = sorted({r.annotator for r in ratings
                     if task_map[r.task_id].check and r.choice != task_map[r.task_id].intended})
    valid = [r for r in ratings if r.annotator not in failed and not task_map[r.task_id].check]
    by_task: dict[int, list[str]] = defaultdict(list)
    for r in sorted(valid, key=lambda r: (r.task_id, r.annotator)):
        by_task[r.task_id].append(r.choice)
    return failed, by_task


def summarize(tasks: Iterable[TaskFacts], ratings: Iterable[RatingFacts], *, seed: int, resamples: int,
              level: float) -> dict[str, Any]:
    task_map = {t.task_id: t for t in tasks}
    rating_list = [r for r in ratings if r.task_id in task_map]
    failed, by_task = valid_choices(task_map, rating_list)
    check_ratings = [r for r in rating_list if task_map[r.task_id].check]
    discarded = [r for r in rating_list if r.annotator in failed]
    counts = value_counts([by_task[t] for t in sorted(by_task)])
    out: dict[str, Any] = {
        "n_planned": sum(1 for t in task_map.values() if not t.check),
        "n_discarded": len(discarded),
        "annotators": len({r.annotator for r in rating_list}),
        "annotators_failed": failed,
        "attention_checks": {"tasks": sum(1 for t in task_map.values() if t.check), "ratings": len(check_ratings),
                             "passed": sum(r.choice == task_map[r.task_id].intended for r in check_ratings)},
        "alpha": alpha(counts),
        "alpha_ci": alpha_interval(counts, seed=seed, resamples=resamples, level=level),
        "level": level,
        **_block(task_map, by_task, seed, resamples, level),
    }
    for key, label in (("domain", "by_domain"), ("gap", "by_gap")):
        groups: dict[Any, dict[int, list[str]]] = defaultdict(dict)
        for t, choices in by_task.items():
            groups[getattr(task_map[t], key)][t] = choices
        rows = []
        for value in sorted(groups):
            sub = groups[value]
            rows.append({key: value, **_block(task_map, sub, seed, resamples, level),
                         "alpha": alpha(value_counts([sub[t] for t in sorted(sub)]))})
        out[label] = rows
    return out


def load(engine: Engine, study: HumanStudy) -> tuple[list[TaskFacts], list[RatingFacts], bool]:
    """The study's tasks and ratings, and whether its evidence clips were grounded by the sim."""
    with transaction(engine) as s:
        tasks = s.exec(select(HumanTask).where(HumanTask.study_id == study.id)).all()
        ids = [int(t.id or 0) for t in tasks]
        ratings = s.exec(select(HumanRating).where(col(HumanRating.task_id).in_(ids or [-1]))).all()
        calls = [t.evidence_call_id for t in tasks if t.evidence_call_id]
        providers = set(s.exec(select(ModelCall.provider).where(col(ModelCall.id).in_(calls or [-1]))).all())
    texts = pair_texts(engine, [t.pair_id for t in tasks])
    facts = [TaskFacts(int(t.id or 0), texts[t.pair_id].item_id, texts[t.pair_id].domain, texts[t.pair_id].gap,
                       t.intended_slot, t.attention_check, t.pair_id) for t in tasks]
    return facts, [RatingFacts(r.task_id, r.annotator, r.choice) for r in ratings], "sim" in providers
