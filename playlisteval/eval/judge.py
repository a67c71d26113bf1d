"""Judge runs (SPEC G): every benchmark pair judged once by one judge under one set of settings.

A run is identified by (benchmark, judge, options hash — eval/runkey.py): asking for the same run again
continues it — only pairs without a judgment are asked — so an interrupted run (Ctrl-C, a budget pause)
resumes, a finished one is not paid for twice, and the pairs whose call failed are asked again.
A failed call (a provider error, a missing key, the quota, the budget) is an error of the run, never a
judgment and never a score (issue 9); after a failure that every later call would share (no key, no
budget, no quota) the pass asks nothing more and records the rest as not asked.

The side each pair is shown on is the benchmark's shared draw (SPEC G5), reversed by ``swap`` for the
position-bias pass. Model judges play role "G" through
the runner with purpose "eval" and the run's id on the ledger (SPEC K4); shortcut judges call nothing.
Every judgment stores exactly what was shown (chunks, frames with their timestamps, transcript lines,
audio files) and how the reply ended.
"""

from __future__ import annotations

import threading
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import structlog
from sqlalchemy.engine import Engine
from sqlmodel import col, select

from playlisteval.config import Settings
from playlisteval.errors import MediaError
from playlisteval.eval import shortcuts
from playlisteval.eval.corpus import Corpora, load_questions
from playlisteval.eval.evidence import Retriever, select_evidence
from playlisteval.eval.judging import MODALITIES, ask, judge_input
from playlisteval.eval.options import JudgeOptions
from playlisteval.eval.parallel import run_each
from playlisteval.eval.runs import record as record_results
from playlisteval.eval.runs import run_counts, state_of
from playlisteval.eval.verdicts import ERROR, VERDICT, score
from playlisteval.gates.citations import strip_citations
from playlisteval.models.batch import Deferred
from playlisteval.models.registry import split_spec
from playlisteval.models.request import AudioPart, GenerationSettings
from playlisteval.models.runner import Runner
from playlisteval.select.pairs import find_benchmark, pair_texts
from playlisteval.store import open_store
from playlisteval.store.engine import transaction
from playlisteval.store.tables import BenchmarkPair, JudgeError, JudgeRun, Judgment, now

log = structlog.get_logger(__name__)

ROLE = "G"
PURPOSE = "eval"
Tick = Callable[[int, int], None]  # (pairs judged, pairs in the run)


@dataclass
class RunSummary:
    run_id: int
    judge: str
    options: JudgeOptions
    pairs: int  # the benchmark's pairs
    judged_now: int  # judgments made by this pass
    accuracy: float | None  # over the judged pairs (no verdict scores 0.5); None when none is judged
    judged: int = 0
    errors: int = 0  # pairs whose call failed: no judgment, asked again by the next pass
    outcomes: dict[str, int] = field(default_factory=dict)
    by_domain: dict[str, float] = field(default_factory=dict)
    stopped: str = ""  # budget / quota / unavailable: why this pass stopped asking
    error_messages: list[str] = field(default_factory=list)  # distinct, most frequent first
    finished_at: float = 0.0

    @property
    def no_verdict(self) -> int:
        return sum(n for outcome, n in self.outcomes.items() if outcome != VERDICT)

    @property
    def pending(self) -> int:
        return max(0, self.pairs - self.judged - self.errors)

    @property
    def state(self) -> str:
        return state_of(self.finished_at, self.pairs, self.judged, self.errors)


def _run_for(engine: Engine, benchmark_id: int, judge: str, options: JudgeOptions) -> JudgeRun:
    """The run with exactly these options, or a new one."""
    wanted = options.as_settings()
    with transaction(engine) as s:
        run = s.exec(select(JudgeRun).where(JudgeRun.benchmark_id == benchmark_id, JudgeRun.judge == judge,
                                            JudgeRun.options_hash == options.options_hash)
                     .order_by(col(JudgeRun.id))).first()
        if run is not None:
            return run
        run = JudgeRun(benchmark_id=benchmark_id, judge=judge, evidence=options.evidence, scope=options.scope,
                       swapped=options.swap, settings=wanted, modality=options.modality,
                       options_hash=options.options_hash)
        s.add(run)
        s.flush()
        return run


def run_judge(settings: Settings, judge: str, options: JudgeOptions, benchmark: str | None = None, *,
              runner: Runner | None = None, tick: Tick | None = None) -> RunSummary:
    engine = open_store(settings)
    shortcut = shortcuts.is_shortcut(judge)
    if shortcut:
        shortcuts.shortcut_name(judge)
    else:
        split_spec(judge)  # a bad spec fails before anything is written
    bench = find_benchmark(engine, benchmark or settings.select.benchmark)
    run = _run_for(engine, int(bench.id or 0), judge, options)
    run_id = int(run.id or 0)
    with transaction(engine) as s:
        sides = {int(p): bool(a) for p, a in s.exec(select(BenchmarkPair.pair_id, BenchmarkPair.a_is_better)
                                                     .where(BenchmarkPair.benchmark_id == bench.id)).all()}
        done = set(s.exec(select(Judgment.pair_id).where(Judgment.run_id == run_id)).all())
        if len(done) < len(sides):
            row = s.get(JudgeRun, run_id)
            if row is not None:
                row.finished_at = 0.0  # a pass is under way
                s.add(row)
    texts = pair_texts(engine, [p for p in sides if p not in done])
    todo: dict[int, list[int]] = defaultdict(list)
    for pair_id in sorted(texts):
        todo[texts[pair_id].item_id].append(pair_id)
    needs_evidence = not shortcut or shortcuts.needs_transcript(judge)
    questions = load_questions(engine, list(todo))
    corpora = Corpora(engine, settings)
    retriever = (Retriever(engine, settings, options.retriever)
                 if needs_evidence and options.evidence == "retrieved" and todo else None)
    runner = runner or (None if shortcut else Runner(settings, engine))
    generation = GenerationSettings(thinking=options.thinking or None,
                                    media_resolution=options.media_resolution or None)
    progress = {"done": len(done), "judged_now": 0}
    stop = {"reason": "", "error": ""}
    lock = threading.Lock()
    seed = settings.project.seed

    def not_asked() -> str:
        return f"not asked: an earlier call failed with {stop['error']}"

    def one_item(item_id: int) -> None:
        question = questions[item_id]
        record: dict[str, Any] = {"mode": "none"}
        transcript, given = "", None
        failed: dict[int, tuple[str, bool]] = {}
        rows = []
        try:
            if needs_evidence and not stop["reason"]:
                evidence = select_evidence(corpora, retriever, question, options.evidence, options.scope,
                                           options.frames, options.frames_per_chunk)
                transcript = evidence.transcript_block()
                record = evidence.record()
                if not shortcut:
                    given = judge_input(settings, evidence, options.modality, options.size, options.audio)
                    frames_shown, stream = MODALITIES[options.modality]
                    record.update(modality=options.modality, frames_shown=frames_shown, stream=stream,
                                  frame_size=f"{options.size[0]}x{options.size[1]}",
                                  audio=[p.path for p in given.media if isinstance(p, AudioPart)],
                                  transcript_lines=len(given.transcript.splitlines()) if given.transcript else 0)
        except MediaError as exc:  # this question's media could not be read: its pairs fail, the run goes on
            failed = {p: (f"evidence: {exc}", False) for p in todo[item_id]}
        for pair_id in todo[item_id]:
            if pair_id in failed:
                continue
            if stop["reason"]:
                failed[pair_id] = (not_asked(), False)
                continue
            a_is_better = sides[pair_id] != options.swap
            answer_a, answer_b = texts[pair_id].shown(a_is_better)
            verdict: str | None
            if shortcut:
                verdict, raw = shortcuts.judge(judge, seed, pair_id, strip_citations(answer_a),
                                               strip_citations(answer_b), transcript,
                                               salt="swapped" if options.swap else "")
                outcome, call_id = VERDICT, 0
            else:
                assert runner is not None and given is not None
                try:
                    reply = ask(runner, judge, ROLE, question.text, answer_a, answer_b, given, generation,
                                purpose=PURPOSE, item_id=item_id, run_id=run_id)
                except Deferred:  # `eval judge --batch`: its answer comes from a batch; the next pass judges it
                    continue
                if reply.outcome == ERROR:
                    failed[pair_id] = (reply.error, True)
                    if reply.stop:
                        with lock:
                            if not stop["reason"]:
                                stop.update(reason=reply.stop, error=reply.error)
                    continue
                verdict, raw, outcome, call_id = reply.verdict, reply.raw, reply.outcome, reply.call_id
            rows.append(Judgment(run_id=run_id, pair_id=pair_id, a_is_better=a_is_better, verdict=verdict,
                                 score=score(verdict, a_is_better), raw=raw, evidence=record, outcome=outcome,
                                 call_id=call_id))
        added = record_results(engine, run_id, item_id, rows, failed)
        with lock:
            progress["done"] += len(todo[item_id])
            progress["judged_now"] += added
            if tick:
                tick(progress["done"], len(sides))

    if tick:
        tick(progress["done"], len(sides))
    run_each(one_item, sorted(todo), settings.eval.workers)
    with transaction(engine) as s:
        row = s.get(JudgeRun, run_id)
        if row is not None and (todo or not row.finished_at):
            row.finished_at = now()  # this pass ended: finished, or incomplete if errors remain
            s.add(row)
    if stop["reason"]:
        log.warning("eval.stopped", run_id=run_id, judge=judge, reason=stop["reason"], error=stop["error"])
    summary = summarize(engine, run_id, options, judged_now=progress["judged_now"])
    summary.stopped = stop["reason"]
    return summary


def summarize(engine: Engine, run_id: int, options: JudgeOptions, judged_now: int = 0) -> RunSummary:
    with transaction(engine) as s:
        run = s.get(JudgeRun, run_id)
        assert run is not None
        rows = s.exec(select(Judgment.pair_id, Judgment.score, Judgment.outcome).where(Judgment.run_id == run_id)).all()
        messages = s.exec(select(JudgeError.error).where(JudgeError.run_id == run_id)).all()
    counts = run_counts(engine, [run_id])[run_id]
    texts = pair_texts(engine, [int(p) for p, _, _ in rows])
    per_domain: dict[str, list[float]] = defaultdict(list)
    for pair_id, value, _ in rows:
        per_domain[texts[int(pair_id)].domain].append(float(value))
    scores = [float(v) for _, v, _ in rows]
    return RunSummary(
        run_id=run_id, judge=run.judge, options=options, pairs=counts.pairs, judged_now=judged_now,
        accuracy=sum(scores) / len(scores) if scores else None, judged=len(rows), errors=counts.errors,
        outcomes=dict(Counter(str(o) for _, _, o in rows)),
        by_domain={d: sum(v) / len(v) for d, v in sorted(per_domain.items())},
        error_messages=[m for m, _ in Counter(str(m) for m in messages).most_common()],
        finished_at=run.finished_at,
    )
