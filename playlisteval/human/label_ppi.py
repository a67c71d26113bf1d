"""How often a benchmark's intended answer is right, from the human study and the judges together
(issue 21, deliverable 3): a prediction-powered (PPI++) interval beside the human-only one.

Why: the study rates ~150 pairs of a benchmark of hundreds; alone they give a wide interval for "how
often do people confirm the intended answer". A judge has a verdict on every benchmark pair — cheap but
biased labels. PPI++ (analytics/ppi.py) uses those verdicts on all pairs and corrects their bias with the
study's pairs, where both exist; with λ power-tuned (clipped to [0, 1]) its interval is never wider than
the human-only one on the same pairs (λ = 0 reproduces it), and narrower as far as the judge's verdicts
track what people said.

What is estimated, per pair: Y = 1 when the majority of the pair's valid ratings (attention checks and
failed annotators' ratings left out, as in the report) agrees with the intended answer, 0 when it
overturns it, 0.5 when the vote is tied (no decision either way). The prediction f is a judge's score on
the pair as everywhere else (1: it chose the intended answer, 0: the other, 0.5: no verdict, SPEC G4),
from that judge's main run at the configured evidence, full scope, sides as drawn. ``--ppi-judge
intended`` uses the pipeline's own label instead (f = 1 on every pair): constant, so it carries no
information and PPI falls back to exactly the human-only interval. Without a choice the best model
judge's main run is used (highest accuracy over the benchmark's pairs — chosen without the human
labels, so the choice does not bias the interval).

Pairs: the labelled ones are the study's rated pairs that the judge judged; the unlabelled ones are the
benchmark's other pairs the judge judged. Pairs without a prediction are counted and left out.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import select

from playlisteval.analytics import ppi
from playlisteval.analytics.rates import shown_name
from playlisteval.config import Settings
from playlisteval.human.errors import HumanStudyError
from playlisteval.human.results import RatingFacts, TaskFacts, valid_choices
from playlisteval.logs import get_logger
from playlisteval.store.engine import transaction
from playlisteval.store.tables import BenchmarkPair

log = get_logger(__name__)

INTENDED = "intended"
LABEL = ("per pair: 1 when the majority of its valid ratings agrees with the intended answer, 0 when it "
         "overturns it, 0.5 when tied")
TARGET = "share of the benchmark's pairs whose intended answer people confirm (majority of valid ratings)"
ASSUMPTION = ("the study's pairs stand for the benchmark's (they are a stratified draw by domain and gap, "
              "treated as uniform); pairs independent (no cluster adjustment)")


@dataclass(frozen=True)
class Predictions:
    """Which predictions PPI used and their value per pair."""

    source: str  # "judge" or "intended"
    judge: str | None
    run_id: int | None
    evidence: str
    chosen: str  # why these
    scores: dict[int, float]  # pair → prediction (1, 0, 0.5)

    def describe(self) -> dict[str, Any]:
        return {"source": self.source, "judge": self.judge, "shown_as": shown_name(self.judge) if self.judge else None,
                "run_id": self.run_id, "evidence": self.evidence, "chosen": self.chosen,
                "simulated": bool(self.judge and self.judge.split("/", 1)[0] == "sim")}


def majority_labels(tasks: list[TaskFacts], ratings: list[RatingFacts]) -> dict[int, float]:
    """pair → Y (1 agrees, 0 overturns, 0.5 tied) over the pair's valid ratings."""
    task_map = {t.task_id: t for t in tasks}
    _failed, by_task = valid_choices(task_map, [r for r in ratings if r.task_id in task_map])
    agree: dict[int, list[bool]] = defaultdict(list)
    for task_id, choices in by_task.items():
        task = task_map[task_id]
        agree[task.pair_id].extend(c == task.intended for c in choices)
    out: dict[int, float] = {}
    for pair, votes in agree.items():
        yes, no = sum(votes), len(votes) - sum(votes)
        out[pair] = 1.0 if yes > no else 0.0 if yes < no else 0.5
    return out


def benchmark_pairs(engine: Engine, benchmark_id: int) -> list[int]:
    with transaction(engine) as s:
        return sorted(int(p) for p in s.exec(select(BenchmarkPair.pair_id).where(
            BenchmarkPair.benchmark_id == benchmark_id)).all())


def _main_scores(settings: Settings, engine: Engine, benchmark_id: int) -> dict[str, tuple[int, dict[int, float]]]:
    """judge → (its main run at [eval] evidence, full scope, sides as drawn; pair → score)."""
    from playlisteval.analytics import Analytics

    evidence = settings.eval.evidence
    with Analytics(engine, settings) as an:
        runs = {str(r["judge"]): int(r["run_id"]) for r in an.rows(
            "SELECT judge, run_id FROM main_run WHERE benchmark_id = ? AND evidence = ? AND scope = 'domain' "
            "AND NOT swapped ORDER BY judge", [benchmark_id, evidence])}
        scores: dict[int, dict[int, float]] = defaultdict(dict)
        if runs:
            marks = ", ".join("?" for _ in runs)
            for r in an.rows(f"SELECT run_id, pair_id, score FROM judgment_facts WHERE run_id IN ({marks})",
                             list(runs.values())):
                scores[int(r["run_id"])][int(r["pair_id"])] = float(r["score"])
    return {judge: (run, dict(scores[run])) for judge, run in runs.items()}


def predictions(settings: Settings, engine: Engine, benchmark_id: int, population: list[int],
                judge: str | None) -> Predictions:
    """The predictions asked for (``judge``: a judge's name, "intended", or None for the best judge)."""
    evidence = settings.eval.evidence
    intended = Predictions("intended", None, None, evidence, "", {p: 1.0 for p in population})
    if judge == INTENDED:
        return replace(intended, chosen="--ppi-judge intended: the pipeline's own labels")
    mains = _main_scores(settings, engine, benchmark_id)
    if judge is not None:
        if judge not in mains:
            known = ", ".join(sorted(mains)) or "none"
            raise HumanStudyError(f"--ppi-judge {judge!r}: no main run of that judge on this benchmark at "
                                  f"{evidence} evidence (judges with one: {known}; or 'intended')")
        run, scores = mains[judge]
        return Predictions("judge", judge, run, evidence, "--ppi-judge", scores)
    models = {j: v for j, v in mains.items() if not j.startswith("shortcut/") and len(v[1]) >= 2}
    if not models:
        return replace(intended, chosen=f"no model judge has a main run at {evidence} evidence: the pipeline's "
                                        "own labels")
    best = min(models, key=lambda j: (-sum(models[j][1].values()) / len(models[j][1]), j))
    run, scores = models[best]
    return Predictions("judge", best, run, evidence, "the best model judge's main run (highest accuracy)", scores)


def ppi_block(labels: dict[int, float], preds: Predictions, population: list[int], level: float) -> dict[str, Any]:
    """The ``ppi`` key of `human report --json`: ppi_mean on the labelled and unlabelled pairs, with the
    human-only interval beside it (``classical``) and which pairs and predictions went in."""
    labelled = sorted(p for p in labels if p in preds.scores)
    unlabelled = sorted(p for p in population if p not in labels and p in preds.scores)
    pairs = {"benchmark": len(population), "labelled": len(labels), "labelled_used": len(labelled),
             "labelled_without_prediction": len(labels) - len(labelled), "unlabelled_used": len(unlabelled),
             "unlabelled_without_prediction": sum(p not in labels and p not in preds.scores for p in population)}
    head = {"target": TARGET, "label": LABEL, "assumption": ASSUMPTION, "predictions": preds.describe(),
            "pairs": pairs}
    try:
        got = ppi.ppi_mean([labels[p] for p in labelled], [preds.scores[p] for p in labelled],
                           [preds.scores[p] for p in unlabelled], level=level)
    except ValueError as exc:  # too few pairs: said, never a number
        log.info("human.ppi_unavailable", reason=str(exc))
        return {**head, "estimate": None, "low": None, "high": None, "method": "PPI++ mean", "note": str(exc)}
    classical = got["classical"]

    def width(d: dict[str, Any]) -> float | None:
        return None if d["low"] is None else d["high"] - d["low"]

    return {**head, **got, "width": width(got), "human_only_width": width(classical)}


def study_ppi(settings: Settings, engine: Engine, benchmark_id: int, tasks: list[TaskFacts],
              ratings: list[RatingFacts], judge: str | None = None) -> dict[str, Any]:
    """The PPI block of one study (``judge`` as in ``predictions``)."""
    population = benchmark_pairs(engine, benchmark_id)
    preds = predictions(settings, engine, benchmark_id, population, judge)
    return ppi_block(majority_labels(tasks, ratings), preds, population, settings.human.confidence)
