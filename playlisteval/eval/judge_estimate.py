"""A judge run's projected cost, before it starts (issue 42, item 6): `cost estimate --judge MODEL`.

Calls: the benchmark's pairs (or ``--max-pairs``) × (1 + the swapped pass) × samples. Each call carries
the run's evidence as `eval judge` would send it (SPEC G1–G4): its frames — at most the model's image
limit ([providers] image_limits, the frame rule thins them) — at [estimate] tokens_per_frame each; the
transcript (or audio) of the chunks they come from; the G4 prompt with the question and the two answers
(measured from the benchmark's texts, ~4 characters a token). The output is [estimate] output_tokens "G"
(else 300), thinking at [estimate] thinking_ratio where the model is priced for it; local models are
charged [estimate] gpu_seconds_per_call at their GPU-hour price, CPU models (llama) by CPU time as the
runner's own pre-call estimate counts it. Where the ledger already holds calls of a run of this judge with
exactly these options, their mean tokens replace the expectation. A model with no price is an error
naming the [prices] entry to add — never 0 USD — except the sim's (notional) and shortcut judges (free).
Nothing here calls a model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import func
from sqlalchemy import select as sql_select
from sqlalchemy.engine import Engine
from sqlmodel import col, select

from playlisteval.config import Settings
from playlisteval.errors import ConfigError
from playlisteval.eval.modes import MODALITIES
from playlisteval.eval.options import JudgeOptions
from playlisteval.models import pricing
from playlisteval.models.estimate import LOCAL
from playlisteval.models.registry import split_spec
from playlisteval.models.request import Usage
from playlisteval.store.engine import transaction
from playlisteval.store.tables import BenchmarkPair, JudgeRun, ModelCall

SHORTCUT = "shortcut/"
CPU = ("llama",)  # models run on the CPU, charged by CPU time (pricing.estimate_usage)
CHARS_PER_TOKEN = 4  # pricing.estimate_usage's count for text
LINE_TOKENS = 8  # "[Video i @ m:s] " before each transcript line
DEFAULT_OUTPUT = 300  # a judge's reply: a short rationale and [[A]] / [[B]]


@dataclass(frozen=True)
class Evidence:
    """What one call carries besides its price: the assumptions printed with the estimate."""

    frames: int  # frames sent (after the image limit)
    frames_asked: int
    image_limit: int | None
    tokens_per_frame: int
    chunks: int  # chunks whose transcript or audio is sent
    stream: str | None  # "transcript" / "audio" / None
    stream_tokens: int
    prompt_tokens: int  # instructions + question + both answers

    @property
    def input_tokens(self) -> int:
        return self.frames * self.tokens_per_frame + self.stream_tokens + self.prompt_tokens


@dataclass(frozen=True)
class JudgeCost:
    judge: str
    calls: int
    calls_per_pair: int
    usage: Usage  # per call
    usd_per_call: float
    batch_usd_per_call: float  # the batch price where the model has one, else the online price
    measured: bool  # tokens from the ledger's calls of this judge with these options
    frames: int = 0  # frames sent a call (its image limit may thin the run's frames)

    @property
    def usd_per_pair(self) -> float:
        return self.calls_per_pair * self.usd_per_call

    @property
    def total_usd(self) -> float:
        return self.calls * self.usd_per_call


@dataclass(frozen=True)
class JudgeEstimate:
    benchmark: str
    pairs: int  # pairs judged (the benchmark's, or --max-pairs)
    benchmark_pairs: int
    swap: bool
    samples: int
    options: JudgeOptions
    evidence: Evidence
    judges: list[JudgeCost]

    @property
    def usd_per_pair(self) -> float:
        return sum(j.usd_per_pair for j in self.judges)

    @property
    def total_usd(self) -> float:
        return sum(j.total_usd for j in self.judges)

    def as_json(self) -> dict[str, Any]:
        ev, o = self.evidence, self.options
        return {
            "benchmark": self.benchmark, "pairs": self.pairs, "benchmark_pairs": self.benchmark_pairs,
            "swap": self.swap, "samples": self.samples,
            "options": {"evidence": o.evidence, "scope": o.scope, "modality": o.modality, "frames": o.frames,
                        "frames_per_chunk": o.frames_per_chunk},
            "assumptions": {"tokens_per_frame": ev.tokens_per_frame, "frames_sent": ev.frames,
                            "frames_asked": ev.frames_asked, "image_limit": ev.image_limit, "chunks": ev.chunks,
                            "stream": ev.stream, "stream_tokens": ev.stream_tokens,
                            "prompt_tokens": ev.prompt_tokens},
            "judges": [{"judge": j.judge, "calls": j.calls, "calls_per_pair": j.calls_per_pair,
                        "input_tokens": j.usage.input_tokens, "output_tokens": j.usage.output_tokens,
                        "thinking_tokens": j.usage.thinking_tokens, "gpu_seconds": j.usage.gpu_seconds,
                        "cpu_seconds": j.usage.cpu_seconds, "usd_per_call": j.usd_per_call,
                        "usd_per_pair": j.usd_per_pair, "total_usd": j.total_usd,
                        "batch_total_usd": j.calls * j.batch_usd_per_call, "measured": j.measured,
                        "frames_sent": j.frames}
                       for j in self.judges],
            "per_pair_usd": self.usd_per_pair, "total_usd": self.total_usd,
        }


def price_problem(settings: Settings, judge: str) -> str | None:
    """Why ``judge`` cannot be priced (None when it can): the setting to add, named."""
    if judge.startswith(SHORTCUT):
        return None
    provider, _ = split_spec(judge)
    if provider == "sim" or settings.has_price(judge):
        return None
    return (f"{judge} has no price in [prices]: add [prices.\"{judge}\"] (input/output USD per 1M tokens, "
            f"or gpu_hour for a local model; 0 if it is free) or [prices.\"{provider}/*\"] — it is never "
            "estimated at 0 USD")


def _evidence(settings: Settings, judge: str, options: JudgeOptions, text_tokens: int) -> Evidence:
    from playlisteval.models.providers.media_parts import image_limit

    e = settings.estimate
    frames_shown, stream = MODALITIES[options.modality]
    asked = options.frames if frames_shown else 0
    limit = image_limit(settings, judge) if asked and not judge.startswith(SHORTCUT) else None
    frames = min(asked, limit) if limit is not None else asked
    # the chunks the frames come from: retrieved evidence shows frames_per_chunk frames of each chunk;
    # uniform and oracle frames are spread over the corpus, one chunk each (at most the gold segments'
    # chunks for oracle evidence)
    chunks = -(-options.frames // options.frames_per_chunk) if options.evidence == "retrieved" else options.frames
    if options.scope == "oracle" or options.evidence == "oracle":
        segment_s = (settings.index.segment_min_s + settings.index.segment_max_s) / 2
        chunks = min(chunks, max(1, int(2 * segment_s // settings.index.chunk_s)))
    seconds = chunks * settings.index.chunk_s
    if stream == "transcript":
        stream_tokens = int(seconds / 60 * e.transcript_tokens_per_min) + chunks * LINE_TOKENS
    elif stream == "audio":
        stream_tokens = int(seconds / max(options.audio_speed, 1e-6) * e.audio_tokens_per_s)
    else:
        stream_tokens = 0
    return Evidence(frames=frames, frames_asked=asked, image_limit=limit, tokens_per_frame=e.tokens_per_frame,
                    chunks=chunks if stream else 0, stream=stream, stream_tokens=stream_tokens,
                    prompt_tokens=e.prompt_tokens + text_tokens)


def _text_tokens(engine: Engine, pair_ids: list[int]) -> int:
    """The mean tokens of a pair's question and two answers over the benchmark (0 without pairs)."""
    from playlisteval.benchmark.pairs import pair_texts

    texts = pair_texts(engine, pair_ids)
    if not texts:
        return 0
    chars = sum(len(t.question) + len(t.better) + len(t.worse) for t in texts.values())
    return int(chars / len(texts) / CHARS_PER_TOKEN)


def _measured(engine: Engine, benchmark_id: int, judge: str, options: JudgeOptions) -> Usage | None:
    """Mean tokens of the paid calls of this judge's runs with exactly these options (any sample)."""
    from dataclasses import replace

    hashes = {options.options_hash, replace(options, sample=0).options_hash}
    provider, model = split_spec(judge)
    with transaction(engine) as s:
        runs = [int(r or 0) for r in s.exec(select(JudgeRun.id).where(
            JudgeRun.benchmark_id == benchmark_id, JudgeRun.judge == judge,
            col(JudgeRun.options_hash).in_(hashes))).all()]
        if not runs:
            return None
        row = s.execute(sql_select(func.count(), func.avg(ModelCall.input_tokens), func.avg(ModelCall.output_tokens),
                                   func.avg(ModelCall.thinking_tokens), func.avg(ModelCall.gpu_seconds))
                        .where(col(ModelCall.role) == "G", col(ModelCall.provider) == provider,
                               col(ModelCall.model) == model, col(ModelCall.run_id).in_(runs),
                               col(ModelCall.status).in_(("ok", "malformed")))).one()
    if not row[0]:
        return None
    return Usage(input_tokens=int(row[1] or 0), output_tokens=int(row[2] or 0), thinking_tokens=int(row[3] or 0),
                 gpu_seconds=float(row[4] or 0.0))


def _judge_cost(settings: Settings, judge: str, evidence: Evidence, calls_per_pair: int, pairs: int,
                measured: Usage | None) -> JudgeCost:
    if judge.startswith(SHORTCUT):  # calls nothing, costs nothing
        return JudgeCost(judge, 0, 0, Usage(), 0.0, 0.0, False)
    from playlisteval.models.batch.api import has_batch_api

    e = settings.estimate
    provider, _ = split_spec(judge)
    price = settings.price_for(judge)
    output = e.output_tokens.get("G", DEFAULT_OUTPUT)
    tokens_in = evidence.input_tokens
    usage = measured or Usage(
        input_tokens=tokens_in, output_tokens=output,
        thinking_tokens=int(output * e.thinking_ratio) if price.thinking else 0,
        gpu_seconds=e.gpu_seconds_per_call if provider in LOCAL else 0.0,
        cpu_seconds=tokens_in / 40 + output / 12 if provider in CPU else 0.0)
    online = pricing.usd(price, usage)
    batch = pricing.usd(price, usage, batch=has_batch_api(provider) and pricing.batchable(price))
    return JudgeCost(judge, pairs * calls_per_pair, calls_per_pair, usage, online, batch, measured is not None,
                     evidence.frames)


def estimate_judges(settings: Settings, engine: Engine, judges: list[str], options: JudgeOptions, *,
                    benchmark: str | None = None, swap: bool = False, samples: int = 1,
                    max_pairs: int | None = None, from_ledger: bool = True) -> JudgeEstimate:
    """The cost of judging the benchmark with each of ``judges`` under ``options``; raises ConfigError
    naming every judge without a price."""
    from playlisteval.benchmark.pairs import find_benchmark

    missing = [p for j in judges if (p := price_problem(settings, j))]
    if missing:
        raise ConfigError("cannot estimate the judge run:\n" + "\n".join(f"  - {p}" for p in missing))
    bench = find_benchmark(engine, benchmark or settings.select.benchmark)
    with transaction(engine) as s:
        pair_ids = sorted(int(p) for p in s.exec(select(BenchmarkPair.pair_id)
                                                 .where(BenchmarkPair.benchmark_id == bench.id)).all())
    pairs = min(len(pair_ids), max_pairs) if max_pairs is not None else len(pair_ids)
    calls_per_pair = (2 if swap else 1) * samples
    text_tokens = _text_tokens(engine, pair_ids)
    costs = []
    for judge in judges:
        evidence = _evidence(settings, judge, options, text_tokens)
        measured = (_measured(engine, int(bench.id or 0), judge, options)
                    if from_ledger and not judge.startswith(SHORTCUT) else None)
        costs.append(_judge_cost(settings, judge, evidence, calls_per_pair, pairs, measured))
    shown = _evidence(settings, judges[0], options, text_tokens)
    return JudgeEstimate(bench.name, pairs, len(pair_ids), swap, samples, options, shown, costs)
