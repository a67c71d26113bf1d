"""A judge run as an Inspect AI eval log (issue 41 item 6): `playlisteval eval export RUN OUT`.

Why Inspect's format: it is what evaluation people already open (``inspect view``) and what new harnesses
read; the log is built from ``inspect_ai.log``'s own types and written by its own ``write_eval_log``, so
what Inspect reads back is what it would have written — no hand-made JSON that drifts from its schema.
``inspect_ai`` is an optional extra (``pip install 'playlisteval[inspect]'``); without it the command
is an error that names the extra.

One sample per judged pair: input = the prompt the judge was given, as the ledger kept it; output and
messages = its reply; target = the letter of the intended answer as shown; the score ``verdict`` is
Inspect's C (correct) / I (incorrect) / N (no answer). No verdict is N — never C, never a partial 0.5
(Inspect's P): this project scores it 0.5 in its own accuracy (SPEC G4), which the log's results carry as
``pairwise_accuracy`` next to the three counts. Tokens, dollars and the evidence served are sample
metadata. Pairs the run could not judge (failed calls, pairs never asked) are no samples: the log's
status is then ``error``, naming how many, so a partial run never reads as a finished one.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from playlisteval.errors import ConfigError
from playlisteval.eval.run_records import PairRecord, RunRecord
from playlisteval.logs.redaction import redact_known
from playlisteval.version import __version__

EXTRA = "pip install 'playlisteval[inspect]'"
SCORER = "verdict"
NO_PROMPT = "(no prompt: this judge calls no model here — a shortcut judge, or verdicts imported from a file)"
_REASONS = {"refusal": "refusal", "no_verdict": "invalid_response_format", "tie": "invalid_response_format"}


def _inspect() -> Any:
    try:
        import inspect_ai.log as inspect_log
    except ImportError as exc:
        raise ConfigError(f"`eval export` writes Inspect AI logs with the inspect_ai package, which is not "
                          f"installed ({exc}): {EXTRA}") from exc
    return inspect_log


def _iso(t: float | None) -> str:
    return datetime.fromtimestamp(float(t or 0.0), UTC).isoformat()


def _value(pair: PairRecord) -> str:
    from inspect_ai.scorer import CORRECT, INCORRECT, NOANSWER

    return NOANSWER if pair.correct is None else CORRECT if pair.correct else INCORRECT


def _metadata(pair: PairRecord, spent: bool) -> dict[str, Any]:
    """``spent``: False for a rescore (eval/rescore.py), whose judgments point at the calls of the run it re-read:
    their tokens are what the judge was given, their dollars were that run's, never counted twice."""
    call, reported = pair.call, pair.evidence  # an imported run keeps the tokens its file reported, unpriced
    return {
        "pair_id": pair.pair_id, "pair_key": pair.key, "domain": pair.domain, "verdict": pair.verdict,
        "outcome": pair.outcome, "a_is_better": pair.a_is_better,
        "prompt_stored": pair.prompt is not None,
        "input_tokens": call.input_tokens if call else reported.get("input_tokens"),
        "output_tokens": call.output_tokens if call else reported.get("output_tokens"),
        "thinking_tokens": call.thinking_tokens if call else None, "usd": call.usd if call and spent else None,
        "estimated_usd": call.estimated_usd if call and spent else None,
        "cache_hit": call.cache_hit if call else None,
        "call_id": call.call_id if call else None, "provider": call.provider if call else None,
        "evidence": pair.evidence,
    }


def _sample(pair: PairRecord, model: str, spent: bool) -> Any:
    from inspect_ai.log import EvalSample
    from inspect_ai.model import ChatMessageAssistant, ChatMessageUser, ModelOutput, ModelUsage
    from inspect_ai.scorer import Score

    call = pair.call
    prompt = redact_known(pair.prompt) if pair.prompt is not None else NO_PROMPT
    reply = redact_known(pair.reply)
    usage = None if call is None else ModelUsage(
        input_tokens=call.input_tokens, output_tokens=call.output_tokens,
        total_tokens=call.input_tokens + call.output_tokens + call.thinking_tokens,
        reasoning_tokens=call.thinking_tokens or None, total_cost=call.usd if spent else None)
    output = ModelOutput.from_content(model, reply)
    output.usage = usage
    said = {None: "no verdict", True: "the intended answer", False: "the other answer"}[pair.correct]
    score = Score(value=_value(pair), answer=pair.verdict, reason=_REASONS.get(pair.outcome),
                  explanation=f"verdict {pair.verdict or 'none'} ({pair.outcome}): {said}; intended {pair.target}",
                  metadata={"outcome": pair.outcome})
    return EvalSample(
        id=pair.key, epoch=1, input=prompt, target=pair.target, choices=None,
        messages=[ChatMessageUser(content=prompt), ChatMessageAssistant(content=reply, model=model)],
        output=output, scores={SCORER: score}, metadata=_metadata(pair, spent),
        model_usage={model: usage} if usage else {},
        started_at=_iso(call.created_at) if call else None,
        completed_at=_iso(call.finished_at) if call and call.finished_at else None,
        total_time=call.latency_s if call else None)


def _results(run: RunRecord) -> Any:
    from inspect_ai.log import EvalMetric, EvalResults, EvalScore

    right = sum(p.correct is True for p in run.pairs)
    wrong = sum(p.correct is False for p in run.pairs)
    none = sum(p.correct is None for p in run.pairs)
    judged = len(run.pairs)
    accuracy = (right + 0.5 * none) / judged if judged else None
    metrics = {"correct": EvalMetric(name="correct", value=right),
               "incorrect": EvalMetric(name="incorrect", value=wrong),
               "no_verdict": EvalMetric(name="no_verdict", value=none)}
    if accuracy is not None:  # no pair judged: no accuracy at all, never a 0
        metrics = {"pairwise_accuracy": EvalMetric(
            name="pairwise_accuracy", value=accuracy,
            metadata={"definition": "playlisteval's pairwise accuracy (SPEC G4, G8): a pick of the intended "
                                    "answer 1, of the other 0, no verdict 0.5, over the judged pairs"}),
                   **metrics}
    return EvalResults(total_samples=run.benchmark_pairs, completed_samples=judged, scores=[EvalScore(
        name=SCORER, scorer="playlisteval", scored_samples=right + wrong, unscored_samples=none, metrics=metrics)])


def build_log(run: RunRecord) -> Any:
    """The run as an ``inspect_ai.log.EvalLog`` (inspect_ai must be installed)."""
    _inspect()  # the error naming the extra, before anything else is imported from it
    from inspect_ai.log import EvalConfig, EvalDataset, EvalError, EvalLog, EvalSpec, EvalStats
    from inspect_ai.model import ModelUsage

    model = run.judge
    rescore_of = run.settings.get("rescore_of")
    samples = [_sample(p, model, rescore_of is None) for p in run.pairs]
    total = ModelUsage()
    for s in samples:
        for usage in s.model_usage.values():
            total = total + usage
    ident = hashlib.sha256(f"{run.benchmark}\x1f{run.run_id}\x1f{run.options_hash}".encode()).hexdigest()[:22]
    spec = EvalSpec(
        eval_id=ident, run_id=f"playlisteval-run-{run.run_id}", created=_iso(run.created_at),
        task=f"playlisteval/{run.benchmark}", task_id=f"{run.benchmark}-v{run.benchmark_version}",
        task_version=run.benchmark_version, task_display_name=f"{run.benchmark} (run {run.run_id})",
        dataset=EvalDataset(name=run.benchmark, samples=run.benchmark_pairs, sample_ids=[p.key for p in run.pairs]),
        model=model, config=EvalConfig(epochs=1), packages={"playlisteval": __version__},
        metadata={"playlisteval_run": run.run_id, "benchmark_version": run.benchmark_version,
                  "evidence": run.evidence, "scope": run.scope, "swapped": run.swapped, "modality": run.modality,
                  "options_hash": run.options_hash, "settings": run.settings, "rescore_of": rescore_of,
                  "judged": len(run.pairs), "errors": len(run.errors), "not_asked": run.not_asked})
    unfinished = len(run.errors) + run.not_asked
    error = None
    if unfinished:
        message = (f"judge run {run.run_id} is incomplete: {len(run.errors)} pair(s) failed and {run.not_asked} "
                   f"were never asked, of {run.benchmark_pairs}; they are not samples here (run the same "
                   "`eval judge` command again, then export)")
        error = EvalError(message=message, traceback=message, traceback_ansi=message)
    log = EvalLog(status="error" if unfinished else "success", eval=spec, results=_results(run),
                  stats=EvalStats(started_at=_iso(run.created_at),
                                  completed_at=_iso(run.finished_at) if run.finished_at else "",
                                  model_usage={model: total} if samples and any(s.model_usage for s in samples)
                                  else {}),
                  error=error, samples=samples)
    return log


@dataclass
class Exported:
    path: Path
    samples: int
    errors: int
    not_asked: int


def log_path(run: RunRecord, out: Path) -> Path:
    """OUT itself when it names an .eval or .json file; else a file in folder OUT, named as Inspect names its
    logs (time, task, id), so ``inspect view --log-dir OUT`` lists it."""
    if out.suffix in (".eval", ".json"):
        return out
    stamp = datetime.fromtimestamp(run.created_at, UTC).strftime("%Y-%m-%dT%H-%M-%S+00-00")
    safe = "".join(c if c.isalnum() or c in "-_" else "-" for c in run.benchmark)
    return out / f"{stamp}_playlisteval-{safe}-run-{run.run_id}.eval"


def write(run: RunRecord, out: Path) -> Exported:
    inspect_log = _inspect()
    log = build_log(run)
    path = log_path(run, out)
    path.parent.mkdir(parents=True, exist_ok=True)
    inspect_log.write_eval_log(log, str(path))
    return Exported(path, len(run.pairs), len(run.errors), run.not_asked)
