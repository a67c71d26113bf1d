"""Repeated sampling of one judge: how much its verdicts on a pair change when it is asked N times.

Why: a judge sampled at temperature > 0 (or a nondeterministic API) gives a different verdict on some
pairs from one call to the next, so a single run's accuracy is one draw. Three rates describe it, each a
share of pairs with a clustered interval (``intervals.cluster_mean``; clusters = the pairs'
questions, since pairs of one question share their difficulty):

* expected accuracy — per pair the share of its N samples that were correct, pooled over pairs: the
  accuracy one run would score on average. A no-verdict (None: refused, unparsable, failed) counts as
  wrong, as it would in a single run: the judge delivered no right answer.
* consensus accuracy — per pair the majority vote of its samples: correct when strictly more samples said
  correct than said wrong. No-verdicts abstain (they are no vote for either answer); a tie, including a
  pair where every sample abstained, counts as wrong: the vote named no answer.
* consistency — the share of pairs whose N verdicts all agree (a no-verdict is a verdict value of its own,
  so [1, 1, None] is inconsistent and [None, None] consistent). Pairs sampled only once show nothing about
  agreement and are left out of this rate (and counted).

Also the consensus gain: consensus minus expected accuracy, paired per pair (does voting help?).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any, NamedTuple

from playlisteval.analytics.intervals import LEVEL, RESAMPLES, cluster_difference, cluster_mean

Verdict = bool | int | None

EXPECTED = "mean over a pair's samples, no-verdicts counted as wrong, pooled over pairs"
CONSENSUS = "strict majority of the samples with a verdict; no-verdicts abstain; ties and all-abstained wrong"
CONSISTENCY = "share of pairs (sampled at least twice) whose verdicts all agree; no-verdict a value of its own"


def _checked(verdicts: Sequence[Verdict], i: int) -> list[int | None]:
    out: list[int | None] = []
    for v in verdicts:
        if v is None:
            out.append(None)
        elif v in (0, 1):  # also True/False
            out.append(int(v))
        else:
            raise ValueError(f"pair #{i}: verdict {v!r} is not 1 (correct), 0 (wrong) or None (no verdict)")
    if not out:
        raise ValueError(f"pair #{i} has no samples")
    return out


class PairScores(NamedTuple):
    expected: list[float]  # share of the pair's samples that were correct
    consensus: list[float]  # 1.0 when the majority vote was correct
    consistent: list[float | None]  # 1.0 when all samples agree; None for a pair sampled once


def pair_scores(verdicts: Sequence[Sequence[Verdict]]) -> PairScores:
    """Per pair: its expected accuracy, its consensus (1/0) and whether it is consistent (1/0/None)."""
    expected: list[float] = []
    consensus: list[float] = []
    consistent: list[float | None] = []
    for i, raw in enumerate(verdicts):
        v = _checked(raw, i)
        correct, wrong = v.count(1), v.count(0)
        expected.append(correct / len(v))
        consensus.append(float(correct > wrong))
        consistent.append(None if len(v) < 2 else float(len(set(v)) == 1))
    return PairScores(expected, consensus, consistent)


def _rate(values: Sequence[float | None], clusters: list[Hashable], method: str, seed: int, resamples: int,
          level: float) -> dict[str, Any]:
    kept = [(float(v), c) for v, c in zip(values, clusters, strict=True) if v is not None]
    if not kept:
        return {"estimate": None, "low": None, "high": None, "n": 0, "clusters": 0, "level": level,
                "method": method, "note": "no pair was sampled more than once"}
    iv = cluster_mean([v for v, _ in kept], [c for _, c in kept], seed=seed, resamples=resamples, level=level)
    return {**iv.as_dict(), "method": f"{method}; {iv.method}"}


def _gain(scores: PairScores, labels: list[Hashable], seed: int, resamples: int, level: float) -> dict[str, Any]:
    """Consensus minus expected accuracy, paired by pair: the CR2 t (expected accuracies are shares, not
    0/1), or MOVER where every pair was sampled once (both sides 0/1: ``intervals.cluster_difference``)."""
    iv = cluster_difference(scores.consensus, scores.expected, labels, seed=seed, resamples=resamples, level=level)
    return {**iv.as_dict(), "method": f"consensus minus expected accuracy, paired by pair; {iv.method}"}


def stability(verdicts: Sequence[Sequence[Verdict]], clusters: Sequence[Hashable], *, seed: int,
              resamples: int = RESAMPLES, level: float = LEVEL) -> dict[str, Any]:
    """Expected accuracy, consensus accuracy and consistency of repeated verdicts (``verdicts[i]`` = the
    N samples on pair i: 1 correct, 0 wrong, None no verdict), clustered by ``clusters[i]`` (its question)."""
    labels = list(clusters)
    if len(labels) != len(verdicts):
        raise ValueError(f"{len(verdicts)} pairs but {len(labels)} cluster labels")
    if not verdicts:
        raise ValueError("no pairs: no stability to measure")
    scores = pair_scores(verdicts)
    sizes = [len(v) for v in verdicts]
    no_verdicts = sum(v is None for raw in verdicts for v in raw)
    return {
        "method": "repeated sampling, intervals over the pairs' clusters (each figure's own method)",
        "pairs": len(verdicts), "clusters": len(set(labels)), "resamples": resamples, "level": level, "seed": seed,
        "samples": sum(sizes), "samples_per_pair": {"min": min(sizes), "max": max(sizes)},
        "no_verdicts": no_verdicts, "pairs_with_one_sample": sum(s < 2 for s in sizes),
        "expected_accuracy": _rate(scores.expected, labels, EXPECTED, seed, resamples, level),
        "consensus_accuracy": _rate(scores.consensus, labels, CONSENSUS, seed, resamples, level),
        "consistency": _rate(scores.consistent, labels, CONSISTENCY, seed, resamples, level),
        "consensus_gain": _gain(scores, labels, seed, resamples, level),
    }
