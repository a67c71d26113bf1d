"""One judge run read back whole from the store, pair by pair: what `eval export` writes (issue 41 item 6).

Why a module of its own: the export format (eval/inspect_log.py) should only lay out what was recorded,
never decide it. Everything here is a read — the prompt as the ledger kept it (``model_prompt``, once per
request hash), the reply as the judgment stored it (or, where that is empty, as the response cache holds
it), the call's tokens and dollars (``model_call``), the evidence record of the judgment — and a pair the
run could not judge (an error, or never asked) is listed as such, never given a judgment.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import func
from sqlalchemy.engine import Engine
from sqlmodel import col, select

from playlisteval.benchmark.pairs import pair_texts
from playlisteval.errors import ConfigError
from playlisteval.eval import runkey
from playlisteval.store.engine import read
from playlisteval.store.tables import (
    Benchmark,
    BenchmarkPair,
    JudgeError,
    JudgeRun,
    Judgment,
    ModelCall,
    ModelPrompt,
    ResponseCache,
)


@dataclass
class CallRecord:
    """The ledger row of the call that answered a pair (SPEC K1): what it used and cost."""

    call_id: int
    provider: str
    model: str
    status: str
    cache_hit: bool
    input_tokens: int
    output_tokens: int
    thinking_tokens: int
    usd: float
    estimated_usd: float
    latency_s: float
    created_at: float
    finished_at: float | None


@dataclass
class PairRecord:
    """One judged pair: the prompt given, the reply, the verdict and what was served."""

    pair_id: int  # the store's
    key: str  # the pair's content key: its id in `export`'s data/test.jsonl
    domain: str
    question: str
    a_is_better: bool  # as the judge saw the sides (swapped runs too)
    verdict: str | None  # "A" / "B" / None (no verdict)
    outcome: str  # verdict / no_verdict / refusal / tie
    prompt: str | None  # None: no prompt was kept (a shortcut judge asks no model; an imported run)
    reply: str
    evidence: dict[str, Any]
    call: CallRecord | None  # None: no model call (shortcut judge, imported run)

    @property
    def target(self) -> str:
        """The letter of the intended (better) answer as shown."""
        return "A" if self.a_is_better else "B"

    @property
    def correct(self) -> bool | None:
        """None for no verdict: neither right nor wrong (the export never scores it as either)."""
        return None if self.verdict not in ("A", "B") else self.verdict == self.target


@dataclass
class RunRecord:
    run_id: int
    benchmark: str
    benchmark_version: int
    judge: str
    evidence: str
    scope: str
    swapped: bool
    modality: str
    options_hash: str
    settings: dict[str, Any]
    created_at: float
    finished_at: float
    benchmark_pairs: int  # pairs of the benchmark: judged + errors + not asked
    pairs: list[PairRecord] = field(default_factory=list)
    errors: dict[int, str] = field(default_factory=dict)  # pair → the failed call's error (not judged)

    @property
    def not_asked(self) -> int:
        return max(0, self.benchmark_pairs - len(self.pairs) - len(self.errors))


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value  # SQLite may hand JSON back as text


def _base_hash(key: str) -> str:
    """A retried request's ledger key carries ``:tryN``; its prompt is kept under the request's own key."""
    return key.split(":try", 1)[0]


def load_run(engine: Engine, run_id: int) -> RunRecord:
    """Run ``run_id`` with every judgment it holds, in the store's pair order (a ConfigError if there is none)."""
    with read(engine) as s:
        found = s.exec(select(JudgeRun, Benchmark.name)
                       .join(Benchmark, col(Benchmark.id) == col(JudgeRun.benchmark_id))
                       .where(JudgeRun.id == run_id)).first()
        if found is None:
            raise ConfigError(f"no judge run {run_id}: `playlisteval eval runs` lists them")
        run, name = found
        size = s.exec(select(func.count()).select_from(BenchmarkPair)
                      .where(BenchmarkPair.benchmark_id == run.benchmark_id)).one()
        judgments = s.exec(select(Judgment).where(Judgment.run_id == run_id).order_by(col(Judgment.pair_id))).all()
        errors = {int(p): str(e) for p, e in s.exec(select(JudgeError.pair_id, JudgeError.error)
                                                   .where(JudgeError.run_id == run_id)).all()}
        call_ids = sorted({j.call_id for j in judgments if j.call_id})
        calls = {int(c.id or 0): c for c in s.exec(select(ModelCall).where(col(ModelCall.id).in_(call_ids))).all()}
        keys = {c.request_hash for c in calls.values()} | {_base_hash(c.request_hash) for c in calls.values()}
        prompts = dict(s.exec(select(ModelPrompt.request_hash, ModelPrompt.text)
                              .where(col(ModelPrompt.request_hash).in_(keys))).all())
        cached = dict(s.exec(select(ResponseCache.request_hash, ResponseCache.response)
                             .where(col(ResponseCache.request_hash).in_(keys))).all())
    texts = pair_texts(engine, [j.pair_id for j in judgments])
    record = RunRecord(int(run.id or 0), str(name), int(run.benchmark_version), run.judge, run.evidence, run.scope,
                       bool(run.swapped), run.modality, run.options_hash, runkey.parse_settings(run.settings) or {},
                       float(run.created_at), float(run.finished_at), int(size), errors=errors)
    for j in judgments:
        call = calls.get(j.call_id)
        key = _base_hash(call.request_hash) if call is not None else ""
        reply = j.raw
        if not reply and call is not None:  # a judgment may leave its reply to the cache (eval/rescore.py)
            response = _json(cached.get(call.request_hash) or cached.get(key))
            reply = str(response.get("text") or "") if isinstance(response, dict) else ""
        text = texts.get(j.pair_id)
        record.pairs.append(PairRecord(
            pair_id=j.pair_id, key=text.key if text else str(j.pair_id), domain=text.domain if text else "",
            question=text.question if text else "", a_is_better=bool(j.a_is_better), verdict=j.verdict,
            outcome=j.outcome, reply=reply,
            prompt=None if call is None else prompts.get(call.request_hash, prompts.get(key)),
            evidence=_json(j.evidence) or {}, call=None if call is None else CallRecord(
                int(call.id or 0), call.provider, call.model, call.status, bool(call.cache_hit),
                int(call.input_tokens), int(call.output_tokens), int(call.thinking_tokens), float(call.usd),
                float(call.estimated_usd), float(call.latency_s), float(call.created_at), call.finished_at)))
    return record
