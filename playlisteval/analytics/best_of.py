"""Best-of-k from pairwise verdicts: would the judge, shown a question's answers, pick the best one?

Why: a benchmark question holds k answers of graded quality (five, rated 5 … 1, the gold rated highest),
and it is judged as pairs. Pairwise accuracy says how often the judge orders two answers right; the use a
judge is put to (reranking candidates, best-of-n sampling) asks whether it puts the *best* answer first.

Rule: the judge picks the best for a question when the gold answer wins every pair it was in — every
verdict on a gold pair says gold is better, and none is a no-verdict (a no-verdict names no winner, so
the judge did not pick the gold). A question whose judged pairs lack some gold pairs is scored on the
gold pairs present (which is easier: fewer rivals to beat); how many questions had the gold paired with
every other answer is reported, with the score over those questions alone. A question with no gold pair
at all cannot be scored and is counted instead. The score is the share of scored questions, with a
clustered interval (each question its own cluster, or a label passed per question: its video or
playlist).

Chance: a judge that ranks the answers at random picks the gold with probability 1/(r + 1) when the gold
met r rivals — 1/5 = 20 % with all four — averaged over the scored questions. A judge that flips a coin
per pair does worse, 2^-(gold pairs) (1/16 with four pairs); both are given.

Rank agreement (Borda-style): per question each answer scores its wins over the judged pairs (a
no-verdict is a win for neither); Kendall's tau-b between those win counts and the true ratings, over the
answers present in the question's pairs, averaged over questions with a clustered interval. Tau
is undefined when every answer has the same number of wins (such questions are left out and counted).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping
from typing import Any, NamedTuple

import numpy as np

from playlisteval.analytics.intervals import LEVEL, RESAMPLES, Request, cluster_mean, cluster_sums, intervals_from_sums
from playlisteval.analytics.small_sample import RATE_METHOD


class PairVerdict(NamedTuple):
    question: Hashable
    better: Hashable  # the id of the higher-rated answer
    worse: Hashable  # the id of the lower-rated answer
    verdict: bool | int | None  # 1/True: the judge preferred `better`; 0/False: `worse`; None: no verdict


RULE = "gold wins every gold pair judged (a no-verdict loses); scored on the gold pairs present"


SMALL_TAU = 32  # up to this many values tau is counted in Python: numpy's per-call cost is most of a small one


def kendall_tau_b(x: Iterable[float], y: Iterable[float]) -> float | None:
    """Kendall's tau-b (ties in either ranking corrected); None when either ranking is all ties."""
    a, b = [float(v) for v in x], [float(v) for v in y]
    if len(a) != len(b):
        raise ValueError(f"tau of {len(a)} against {len(b)} values")
    if len(a) > SMALL_TAU:
        return _tau_arrays(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))
    # a question's five answers, 25,000 times in a report: the same integer sums as the array way below,
    # and the same correctly rounded square root and division, so the same float
    agree = untied_a = untied_b = 0
    for i in range(len(a)):
        for j in range(i + 1, len(a)):
            sa, sb = (a[i] > a[j]) - (a[i] < a[j]), (b[i] > b[j]) - (b[i] < b[j])
            agree += sa * sb
            untied_a += sa != 0
            untied_b += sb != 0
    if untied_a == 0 or untied_b == 0:
        return None
    return float(agree) / math.sqrt(float(untied_a) * float(untied_b))


def _tau_arrays(a: np.ndarray, b: np.ndarray) -> float | None:
    upper = np.triu(np.ones((len(a), len(a)), dtype=bool), 1)
    sa, sb = np.sign(a[:, None] - a[None, :])[upper], np.sign(b[:, None] - b[None, :])[upper]
    untied_a, untied_b = int(np.count_nonzero(sa)), int(np.count_nonzero(sb))
    if untied_a == 0 or untied_b == 0:
        return None
    return float(np.sum(sa * sb) / np.sqrt(float(untied_a) * float(untied_b)))


def _verdict(v: bool | int | None, q: Hashable) -> int | None:
    if v is None:
        return None
    if v in (0, 1):
        return int(v)
    raise ValueError(f"question {q!r}: verdict {v!r} is not 1 (better preferred), 0 or None")


def _interval(values: list[float], labels: list[Hashable], method: str, seed: int, resamples: int,
              level: float) -> dict[str, Any]:
    if not values:
        return _empty(method, level)
    iv = cluster_mean(values, labels, seed=seed, resamples=resamples, level=level, kind="rate")
    return {**iv.as_dict(), "method": f"{method}; {iv.method}"}


def _empty(method: str, level: float) -> dict[str, Any]:
    return {"estimate": None, "low": None, "high": None, "n": 0, "clusters": 0, "level": level, "method": method}


class _Share(NamedTuple):
    """A share (0/1 values per question) whose interval is computed later, with every other call's."""
    values: list[float]
    labels: list[Hashable]
    method: str


Call = tuple[Iterable[PairVerdict | tuple[Hashable, Hashable, Hashable, bool | int | None]],
             Mapping[Any, Mapping[Any, float]], Mapping[Any, Hashable] | None]


def best_of_many(calls: Iterable[Call], *, seed: int, resamples: int = RESAMPLES, level: float = LEVEL
                 ) -> list[dict[str, Any] | ValueError]:
    """``best_of_k(pairs, ratings, clusters=clusters, …)`` of each call, in order (a ValueError in its place
    where best_of_k would raise it), the shares' intervals of all calls computed in one batch
    (intervals_from_sums: the beta-binomial rates together, where one at a time cost ~80 ms each — a
    report's 26 judges spent 4 s here). The same numbers as best_of_k's one call at a time."""
    scored: list[dict[str, Any] | ValueError] = []
    for pairs, ratings, clusters in calls:
        try:
            scored.append(score(pairs, ratings, clusters, seed, resamples, level))
        except ValueError as exc:
            scored.append(exc)
    return with_intervals(scored, seed=seed, resamples=resamples, level=level)


def with_intervals(scored: list[dict[str, Any] | ValueError], *, seed: int, resamples: int, level: float
                   ) -> list[dict[str, Any] | ValueError]:
    """``score``'s results with their shares' intervals drawn, all in one batch."""
    pending = [(got, key) for got in scored if isinstance(got, dict) for key in ("best_of", "best_of_complete")
               if isinstance(got[key], _Share)]
    # 0/1 values: intervals_from_sums takes them as rates, as cluster_mean(kind="rate") does
    requests: list[Request] = [(*cluster_sums(got[key].values, got[key].labels), None) for got, key in pending]
    for (got, key), iv in zip(pending, intervals_from_sums(requests, seed=seed, resamples=resamples, level=level),
                              strict=True):
        got[key] = {**iv.as_dict(), "method": f"{got[key].method}; {iv.method}"}
    return scored


def best_of_k(pairs: Iterable[PairVerdict | tuple[Hashable, Hashable, Hashable, bool | int | None]],
              ratings: Mapping[Any, Mapping[Any, float]], *,
              clusters: Mapping[Any, Hashable] | None = None, seed: int, resamples: int = RESAMPLES,
              level: float = LEVEL) -> dict[str, Any]:
    """Best-of-k score and rank agreement of a judge's pairwise verdicts. ``ratings[question][answer]`` is
    each answer's true rating (the gold: the single highest); ``clusters[question]`` an optional label to
    resample by (default: each question its own cluster)."""
    [got] = best_of_many([(pairs, ratings, clusters)], seed=seed, resamples=resamples, level=level)
    if isinstance(got, ValueError):
        raise got
    return got


def score(pairs: Iterable[PairVerdict | tuple[Hashable, Hashable, Hashable, bool | int | None]],
          ratings: Mapping[Any, Mapping[Any, float]], clusters: Mapping[Any, Hashable] | None, seed: int,
          resamples: int, level: float) -> dict[str, Any]:
    """best_of_k's result with its two shares as _Share (intervals to compute: ``with_intervals``)."""
    by_question: dict[Hashable, list[tuple[Hashable, Hashable, int | None]]] = defaultdict(list)
    for q, better, worse, verdict in pairs:  # 10,000 pairs a judge in a report: no call per pair but the checks'
        if q not in ratings:
            raise ValueError(f"a pair of question {q!r}, which has no ratings")
        rated = ratings[q]
        if better not in rated or worse not in rated:
            answer = better if better not in rated else worse
            raise ValueError(f"question {q!r}: answer {answer!r} has no rating")
        if not rated[better] > rated[worse]:
            raise ValueError(f"question {q!r}: 'better' {better!r} is not rated above 'worse' {worse!r}")
        by_question[q].append((better, worse, None if verdict is None else int(verdict) if verdict in (0, 1)
                               else _verdict(verdict, q)))  # _verdict's rule, its call only to raise
    if clusters is not None and (missing := [q for q in ratings if q not in clusters]):
        raise ValueError(f"{len(missing)} questions have no cluster label (e.g. {missing[0]!r})")

    picked: list[tuple[float, Hashable, bool]] = []  # (picked the gold, cluster, gold met every rival)
    taus: list[tuple[float, Hashable]] = []
    random_ranking, coin_flips = [], []
    undefined = gold_no_verdict = 0
    for q in sorted(ratings, key=repr):  # canonical order (the bootstrap itself is order-free)
        rated, judged = ratings[q], by_question.get(q, [])
        top = max(rated.values())
        golds = [a for a, r in rated.items() if r == top]
        if len(golds) != 1:
            raise ValueError(f"question {q!r}: {len(golds)} answers share the top rating (one gold expected)")
        gold, label = golds[0], (q if clusters is None else clusters[q])
        gold_pairs = [(w, v) for b, w, v in judged if b == gold]
        if gold_pairs:
            rivals = {w for w, _ in gold_pairs}
            gold_no_verdict += sum(v is None for _, v in gold_pairs)
            picked.append((float(all(v == 1 for _, v in gold_pairs)), label, rivals == set(rated) - {gold}))
            random_ranking.append(1 / (len(rivals) + 1))
            coin_flips.append(0.5 ** len(gold_pairs))
        wins: dict[Hashable, int] = {a: 0 for b, w, _ in judged for a in (b, w)}
        for b, w, v in judged:
            if v is not None:
                wins[b if v == 1 else w] += 1
        if len(wins) >= 2:
            answers = list(wins)
            tau = kendall_tau_b([wins[a] for a in answers], [rated[a] for a in answers])
            if tau is None:
                undefined += 1
            else:
                taus.append((tau, label))
    if not picked:
        raise ValueError("no question has a judged pair with its gold answer: best-of-k cannot be scored")
    complete = [(v, c) for v, c, full in picked if full]
    return result(questions=len(ratings), scored=len(picked), complete=len(complete), gold_no_verdict=gold_no_verdict,
                  labelled=clusters is not None, best=([v for v, _, _ in picked], [c for _, c, _ in picked]),
                  best_complete=([v for v, _ in complete], [c for _, c in complete]), random_ranking=random_ranking,
                  coin_flips=coin_flips, taus=([t for t, _ in taus], [c for _, c in taus]), undefined=undefined,
                  seed=seed, resamples=resamples, level=level)


def result(*, questions: int, scored: int, complete: int, gold_no_verdict: int, labelled: bool,
           best: tuple[list[float], list[Hashable]], best_complete: tuple[list[float], list[Hashable]],
           random_ranking: list[float], coin_flips: list[float], taus: tuple[list[float], list[Hashable]],
           undefined: int, seed: int, resamples: int, level: float) -> dict[str, Any]:
    """The result's dict from the per-question values (in the questions' order) and their cluster labels:
    ``best``, ``best_complete`` (the 0/1 picks), ``taus``; the two shares as _Share (``with_intervals``)."""
    return {
        "method": f"best-of-k: {RULE}; {RATE_METHOD}, clustered by "
                  f"{'the given cluster labels' if labelled else 'question'}",
        "rule": RULE, "questions": questions, "questions_scored": scored,
        "questions_without_gold_pairs": questions - scored, "questions_with_all_gold_pairs": complete,
        "gold_pairs_without_verdict": gold_no_verdict, "resamples": resamples, "level": level, "seed": seed,
        "best_of": _Share(best[0], best[1], "share of scored questions whose gold won all its judged pairs"),
        "best_of_complete": _Share(best_complete[0], best_complete[1],
                                   "the same over questions whose gold met every other answer")
        if complete else _empty("the same over questions whose gold met every other answer", level),
        "chance": {"random_ranking": float(np.mean(random_ranking)), "coin_flip_pairs": float(np.mean(coin_flips)),
                   "method": "mean over scored questions of 1/(rivals+1) and of 2^-(gold pairs)"},
        "kendall_tau": {**_interval(taus[0], taus[1],
                                    "mean over questions of Kendall tau-b between wins and true ratings", seed,
                                    resamples, level),
                        "questions": len(taus[0]), "undefined": undefined},
    }
