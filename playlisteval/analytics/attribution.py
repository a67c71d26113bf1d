"""Failure attribution (issue 20 deliverable 4; paper Sec. 4.5, Figs 9–12): why a judge got a pair wrong.

Every judgment that is not a win — a wrong verdict (score 0) or no verdict (a reply without one, a
refusal, a reward model's tie) — is put in exactly one category, from stored records only:

- ``no_verdict``: the judge gave no verdict, whatever it was shown;
- ``no_evidence``: the judge was served no evidence at all (mode "none"), none is on record (a run
  imported with `eval import`), or the judge is a shortcut judge (eval/shortcuts.py), which looks at no
  frame whatever it was handed — shortcut/transcript-overlap counts words of the served transcripts, so
  its record names chunks, but its loss is the shortcut's, not retrieval's: retrieval cannot be blamed for
  what no model was asked to use (issue 41: shortcut/random was "100 % cited evidence not retrieved");
- ``not_retrieved``: for some hop, none of the chunks the gold answer cites was among the chunks served;
- ``not_sampled``: every hop's cited chunks were served, but for some hop no served frame lies inside the
  gold answer's cited ranges (the chunk was there, the moment was not);
- ``served_wrong``: every hop's cited moment was served as a frame, and the verdict was still wrong;
- ``uncited``: the gold answer holds no readable citation for a hop (C1 rejects such answers: this
  should stay 0; it is its own category so the counts still add up).

The gold answer's citations (``qa.answer``, SPEC B4) are on each clip's own clock: clip 1 is the seed's
first segment, clip 2 its second, so a cited range is ``segment.start + [a, b]`` seconds of that
segment's video. What was served is the judgment's record (``judgment.evidence``): the chunk ids and
the frames as (video id, seconds). The counts add up to the run's wrong + no-verdict judgments; each
share carries its clustered interval over questions (analytics/intervals.py).
"""

from __future__ import annotations

import json
from bisect import bisect_left, bisect_right
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import text
from sqlalchemy.engine import Engine

from playlisteval.analytics import attribution_losses
from playlisteval.analytics.attribution_losses import Losses
from playlisteval.analytics.intervals import Interval, Request, cluster_sums, intervals_from_sums
from playlisteval.eval.shortcuts import is_shortcut
from playlisteval.prompts.citations import parse_citations
from playlisteval.store.engine import read_core

if TYPE_CHECKING:
    from playlisteval.analytics.runner import Analytics

NO_VERDICT, NOT_RETRIEVED, NOT_SAMPLED, SERVED_WRONG, UNCITED, NO_EVIDENCE = (
    "no_verdict", "not_retrieved", "not_sampled", "served_wrong", "uncited", "no_evidence")
CATEGORIES = (NOT_RETRIEVED, NOT_SAMPLED, SERVED_WRONG, NO_VERDICT, UNCITED, NO_EVIDENCE)
LABELS = {NOT_RETRIEVED: "cited evidence not retrieved", NOT_SAMPLED: "retrieved but not sampled",
          SERVED_WRONG: "served but still wrong", NO_VERDICT: "no verdict", UNCITED: "gold answer cites nothing",
          NO_EVIDENCE: "no evidence judged (shortcut judge, none served or none on record)"}
EXAMPLES = 3


@dataclass(frozen=True)
class Hop:
    video_id: int
    ranges: list[tuple[float, float]]  # absolute seconds in the video
    chunks: set[int]  # chunk ids the ranges touch


@dataclass
class Attribution:
    run_id: int
    judge: str
    evidence: str
    scope: str
    judged: int
    counts: dict[str, int] = field(default_factory=dict)
    shares: dict[str, Interval | None] = field(default_factory=dict)
    examples: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    @property
    def failed(self) -> int:
        return sum(self.counts.values())

    def as_json(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "judge": self.judge, "evidence": self.evidence, "scope": self.scope,
                "judged": self.judged, "wrong_or_no_verdict": self.failed, "counts": self.counts,
                "shares_ci": {c: v.as_dict() if v else None for c, v in self.shares.items()},
                "labels": {c: LABELS[c] for c in CATEGORIES}, "examples": self.examples}


# The store is read in plain SQL on a Core connection, not through its SQLModel classes and a Session:
# importing those (store.tables, the ORM) cost a cold report ~0.3 CPU-s, spent only here and in
# attribution_losses.py (issue 43). ``s`` below is such a connection (store.engine.read_core), or a Session.
def _loss_filter(run_id: int) -> str:
    """The run's judgments that are not a win, as a WHERE clause (the same test ``attribute`` applies)."""
    return f"j.run_id = {int(run_id)} AND j.score < 1.0"


def _touched(chunks: list[tuple[float, float, int]], ends: float, ranges: list[tuple[float, float]]) -> set[int]:
    """The ids of a video's chunks (sorted by start; ``ends`` the longest chunk) that overlap ``ranges``:
    a bisect per range, so 100k items over long videos are not items × chunks comparisons."""
    starts = [a for a, _, _ in chunks]
    out: set[int] = set()
    for lo, hi in ranges:
        for a, b, cid in chunks[bisect_right(starts, lo - ends):bisect_left(starts, hi)]:
            if a < hi and lo < b:
                out.add(cid)
    return out


class HopSource:
    """The gold answers, seeds, segments and chunks that cited hops are computed from, read once and then
    asked per (item, answer set). A report reads it for every pair's item and shares it across all its
    runs: read per run, the same rows were most of the attribution section's time (issue 26)."""

    def __init__(self, s: Any, items: str, sets: str) -> None:
        """``items`` / ``sets``: SQL subqueries of the item and answer-set ids to read for. They are joins and
        subqueries, never lists of ids: at 100k items an ``IN (?, ?, …)`` is over SQLite's variable limit."""
        def fetch(sql: str) -> list[Any]:
            return list(s.execute(text(sql)).all())

        self.answers = {int(d): str(a or "") for d, a in fetch(
            f"SELECT d.id, q.answer FROM distractor_set AS d JOIN qa AS q ON q.id = d.qa_id WHERE d.id IN ({sets})")}
        self.seeds = {int(i): (int(a), int(b)) for i, a, b in fetch(
            "SELECT i.id, e.segment1_id, e.segment2_id FROM item AS i JOIN seed AS e ON e.id = i.seed_id "
            f"WHERE i.id IN ({items})")}
        seed_of = f"SELECT seed_id FROM item WHERE id IN ({items})"
        wanted = (f"(id IN (SELECT segment1_id FROM seed WHERE id IN ({seed_of})) "
                  f"OR id IN (SELECT segment2_id FROM seed WHERE id IN ({seed_of})))")
        self.segments = {int(g): (int(v), float(a)) for g, v, a in fetch(
            f"SELECT id, video_id, start FROM segment WHERE {wanted}")}
        by_video: dict[int, list[tuple[float, float, int]]] = defaultdict(list)
        for cid, vid, a, b in fetch('SELECT id, video_id, start, "end" FROM chunk '
                                   f"WHERE video_id IN (SELECT video_id FROM segment WHERE {wanted})"):
            by_video[int(vid)].append((float(a), float(b), int(cid)))
        self.longest = {v: max(b - a for a, b, _ in rows) for v, rows in by_video.items()}
        for rows in by_video.values():
            rows.sort()
        self.by_video = by_video
        self._made: dict[tuple[int, int], tuple[str, list[Hop | None]]] = {}

    @classmethod
    def for_run(cls, s: Any, run_id: int) -> HopSource:
        """Only what the run's losses need (one run: `eval attribute RUN`)."""
        lost = f"SELECT p.{{}} FROM pair AS p JOIN judgment AS j ON j.pair_id = p.id WHERE {_loss_filter(run_id)}"
        return cls(s, lost.format("item_id"), lost.format("set_id"))

    @classmethod
    def for_every_pair(cls, s: Any) -> HopSource:
        """What any run's losses can need: every item with a pair, every answer set a pair is drawn from."""
        return cls(s, "SELECT item_id FROM pair", "SELECT set_id FROM pair")

    def hops(self, item_id: int, set_id: int) -> tuple[str, list[Hop | None]]:
        """(gold answer, [hop 1, hop 2]) of a question; a hop is None when the gold answer cites nothing
        in it."""
        key = (item_id, set_id)
        if key not in self._made:
            answer = self.answers.get(set_id, "")
            cited = parse_citations(answer).citations
            hops: list[Hop | None] = []
            for clip, segment_id in zip((1, 2), self.seeds.get(item_id, (0, 0)), strict=True):
                segment = self.segments.get(segment_id)
                ranges = [(segment[1] + c.start, segment[1] + c.end) for c in cited if c.clip == clip] \
                    if segment else []
                if segment is None or not ranges:
                    hops.append(None)
                    continue
                video = segment[0]
                hops.append(Hop(video, ranges, _touched(self.by_video.get(video, []), self.longest.get(video, 0.0),
                                                        ranges)))
            self._made[key] = (answer, hops)
        return self._made[key]


def _hops(source: HopSource, losses: Losses) -> dict[int, tuple[str, list[Hop | None]]]:
    """item → (gold answer, [hop 1, hop 2]), from the answer set of the item's first loss."""
    out: dict[int, tuple[str, list[Hop | None]]] = {}
    _, first = np.unique(losses.item, return_index=True)
    for i in first.tolist():
        item = int(losses.item[i])
        out[item] = source.hops(item, losses.set_id[i])
    return out


def category_of(outcome: str, score: float, hops: list[Hop | None], record: dict[str, Any],
                shortcut: bool = False) -> str:
    """The one category of a judgment that is not a win (see the module docstring for the order);
    ``shortcut``: the run's judge is a shortcut judge."""
    if outcome != "verdict" or score == 0.5:
        return NO_VERDICT
    if shortcut or ("chunks" not in record and "frames" not in record):  # nothing a model used: no one to blame
        return NO_EVIDENCE
    if any(h is None for h in hops):
        return UNCITED
    served = {int(c) for c in record.get("chunks") or []}
    frames = [(int(v), float(t)) for v, t in record.get("frames") or []]
    present = [h for h in hops if h is not None]
    if any(not (h.chunks & served) for h in present):
        return NOT_RETRIEVED
    if any(not any(v == h.video_id and any(lo <= t <= hi for lo, hi in h.ranges) for v, t in frames)
           for h in present):
        return NOT_SAMPLED
    return SERVED_WRONG


def _record(raw: Any) -> Any:
    """A judgment's evidence record from its column as read: text (SQLite) decoded here, a value the driver
    already decoded (psycopg's JSON) as it is; None for SQL NULL."""
    return json.loads(raw) if isinstance(raw, str | bytes) else raw


def attribute(engine: Engine, run_id: int, *, seed: int, source: HopSource | None = None) -> Attribution:
    """Classify every wrong or no-verdict judgment of run ``run_id``; ``source``: hops read for many runs
    (``HopSource.for_every_pair``), else read for this run's losses."""
    return attribute_runs(engine, [run_id], seed=seed, source=source)[0]


def attribute_runs(engine: Engine, run_ids: Sequence[int], *, seed: int, source: HopSource | None = None,
                   an: Analytics | None = None) -> list[Attribution]:
    """``attribute`` of each run, in order, from one read of the store (the report's every main run); with
    ``an`` (the report) the judgments are the analytics file's copy, the evidence records read from the
    store only where needed (attribution_losses.py)."""
    with read_core(engine) as s:  # reads only: no write lock on the store while the losses are read
        if an is None:
            runs = {int(i or 0): (str(j), str(e), str(sc)) for i, j, e, sc in s.execute(text(
                "SELECT id, judge, evidence, scope FROM judge_run WHERE id IN "
                f"({', '.join(str(int(r)) for r in run_ids) or 'NULL'})")).all()}
        else:
            runs = {int(r["id"]): (str(r["judge"]), str(r["evidence"]), str(r["scope"])) for r in an.rows(
                "SELECT id, judge, evidence, scope FROM judge_run WHERE id IN "
                f"({', '.join(str(int(r)) for r in run_ids) or 'NULL'})")}
        if missing := [r for r in run_ids if r not in runs]:
            raise LookupError(f"no judge run {missing[0]} (see `playlisteval eval runs`)")
        if an is None:
            judged = {int(r): int(n) for r, n in s.execute(text(
                "SELECT run_id, count(*) FROM judgment WHERE run_id IN "
                f"({', '.join(str(int(r)) for r in run_ids) or 'NULL'}) GROUP BY run_id")).all()}
            # columns, not ORM objects: building 400k Judgment and Pair instances was most of the time
            losses = attribution_losses.from_store(s, run_ids)
        else:
            judged = {int(r["run_id"]): int(r["n"]) for r in an.rows(
                "SELECT run_id, count(*) AS n FROM judgment WHERE run_id IN "
                f"({', '.join(str(int(r)) for r in run_ids)}) GROUP BY run_id")}
            losses = attribution_losses.from_analytics(an, engine, run_ids)
        if source is None:  # one run (`eval attribute RUN`): only what its losses need
            source = HopSource.for_run(s, run_ids[0]) if len(run_ids) == 1 else HopSource.for_every_pair(s)
        # per run, as one run alone reads them (an item's hops come from its first loss's answer set)
        hops = {r: _hops(source, losses[r]) for r in run_ids}
    made = [_classify(Attribution(r, *runs[r], judged=judged.get(r, 0)), losses[r], hops[r]) for r in run_ids]
    # every run's six shares in one batch (intervals_from_sums: the beta-binomial rates computed together,
    # where one at a time cost ~80 ms each, 35 s for a report's 75 runs); the same numbers as cluster_mean's
    requests: list[Request] = []
    for _, codes, clusters in made:
        if len(codes):
            requests += [(*cluster_sums((codes == k).astype(np.float64), clusters), None)
                         for k in range(len(CATEGORIES))]
    shares = iter(_distinct_intervals(requests, seed))
    for out, codes, _ in made:
        for c in CATEGORIES:  # the items numbered once for the six shares (intervals.cluster_codes)
            out.shares[c] = next(shares) if len(codes) else None
    return [out for out, _, _ in made]


def _distinct_intervals(requests: list[Request], seed: int) -> list[Interval]:
    """``intervals_from_sums`` of each request, each distinct one computed once: a run's categories it never
    saw share its clusters' counts with zero sums, so most runs repeat the same request (at 1M judgments 150
    distinct of 450, a third of the beta-binomial batch). An interval is a function of its request alone (no
    generator shared along the batch) and frozen, so a repeat gets the same object."""
    first: dict[bytes, int] = {}
    index = [first.setdefault(np.asarray(sums, np.float64).tobytes() + b"/" + np.asarray(counts, np.float64).tobytes()
                              + repr(rest).encode(), len(first)) for sums, counts, *rest in requests]
    unique: dict[int, Request] = {}
    for r, i in zip(requests, index, strict=True):
        unique.setdefault(i, r)
    drawn = intervals_from_sums([unique[i] for i in range(len(first))], seed=seed)
    return [drawn[i] for i in index]


def _classify(out: Attribution, losses: Losses, hops: dict[int, tuple[str, list[Hop | None]]]
              ) -> tuple[Attribution, NDArray[np.int64], NDArray[np.int64]]:
    """The run's counts and examples; its judgments' category codes and clusters (for the shares)."""
    n = len(losses)
    scores, clusters = losses.score, losses.item
    # a no-verdict (category_of's first test) needs neither its hops nor its record: set at once
    codes = np.full(n, CATEGORIES.index(NO_VERDICT), dtype=np.int64)
    verdict = (np.array(losses.outcome, dtype=object) == "verdict").astype(bool) & (scores != 0.5)
    shortcut = is_shortcut(out.judge)
    judged = np.flatnonzero(verdict).tolist()
    for i, raw in zip(judged, losses.records(judged), strict=True):
        codes[i] = CATEGORIES.index(category_of(str(losses.outcome[i]), float(scores[i]), hops[int(clusters[i])][1],
                                                _record(raw) or {}, shortcut))
    # the first EXAMPLES of each category, in pair order
    shown = [(c, np.flatnonzero(codes == k)[:EXAMPLES].tolist()) for k, c in enumerate(CATEGORIES)]
    every = [i for _, positions in shown for i in positions]
    served_of = dict(zip(every, (_record(raw) for raw in losses.records(every)), strict=True))
    examples: dict[str, list[dict[str, Any]]] = {c: [] for c in CATEGORIES}
    for c, positions in shown:
        for i in positions:
            item, served = int(clusters[i]), served_of[i]
            examples[c].append({
                "pair_id": losses.pair[i], "item_id": item, "ratings": f"{losses.better[i]}>{losses.worse[i]}",
                "verdict": losses.verdict[i], "outcome": losses.outcome[i], "show": f"playlisteval show {item}",
                "cited_chunks": [sorted(h.chunks) if h else [] for h in hops[item][1]],
                "served_chunks": list(served.get("chunks") or []) if served else []})
    counts = np.bincount(codes, minlength=len(CATEGORIES))
    out.counts = {c: int(counts[k]) for k, c in enumerate(CATEGORIES)}
    out.examples = examples
    return out, codes, clusters
