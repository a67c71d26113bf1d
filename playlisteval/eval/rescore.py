"""`eval rescore RUN` (issue 42 item 3): a judge run's stored replies read again with today's parsers.

After a parser changes (the verdict read outside the reply's thinking, models/reasoning.py), the verdicts
of a run already paid for can be re-derived from the replies it stored, instead of paying for the run
again. The result is a *new* run, recorded like `eval import` records one (eval/imported.py): the source
run's settings plus ``rescore_of: RUN`` (eval/runkey.py ``PROVENANCE``: part of the run's hash, not of its
variant), and no model call: nothing is added to the ledger, so the new run has no spend of its own; each
judgment keeps the ledger row of the call that answered it (``call_id``) and its evidence record.

What is read again, per judgment of RUN:
- a model judge's reply (``judgment.raw``; where that is empty, the answer cached for its call): the
  verdict is ``parse_verdict`` of it now; a refusal stays a refusal (that came from how the reply
  ended, which the judgment recorded as its outcome);
- a reward model's record (both answers' scores): the verdict is the higher score's side, as it was;
- a shortcut judge's reason (no model reply): copied as it is.
A judgment whose reply is not stored (empty, and nothing cached for its call) is counted and reported
as missing — never guessed, never copied: the new run has no judgment for that pair. Pairs RUN never
judged (errors, not asked) are missing too. Rescoring RUN again replaces its earlier rescore.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import delete
from sqlmodel import Session, col, select

from playlisteval.config import Settings
from playlisteval.errors import ConfigError
from playlisteval.eval import runkey, shortcuts
from playlisteval.eval.verdicts import REFUSAL, TIE, VERDICT, outcome_of, parse_verdict, score
from playlisteval.logs import get_logger
from playlisteval.store import open_store
from playlisteval.store.engine import read, transaction
from playlisteval.store.tables import (
    Benchmark,
    BenchmarkPair,
    JudgeError,
    JudgeRun,
    Judgment,
    ModelCall,
    ResponseCache,
    now,
)

log = get_logger(__name__)

NONE = "none"  # how a change names "no verdict" ("A→none")


@dataclass
class RescoreSummary:
    run_id: int  # the new run
    rescore_of: int
    judge: str
    benchmark: str
    pairs: int  # the benchmark's
    judged: int  # judgments of the new run
    reread: int  # of them, model replies read again (the rest: reward records, shortcut reasons)
    changed: int
    changes: dict[str, int] = field(default_factory=dict)  # "A→none": n
    missing: int = 0  # pairs of the benchmark with no stored reply in RUN: no judgment in the new run
    missing_pairs: list[int] = field(default_factory=list)
    accuracy_before: float | None = None  # RUN's, over its judged pairs
    accuracy: float | None = None  # the new run's, over its judged pairs
    outcomes: dict[str, int] = field(default_factory=dict)
    replaced: list[int] = field(default_factory=list)  # earlier rescores of RUN, deleted
    settings: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "rescore_of": self.rescore_of, "judge": self.judge,
                "benchmark": self.benchmark, "pairs": self.pairs, "judged": self.judged, "reread": self.reread,
                "changed": self.changed, "changes": self.changes, "missing": self.missing,
                "missing_pairs": self.missing_pairs, "accuracy_before": self.accuracy_before,
                "accuracy": self.accuracy, "outcomes": self.outcomes, "replaced": self.replaced,
                "state": "finished" if not self.missing else "incomplete", "model_calls": 0,
                "options_hash": runkey.options_hash(self.settings), "settings": self.settings}


def _cached_text(s: Session, call_ids: set[int]) -> dict[int, str]:
    """call id → the reply text cached for its request (the calls whose answer is in the response cache)."""
    if not call_ids:
        return {}
    hashes = dict(s.exec(select(ModelCall.id, ModelCall.request_hash).where(col(ModelCall.id).in_(call_ids))).all())
    cached = dict(s.exec(select(ResponseCache.request_hash, ResponseCache.response)
                         .where(col(ResponseCache.request_hash).in_(set(hashes.values())))).all())
    out: dict[int, str] = {}
    for call_id, key in hashes.items():
        response = cached.get(key)
        if isinstance(response, str):  # SQLite may hand the JSON back as text
            response = json.loads(response)
        if isinstance(response, dict) and isinstance(response.get("text"), str):
            out[int(call_id or 0)] = response["text"]
    return out


def _reward_verdict(raw: str) -> tuple[str | None, str] | None:
    """A reward model's record (eval/reward.py) as (verdict, outcome); None when ``raw`` is not one."""
    try:
        record = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(record, dict) or not record.get("reward"):
        return None
    a, b = float(record.get("score_a", 0.0)), float(record.get("score_b", 0.0))
    if a == b:
        return None, TIE
    return ("A" if a > b else "B"), VERDICT


def _change(old: str | None, new: str | None) -> str:
    return f"{old or NONE}→{new or NONE}"


def rescore_run(settings: Settings, run_id: int) -> RescoreSummary:
    """Read run ``run_id``'s stored replies again into a new run; see the module docstring."""
    engine = open_store(settings)
    with read(engine) as s:
        run = s.get(JudgeRun, run_id)
        if run is None:
            raise ConfigError(f"no judge run {run_id}: `playlisteval eval runs` lists them")
        options = runkey.parse_settings(run.settings) or {}
        if runkey.is_imported(options):
            raise ConfigError(f"run {run_id} was imported (`eval import`): its verdicts came from its file, not from "
                              "replies read here; import the file again instead")
        bench = s.get(Benchmark, run.benchmark_id)
        pair_ids = [int(p) for p in s.exec(select(BenchmarkPair.pair_id)
                                           .where(BenchmarkPair.benchmark_id == run.benchmark_id)).all()]
        old = list(s.exec(select(Judgment).where(Judgment.run_id == run_id).order_by(col(Judgment.pair_id))).all())
        empty = {int(j.call_id) for j in old if not j.raw and j.call_id}
        cached = _cached_text(s, empty)
        source = JudgeRun.model_validate(run.model_dump())
    shortcut = shortcuts.is_shortcut(source.judge)
    rows: list[Judgment] = []
    changes: Counter[str] = Counter()
    reread = 0
    for j in old:
        verdict, outcome = j.verdict, j.outcome
        raw = j.raw if j.raw or not j.call_id else cached.get(int(j.call_id))
        if raw is None or (not raw and not j.call_id and not shortcut):
            continue  # the reply is not stored: counted as missing, never guessed
        reward = None if shortcut else _reward_verdict(raw)
        if reward is not None:
            verdict, outcome = reward
        elif not shortcut:  # a model's reply: read with today's parser
            verdict = parse_verdict(raw)
            outcome = outcome_of(verdict, "refusal" if j.outcome == REFUSAL else "stop")
            reread += 1
        if verdict != j.verdict:
            changes[_change(j.verdict, verdict)] += 1
        rows.append(Judgment(run_id=0, pair_id=j.pair_id, a_is_better=j.a_is_better, verdict=verdict,
                             score=score(verdict, j.a_is_better), raw=j.raw, evidence=dict(j.evidence or {}),
                             outcome=outcome, call_id=j.call_id))
    recorded = {**options, runkey.RESCORE_OF: run_id}
    digest = runkey.options_hash(recorded)
    with transaction(engine) as s:  # one transaction: the new run whole, or nothing
        earlier = [int(r or 0) for r in s.exec(select(JudgeRun.id).where(
            JudgeRun.benchmark_id == source.benchmark_id, JudgeRun.judge == source.judge,
            JudgeRun.options_hash == digest)).all()]
        if earlier:
            s.execute(delete(Judgment).where(col(Judgment.run_id).in_(earlier)))
            s.execute(delete(JudgeError).where(col(JudgeError.run_id).in_(earlier)))
            s.execute(delete(JudgeRun).where(col(JudgeRun.id).in_(earlier)))
        new = JudgeRun(benchmark_id=source.benchmark_id, judge=source.judge, evidence=source.evidence,
                       scope=source.scope, swapped=source.swapped, settings=recorded, modality=source.modality,
                       options_hash=digest, benchmark_version=source.benchmark_version, finished_at=now())
        s.add(new)
        s.flush()
        new_id = int(new.id or 0)
        for row in rows:
            row.run_id = new_id
        s.add_all(rows)
    judged = {r.pair_id for r in rows}
    missing = sorted(p for p in pair_ids if p not in judged)
    before = [float(j.score) for j in old]
    after = [float(r.score) for r in rows]
    log.info("eval.rescored", run_id=new_id, rescore_of=run_id, judge=source.judge, judged=len(rows),
             changed=sum(changes.values()), missing=len(missing), replaced=earlier)
    return RescoreSummary(
        run_id=new_id, rescore_of=run_id, judge=source.judge, benchmark=bench.name if bench else "",
        pairs=len(pair_ids), judged=len(rows), reread=reread, changed=sum(changes.values()),
        changes=dict(changes.most_common()), missing=len(missing), missing_pairs=missing,
        accuracy_before=sum(before) / len(before) if before else None,
        accuracy=sum(after) / len(after) if after else None,
        outcomes=dict(Counter(r.outcome for r in rows)), replaced=earlier, settings=recorded)
