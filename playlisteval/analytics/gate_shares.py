"""The share of questions each gate rejects, with its interval, and who decided it: the sim or a real
model (issue 24).

A build may give the text-only gates (C2.1, C2.2, D3) to real local models while the sim plays the
video roles. Each gate's decisions are then labelled by the models that made them — read from the ledger
rows of the gate's calls, not from the configuration, which may have changed since: ``real`` when none
was the sim, ``simulated`` when all were, ``mixed`` otherwise. The share is rejections over decisions
(checker faults decide nothing and are counted apart), per question: a question tried twice at a gate
counts both tries, and its interval is clustered by question (analytics/intervals.py).

``role_speeds`` is the other half of what a real-gate build says: per role and model, calls, tokens read
(and of them, read from llama.cpp's kept prefix), tokens written, seconds per call and calls per minute
per core — from the ledger's latencies.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import func
from sqlalchemy import select as sa_select
from sqlalchemy.engine import Engine
from sqlmodel import col, select

from playlisteval.analytics.intervals import Interval, cluster_mean
from playlisteval.store.engine import read
from playlisteval.store.states import GATE_ORDER
from playlisteval.store.tables import GateResult, ModelCall

FAULT = "fault"  # a checker fault's verdict (build/stages/faults.py)
SIM = "sim"


@dataclass
class GateShare:
    gate: str
    decided: int
    rejected: int
    faults: int
    share: Interval | None  # None: nothing decided
    source: str  # real / simulated / mixed / none (no model call: a structural gate)
    models: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"gate": self.gate, "decided": self.decided, "rejected": self.rejected, "faults": self.faults,
                "share": self.share.as_dict() if self.share else None, "source": self.source,
                "models": self.models}


def _source(providers: set[str]) -> str:
    if not providers:
        return "none"
    if providers == {SIM}:
        return "simulated"
    return "real" if SIM not in providers else "mixed"


def gate_shares(engine: Engine, seed: int = 0) -> list[GateShare]:
    """Every gate that decided something, in the build's order."""
    with read(engine) as s:
        rows = s.exec(select(GateResult.gate, GateResult.item_id, GateResult.verdict, GateResult.call_ids)).all()
        ledger = s.exec(select(ModelCall.id, ModelCall.provider, ModelCall.model)).all()
    calls = {int(i or 0): f"{p}/{m}" for i, p, m in ledger}
    by_gate: dict[str, list[tuple[int, str, list[int]]]] = defaultdict(list)
    for gate, item_id, verdict, call_ids in rows:
        by_gate[gate].append((int(item_id), verdict, list(call_ids or [])))
    out = []
    for gate in [g for g in GATE_ORDER if g in by_gate] + sorted(set(by_gate) - set(GATE_ORDER)):
        results = by_gate[gate]
        decided = [(item, verdict) for item, verdict, _ in results if verdict != FAULT]
        models = sorted({calls[c] for _, _, ids in results for c in ids if c in calls})
        share = None
        if decided:
            share = cluster_mean([1.0 if v == "reject" else 0.0 for _, v in decided],
                                   [item for item, _ in decided], seed=seed)
        out.append(GateShare(gate, len(decided), sum(v == "reject" for _, v in decided),
                             len(results) - len(decided), share, _source({m.split("/", 1)[0] for m in models}),
                             models))
    return out


@dataclass
class RoleSpeed:
    role: str
    model: str
    calls: int  # calls that ran (cache hits left out: they cost no time)
    input_tokens: int
    cached_input_tokens: int
    output_tokens: int
    seconds: float  # wall time of those calls

    @property
    def seconds_per_call(self) -> float:
        return self.seconds / self.calls if self.calls else 0.0

    def calls_per_minute_per_core(self, threads: int) -> float:
        return 60.0 / (self.seconds_per_call * threads) if self.calls and self.seconds else 0.0

    def as_dict(self, threads: int = 1) -> dict[str, Any]:
        return {"role": self.role, "model": self.model, "calls": self.calls, "input_tokens": self.input_tokens,
                "cached_input_tokens": self.cached_input_tokens, "output_tokens": self.output_tokens,
                "seconds": round(self.seconds, 2), "seconds_per_call": round(self.seconds_per_call, 2),
                "calls_per_minute_per_core": round(self.calls_per_minute_per_core(threads), 3)}


def role_speeds(engine: Engine, provider: str = "llama") -> list[RoleSpeed]:
    """Per (role, model) of ``provider``: what its calls that ran read, wrote and took."""
    with read(engine) as s:
        query = (sa_select(col(ModelCall.role), col(ModelCall.model), func.count(), func.sum(ModelCall.input_tokens),
                           func.sum(ModelCall.cached_input_tokens), func.sum(ModelCall.output_tokens),
                           func.sum(ModelCall.latency_s))
                 .where(col(ModelCall.provider) == provider, col(ModelCall.status).in_(("ok", "malformed")))
                 .group_by(col(ModelCall.role), col(ModelCall.model))
                 .order_by(col(ModelCall.role), col(ModelCall.model)))
        rows = s.connection().execute(query).all()
    return [RoleSpeed(r, m, int(n), int(i or 0), int(c or 0), int(o or 0), float(t or 0.0))
            for r, m, n, i, c, o, t in rows]
