"""Best-of-k (analytics/best_of.py) of many judge runs over one set of rated pairs, as arrays.

Why: a report scores best-of-5 for every judge's main run — 26 runs of 10,000 pairs at 1M judgments —
and best_of's rule, written per question in Python, cost ~0.6 CPU-s of the report's critical path. Here
each run's pairs are numbered once (question, better, worse as codes) and every per-question count is a
bincount. The numbers are best_of's, bit for bit: the same 0/1 values and Kendall taus in the same order
(questions by ``repr``, as best_of sorts them), the same integer sums behind each tau with the same
correctly rounded square root and division, and the shares' intervals drawn by best_of's own batch. A run
whose ratings fail one of best_of's checks is scored by best_of itself, which raises its usual error.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from playlisteval.analytics import best_of

Run = tuple[NDArray[np.int64], NDArray[np.float64]]  # a run's pair ids (ascending) and their scores (1, 0, 0.5)


class _Rated:
    """The rated pairs and questions, numbered: questions in ``repr`` order, each question's answers in a
    row of ``width`` slots (present or not), each pair's better and worse answer as slots."""

    def __init__(self, pairs: Mapping[int, tuple[Hashable, Hashable, Hashable]],
                 ratings: Mapping[Any, Mapping[Any, float]]) -> None:
        self.questions = sorted({q for q, _, _ in pairs.values()}, key=repr)
        code = {q: i for i, q in enumerate(self.questions)}
        answers = [list(ratings[q]) for q in self.questions]
        self.width = max((len(a) for a in answers), default=1)
        slot = [{a: j for j, a in enumerate(row)} for row in answers]
        self.rating = np.full((len(self.questions), self.width), np.nan)
        self.answers = np.zeros(len(self.questions), dtype=np.int64)
        self.gold = np.full(len(self.questions), -1, dtype=np.int64)  # the gold's slot; -1: not one gold
        for i, q in enumerate(self.questions):
            row = [float(ratings[q][a]) for a in answers[i]]
            self.rating[i, :len(row)] = row
            self.answers[i] = len(row)
            top = [j for j, r in enumerate(row) if r == max(row)]
            self.gold[i] = top[0] if len(top) == 1 else -1
        self.ids = np.array(sorted(pairs), dtype=np.int64)
        self.question = np.empty(len(self.ids), dtype=np.int64)
        self.better = np.empty(len(self.ids), dtype=np.int64)
        self.worse = np.empty(len(self.ids), dtype=np.int64)
        self.valid = np.ones(len(self.ids), dtype=bool)  # best_of's checks of the pair pass
        for k, p in enumerate(self.ids.tolist()):
            q, b, w = pairs[p]
            i = code[q]
            self.question[k] = i
            self.better[k], self.worse[k] = slot[i].get(b, -1), slot[i].get(w, -1)
            self.valid[k] = (self.better[k] >= 0 and self.worse[k] >= 0
                             and float(ratings[q][b]) > float(ratings[q][w]))
        self.question_ok = self.gold >= 0


def best_of_runs(runs: Sequence[Run], pairs: Mapping[int, tuple[Hashable, Hashable, Hashable]],
                 ratings: Mapping[Any, Mapping[Any, float]], clusters: Mapping[Any, Hashable], *, seed: int,
                 resamples: int = best_of.RESAMPLES, level: float = best_of.LEVEL
                 ) -> list[dict[str, Any] | ValueError]:
    """``best_of.best_of_many`` of each run: its pairs that are in ``pairs`` (pair → question, better,
    worse), each question's ``ratings`` and cluster label, a 0.5 score as no verdict — the same results."""
    rated = _Rated(pairs, ratings)
    scored: list[dict[str, Any] | ValueError] = []
    for ids, scores in runs:
        at = np.searchsorted(rated.ids, ids)
        inside = at < len(rated.ids)
        inside[inside] = rated.ids[at[inside]] == ids[inside]
        k, s = at[inside], scores[inside]
        if not (bool(np.all(rated.valid[k])) and bool(np.all(rated.question_ok[rated.question[k]]))):
            scored.append(_by_best_of(ids, scores, pairs, ratings, clusters, seed, resamples, level))
            continue
        try:
            scored.append(_score(rated, k, s, clusters, seed, resamples, level))
        except ValueError as exc:
            scored.append(exc)
    return best_of.with_intervals(scored, seed=seed, resamples=resamples, level=level)


def _by_best_of(ids: NDArray[np.int64], scores: NDArray[np.float64],
                pairs: Mapping[int, tuple[Hashable, Hashable, Hashable]], ratings: Mapping[Any, Mapping[Any, float]],
                clusters: Mapping[Any, Hashable], seed: int, resamples: int, level: float
                ) -> dict[str, Any] | ValueError:
    """The run scored by best_of itself (its checks failed here: best_of says which, in its words)."""
    judged = [(*pairs[p], None if v == 0.5 else int(v == 1.0)) for p, v in zip(ids.tolist(), scores.tolist(),
                                                                            strict=True) if p in pairs]
    questions = {q for q, *_ in judged}
    try:
        return best_of.score(judged, {q: ratings[q] for q in questions}, {q: clusters[q] for q in questions},
                             seed, resamples, level)
    except ValueError as exc:
        return exc


def _score(rated: _Rated, k: NDArray[np.int64], scores: NDArray[np.float64], clusters: Mapping[Any, Hashable],
           seed: int, resamples: int, level: float) -> dict[str, Any]:
    """best_of.score of one run's judged pairs ``k`` (indices into ``rated``) with their ``scores``."""
    n_q, width = len(rated.questions), rated.width
    q, b, w = rated.question[k], rated.better[k], rated.worse[k]
    verdict = np.where(scores == 0.5, -1, (scores == 1.0).astype(np.int64))  # -1: no verdict
    present_q = np.unique(q)  # the run's questions, in repr order (codes follow it)
    gold = rated.gold[q] == b
    gold_pairs = np.bincount(q[gold], minlength=n_q)[present_q]
    gold_won = np.bincount(q[gold & (verdict == 1)], minlength=n_q)[present_q]
    no_verdict = int(np.count_nonzero(gold & (verdict == -1)))
    rival = np.unique(q[gold] * width + w[gold])  # each gold pair's distinct rival
    rivals = np.bincount(rival // width, minlength=n_q)[present_q]
    full = rivals == rated.answers[present_q] - 1
    scored = gold_pairs > 0
    if not bool(np.any(scored)):
        raise ValueError("no question has a judged pair with its gold answer: best-of-k cannot be scored")
    labels = [clusters[rated.questions[i]] for i in present_q.tolist()]
    taus, defined = _taus(rated, q, b, w, verdict, present_q)
    picked = (gold_won == gold_pairs).astype(np.float64)
    picked_labels = [c for c, keep in zip(labels, scored.tolist(), strict=True) if keep]
    complete = scored & full
    out = best_of.result(
        questions=len(present_q), scored=int(np.count_nonzero(scored)), complete=int(np.count_nonzero(complete)),
        gold_no_verdict=no_verdict, labelled=clusters is not None,
        best=(picked[scored].tolist(), picked_labels),
        best_complete=(picked[complete].tolist(), [c for c, keep in zip(labels, complete.tolist(), strict=True)
                                                   if keep]),
        random_ranking=(1 / (rivals[scored] + 1)).tolist(), coin_flips=(0.5 ** gold_pairs[scored]).tolist(),
        taus=(taus[defined].tolist(), [c for c, keep in zip(labels, defined.tolist(), strict=True) if keep]),
        undefined=int(np.count_nonzero(~defined)), seed=seed, resamples=resamples, level=level)
    return out


def _taus(rated: _Rated, q: NDArray[np.int64], b: NDArray[np.int64], w: NDArray[np.int64],
          verdict: NDArray[np.int64], present_q: NDArray[np.int64]) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """Per question of the run: Kendall's tau-b between its answers' wins and their ratings, over the answers
    in its judged pairs, and whether it is defined (best_of.kendall_tau_b: the same integer counts)."""
    n_q, width = len(rated.questions), rated.width
    cells = n_q * width
    present = (np.bincount(q * width + b, minlength=cells) + np.bincount(q * width + w, minlength=cells)) > 0
    decided = verdict >= 0
    winner = np.where(verdict == 1, b, w)[decided]
    wins = np.bincount(q[decided] * width + winner, minlength=cells).astype(np.float64)
    on = present.reshape(n_q, width)[present_q]
    x, y = wins.reshape(n_q, width)[present_q], rated.rating[present_q]
    both = on[:, :, None] & on[:, None, :] & np.triu(np.ones((width, width), dtype=bool), 1)[None]
    sx = np.where(both, np.sign(x[:, :, None] - x[:, None, :]), 0.0).astype(np.int64)
    sy = np.where(both, np.sign(y[:, :, None] - y[:, None, :]), 0.0).astype(np.int64)
    agree = (sx * sy).sum(axis=(1, 2))
    untied_x, untied_y = np.count_nonzero(sx, axis=(1, 2)), np.count_nonzero(sy, axis=(1, 2))
    defined = (untied_x > 0) & (untied_y > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = agree.astype(np.float64) / np.sqrt(untied_x.astype(np.float64) * untied_y.astype(np.float64))
    return tau, defined
