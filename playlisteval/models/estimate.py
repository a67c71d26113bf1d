"""A build's projected cost, before anything is spent (SPEC K): calls per seed × tokens per call × prices.

Each build role's expected input is assembled from what its request carries (SPEC B–F): the clips'
frames at the role's fps and their audio, transcripts, the question and answers, a judge's frames; its
output from [estimate] output_tokens. Where the store's ledger already holds paid calls of a role,
their mean tokens can replace the expectation (``from_ledger``). Nothing here calls a model.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import func
from sqlalchemy import select as sql_select
from sqlalchemy.engine import Engine
from sqlmodel import col, select

from playlisteval.config import Settings
from playlisteval.models import pricing
from playlisteval.models.registry import split_spec
from playlisteval.models.request import Usage
from playlisteval.store import transaction
from playlisteval.store.tables import ModelCall, Seed, Segment

PAIRS_PER_ITEM = 10  # [F1] all pairs of five answers
LOCAL = ("vllm", "hf")


@dataclass(frozen=True)
class RoleCost:
    role: str
    spec: str
    calls_per_seed: float
    usage: Usage  # per call
    usd_per_call: float
    measured: bool  # tokens from the ledger rather than the expectation

    @property
    def usd_per_seed(self) -> float:
        return self.calls_per_seed * self.usd_per_call


@dataclass(frozen=True)
class Projection:
    seeds: int
    segment_s: float
    roles: list[RoleCost]

    @property
    def usd_per_seed(self) -> float:
        return sum(r.usd_per_seed for r in self.roles)

    @property
    def total_usd(self) -> float:
        return self.seeds * self.usd_per_seed


def _inputs(settings: Settings, segment_s: float) -> dict[str, tuple[float, int]]:
    """role → (calls per seed, input tokens per call)."""
    e, b = settings.estimate, settings.build
    minutes = segment_s / 60

    def video(fps: float, audio: bool) -> int:
        return int(segment_s * fps * e.tokens_per_frame + (segment_s * e.audio_tokens_per_s if audio else 0))

    transcript = int(minutes * e.transcript_tokens_per_min)
    out = e.output_tokens
    gold = out.get("B", 0)
    qa = e.prompt_tokens + gold  # a role that reads the question and its gold answer
    a1, a2, second = e.attempts_phase1, e.attempts_phase1 * e.attempts_phase2, e.second_opinion
    return {
        "B": (a1, e.prompt_tokens + 2 * video(b.gen_fps, True) + 2 * transcript),
        "C2_transcript_answer": (a1, e.prompt_tokens + 6 * transcript),  # [C2.1] three windows per segment
        "C2_transcript_verify": (a1, qa + out.get("C2_transcript_answer", 0)),
        "C2_parametric_answer_a": (a1, e.prompt_tokens),
        "C2_parametric_verify_a": (a1, qa + out.get("C2_parametric_answer_a", 0)),
        "C2_parametric_answer_b": (a1 * second, e.prompt_tokens),
        "C2_parametric_verify_b": (a1 * second, qa + out.get("C2_parametric_answer_b", 0)),
        "C3": (a1, qa + 2 * video(b.verify_fps, False) + 2 * transcript),
        "D1": (a2, qa + 2 * video(b.gen_fps, True)),
        "D3_first": (a2, e.prompt_tokens + 5 * gold),
        "D3_second": (a2 * second, e.prompt_tokens + 5 * gold),
        "D4": (a2, e.prompt_tokens + 4 * gold + 2 * video(b.verify_fps, False) + 2 * transcript),
        "F_first": (PAIRS_PER_ITEM, e.prompt_tokens + 2 * gold + e.judge_frames * e.tokens_per_frame),
        "F_second": (PAIRS_PER_ITEM, e.prompt_tokens + 2 * gold + e.judge_frames * e.tokens_per_frame),
    }


def _measured(engine: Engine, role: str, spec: str) -> Usage | None:
    provider, model = split_spec(spec)
    with transaction(engine) as s:
        row = s.execute(sql_select(func.count(), func.avg(ModelCall.input_tokens), func.avg(ModelCall.output_tokens),
                                   func.avg(ModelCall.thinking_tokens), func.avg(ModelCall.gpu_seconds))
                        .where(col(ModelCall.role) == role, col(ModelCall.provider) == provider,
                               col(ModelCall.model) == model, col(ModelCall.status).in_(("ok", "malformed")))).one()
    if not row[0]:
        return None
    return Usage(input_tokens=int(row[1] or 0), output_tokens=int(row[2] or 0), thinking_tokens=int(row[3] or 0),
                 gpu_seconds=float(row[4] or 0.0))


def store_facts(engine: Engine) -> tuple[int, float | None]:
    """Seeds in the store, and the mean length of the segments they pair (None without seeds)."""
    with transaction(engine) as s:
        seeds = int(s.exec(select(func.count()).select_from(Seed)).one())
        mean = s.exec(select(func.avg(Segment.end - Segment.start))
                      .where(col(Segment.id).in_(select(Seed.segment1_id).union(select(Seed.segment2_id))))).one()
    return seeds, (float(mean) if mean else None)


def project_cost(settings: Settings, seeds: int, segment_s: float | None = None,
                 engine: Engine | None = None) -> Projection:
    """The expected cost of building ``seeds`` seeds with the configured models and prices."""
    if segment_s is None:
        segment_s = (settings.index.segment_min_s + settings.index.segment_max_s) / 2
    e = settings.estimate
    roles: list[RoleCost] = []
    for role, (calls, tokens_in) in _inputs(settings, segment_s).items():
        spec = settings.models.get(role)
        if spec is None:
            continue
        price = settings.price_for(spec)
        output = e.output_tokens.get(role, 500)
        usage = Usage(input_tokens=tokens_in, output_tokens=output,
                      thinking_tokens=int(output * e.thinking_ratio) if price.thinking else 0,
                      gpu_seconds=e.gpu_seconds_per_call if spec.split("/", 1)[0] in LOCAL else 0.0)
        measured = _measured(engine, role, spec) if engine is not None else None
        roles.append(RoleCost(role, spec, calls, measured or usage, pricing.usd(price, measured or usage),
                              measured is not None))
    return Projection(seeds, segment_s, roles)
