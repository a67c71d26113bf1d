"""The per-pair observations the trust figures (issue 21) are computed from, read once from the analytics views.

Why a module of its own: power, the judge-vs-judge table, stability, the blind run, position and best-of-5
all need the same thing — each run's score on each pair, with the pair's question, video and playlist (the
clustering units) and its ratings — and reading it once keeps the report to one scan of ``judgment_facts``.
Everything is keyed by content (run ids, pair ids and the units' names), never by row order, so the
numbers are the same on SQLite and PostgreSQL.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from playlisteval.analytics import judgment_matrix
from playlisteval.analytics.columns import AnalyticsError
from playlisteval.analytics.runner import Analytics
from playlisteval.eval import runkey

UNITS = ("question", "video", "playlist")


@dataclass(frozen=True)
class Run:
    run_id: int
    judge: str
    evidence: str
    scope: str
    swapped: bool
    modality: str
    settings: dict[str, Any] | None
    main: bool


class _RunScores(dict[int, dict[int, float]]):
    """``Observations.scores`` as ``build`` makes it: a run's dict made from its arrays the first time it is
    asked for — most runs are read only as arrays (``run_arrays``, ``common``), and a million judgments as
    dicts were ~0.15 s of the trust figures — and {} for a run with none, as the defaultdict gave."""

    def __init__(self, arrays: dict[Any, Any]) -> None:
        super().__init__()
        self._arrays = arrays

    def __missing__(self, run: int) -> dict[int, float]:
        got = self._arrays.get(("run", run))
        value: dict[int, float] = {} if got is None else dict(zip(got[0].tolist(), got[1].tolist(), strict=True))
        self[run] = value
        return value


@dataclass
class Observations:
    """What one benchmark's judgments say: ``scores[run][pair]`` (1, 0 or 0.5 for no verdict), each
    pair's units and ratings, and the runs."""

    runs: dict[int, Run] = field(default_factory=dict)
    scores: dict[int, dict[int, float]] = field(default_factory=lambda: defaultdict(dict))
    units: dict[int, dict[str, str]] = field(default_factory=dict)  # pair → unit → cluster name
    item_of: dict[int, int] = field(default_factory=dict)  # pair → question (item id)
    ratings: dict[int, tuple[int, int]] = field(default_factory=dict)  # pair → (better, worse rating)
    _arrays: dict[Any, Any] = field(default_factory=dict, repr=False)  # made on first use (run_arrays, codes)

    def labels(self, pairs: list[int], unit: str) -> list[str]:
        return [self.units[p][unit] for p in pairs]

    def second(self, pairs: list[int] | np.ndarray, unit: str) -> list[str] | None:
        """Each pair's second unit (its second segment's video or playlist: a pair belongs to both, issue
        40), for dyadic intervals beside ``labels``; None for questions (one unit per pair)."""
        return None if unit == "question" else [self.units[int(p)][f"{unit}_b"] for p in pairs]

    def run_arrays(self, run: int) -> tuple[np.ndarray, np.ndarray]:
        """The run's judged pairs (ascending ids) and its scores on them, as arrays: the judge-vs-judge
        table intersects hundreds of such runs, which as dicts and lists was most of its time."""
        key = ("run", run)
        if key not in self._arrays:
            scores = self.scores[run]
            pairs = np.array(sorted(scores), dtype=np.int64)
            self._arrays[key] = (pairs, np.array([scores[int(p)] for p in pairs], dtype=np.float64))
        got: tuple[np.ndarray, np.ndarray] = self._arrays[key]
        return got

    def codes(self, pairs: list[int] | np.ndarray, unit: str) -> np.ndarray:
        """``labels`` as integer codes (one per cluster of ``unit``): the same partition, which the
        statistics number faster than strings (intervals.cluster_codes)."""
        key = ("codes", unit)
        if key not in self._arrays:
            every = np.array(sorted(self.units), dtype=np.int64)
            names: dict[str, int] = {}
            self._arrays[key] = (every, np.fromiter((names.setdefault(self.units[int(p)][unit], len(names))
                                                     for p in every), dtype=np.int64, count=len(every)))
        every, code = self._arrays[key]
        wanted = np.asarray(pairs, dtype=np.int64)
        at = np.minimum(np.searchsorted(every, wanted), max(len(every) - 1, 0))
        if len(wanted) and (not len(every) or np.any(every[at] != wanted)):  # as labels() would: no silent guess
            raise KeyError(f"pair {int(wanted[every[at] != wanted][0]) if len(every) else int(wanted[0])} has no units")
        return np.asarray(code[at], dtype=np.int64)

    def common(self, run_a: int, run_b: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The pairs both runs judged (ascending ids) and each run's scores on them: the judge-vs-judge
        table and the kappas ask it of every pair of judges, most of whom judged the very same pairs."""
        (pa, sa), (pb, sb) = self.run_arrays(run_a), self.run_arrays(run_b)
        if len(pa) == len(pb) and np.array_equal(pa, pb):  # nothing to intersect
            return pa, sa, sb
        pairs, ia, ib = np.intersect1d(pa, pb, assume_unique=True, return_indices=True)
        return pairs, sa[ia], sb[ib]

    def cluster_codes(self, pairs: np.ndarray, unit: str) -> np.ndarray:
        """``codes`` numbered as intervals.cluster_codes numbers them (0, 1, … in order of first appearance),
        kept per set of pairs: the many comparisons over the same pairs number them once."""
        from playlisteval.analytics.intervals import cluster_codes

        key = ("cluster_codes", unit, np.asarray(pairs, dtype=np.int64).tobytes())
        if key not in self._arrays:
            self._arrays[key] = cluster_codes(self.codes(pairs, unit))
        got: np.ndarray = self._arrays[key]
        return got

    def main_runs(self, evidence: str) -> dict[str, int]:
        """judge → its main run at ``evidence``, full-domain scope, sides as drawn (the leaderboard's)."""
        return {r.judge: r.run_id for r in sorted(self.runs.values(), key=lambda r: r.run_id)
                if r.main and r.evidence == evidence and r.scope == "domain" and not r.swapped}


@dataclass(frozen=True)
class Read:
    """What the observations are made from, as read from the analytics file: the judgment matrix, the
    runs' rows and the pairs' facts (``build`` makes the observations without the file: in a forked
    child, forked.py)."""

    matrix: judgment_matrix.Matrix
    runs: list[dict[str, Any]]
    facts: dict[str, Any]


def read(an: Analytics, bench: dict[str, Any] | None, unit: str = "question") -> Read:
    """The benchmark's judgments (every benchmark's when none is chosen) and their facts, read (``unit``:
    the report's bootstrap unit, under which the judgment matrix is shared)."""
    where, params = ("r.benchmark_id = ?", [bench["id"]]) if bench else ("true", [])
    # the scores from the judgment matrix the rate sections read too (judgment_matrix.py: one read of a
    # million judgments per report), which also says which runs are main ones
    m = judgment_matrix.of(an, bench, unit)
    runs = an.rows(f"SELECT r.id, r.judge, r.evidence, r.scope, r.swapped, r.modality, r.settings "
                   f"FROM judge_run AS r WHERE {where}", params)
    facts = an.arrays("SELECT p.pair_id, p.item_id, p.better_rating, p.worse_rating, c.question, c.video, "
                      "c.playlist, c.video_b, c.playlist_b FROM pair_facts AS p "
                      "JOIN question_cluster AS c ON c.item_id = p.item_id ORDER BY p.pair_id")
    return Read(m, runs, facts)


def load(an: Analytics, bench: dict[str, Any] | None, unit: str = "question") -> Observations:
    """Every judgment of the benchmark (all benchmarks when none is chosen) with its pair's facts."""
    return build(read(an, bench, unit))


def build(got: Read) -> Observations:
    """The observations of what ``read`` read."""
    m, obs = got.matrix, Observations()
    obs.scores = _RunScores(obs._arrays)
    main = {run.run_id for run in m.runs if run.main}
    for r in got.runs:
        run_id = int(r["id"])
        obs.runs[run_id] = Run(run_id, str(r["judge"]), str(r["evidence"]), str(r["scope"]), bool(r["swapped"]),
                               str(r["modality"] or ""), runkey.parse_settings(r["settings"]), run_id in main)
    # each run's judged pairs ascending, as arrays
    present = ~np.isnan(m.score)
    for run in m.runs:
        row = m.row[run.run_id]
        at_pairs = np.flatnonzero(present[row])
        if len(at_pairs):  # (as dicts when asked for: _RunScores)
            obs._arrays[("run", run.run_id)] = (m.pairs[at_pairs], m.score[row, at_pairs])
    # each pair's facts in the order of its first judgment by (run, pair)
    first_run = np.argmax(present, axis=0) if len(m.runs) else np.zeros(len(m.pairs), dtype=np.int64)
    judged = m.pairs[np.lexsort((m.pairs, first_run))]
    facts = got.facts
    fact_ids = np.asarray(facts["pair_id"], dtype=np.int64)
    at = np.minimum(np.searchsorted(fact_ids, judged), max(len(fact_ids) - 1, 0))
    if len(judged) and (not len(fact_ids) or np.any(fact_ids[at] != judged)):  # the join above: never
        raise AnalyticsError("a judged pair without its facts")
    items = np.asarray(facts["item_id"])[at].tolist()
    better, worse = np.asarray(facts["better_rating"])[at].tolist(), np.asarray(facts["worse_rating"])[at].tolist()
    columns = (*UNITS, "video_b", "playlist_b")
    names = {u: np.asarray(facts[u])[at].tolist() for u in columns}
    for i, pair in enumerate(judged.tolist()):
        obs.units[pair] = {u: str(names[u][i]) for u in columns}
        obs.item_of[pair] = int(items[i])
        obs.ratings[pair] = (int(better[i]), int(worse[i]))
    return obs


def read_ratings(an: Analytics) -> dict[str, Any]:
    """Each pair's question and the ratings of its answer set, as read (``ratings_of`` keeps the judged)."""
    return an.arrays("SELECT DISTINCT p.pair_id, p.item_id, a.rating FROM pair_facts AS p "
                     "JOIN answer AS a ON a.set_id = p.set_id")


def ratings_of(got: dict[str, Any], pairs: set[int]) -> dict[int, dict[int, float]]:
    """question → every answer's rating in the answer set its benchmark pairs (of ``pairs``) come from, of what
    ``read_ratings`` read (answers named by their rating: a set holds one answer per rating)."""
    # as arrays, each (question, rating) once: the 50k rows at 1M judgments as dicts were ~0.05 s of the section
    judged = np.fromiter(pairs, dtype=np.int64, count=len(pairs))
    keep = np.isin(np.asarray(got["pair_id"], dtype=np.int64), judged)
    wanted = np.column_stack([np.asarray(got["item_id"], dtype=np.int64)[keep],
                              np.asarray(got["rating"], dtype=np.int64)[keep]])
    out: dict[int, dict[int, float]] = defaultdict(dict)
    for item, rating in np.unique(wanted, axis=0).tolist() if len(wanted) else []:
        out[item][rating] = float(rating)
    return dict(out)


def segment_positions(an: Analytics) -> dict[int, dict[str, float]]:
    """question → where its two cited segments sit in their playlist: ``position`` (the mean of both
    segments' ranks among the playlist's segments, 0 first … 1 last) and ``videos_apart``."""
    rows = an.rows(
        "WITH seg AS (SELECT g.id, v.playlist_id, v.position AS vpos, "
        "rank() OVER (PARTITION BY v.playlist_id, g.embedder ORDER BY v.position, g.start, g.idx) - 1 AS r, "
        "count(*) OVER (PARTITION BY v.playlist_id, g.embedder) AS m FROM segment AS g "
        "JOIN video AS v ON v.id = g.video_id) "
        "SELECT i.id AS item_id, s1.r AS r1, s2.r AS r2, s1.m AS m, s1.vpos AS v1, s2.vpos AS v2 FROM item AS i "
        "JOIN seed AS s ON s.id = i.seed_id JOIN seg AS s1 ON s1.id = s.segment1_id "
        "JOIN seg AS s2 ON s2.id = s.segment2_id")
    out: dict[int, dict[str, float]] = {}
    for r in rows:
        m = int(r["m"])
        position = 0.5 if m <= 1 else (float(r["r1"]) + float(r["r2"])) / 2 / (m - 1)
        out[int(r["item_id"])] = {"position": position, "videos_apart": abs(float(r["v1"]) - float(r["v2"]))}
    return out
