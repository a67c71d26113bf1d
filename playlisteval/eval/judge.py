"""Judge runs (SPEC G): every benchmark pair judged once by one judge under one set of settings.

A run is identified by (benchmark, judge, settings): asking for the same run again continues it —
only pairs without a judgment are judged — so an interrupted run (Ctrl-C, a budget pause) resumes,
and a finished one is not paid for twice. The side each pair is shown on is the benchmark's shared
draw (SPEC G5), reversed by ``swap`` for the position-bias pass. Model judges play role "G" through
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

from sqlalchemy.engine import Engine
from sqlmodel import col, select

from playlisteval.config import Settings
from playlisteval.eval import shortcuts
from playlisteval.eval.corpus import Corpora, load_questions
from playlisteval.eval.evidence import Retriever, select_evidence
from playlisteval.eval.judging import MODALITIES, ask, judge_input
from playlisteval.eval.options import JudgeOptions
from playlisteval.eval.parallel import run_each
from playlisteval.eval.verdicts import VERDICT, score
from playlisteval.gates.citations import strip_citations
from playlisteval.models.registry import split_spec
from playlisteval.models.request import AudioPart, GenerationSettings
from playlisteval.models.runner import Runner
from playlisteval.select.pairs import find_benchmark, pair_texts
from playlisteval.store import open_store
from playlisteval.store.engine import transaction
from playlisteval.store.tables import BenchmarkPair, JudgeRun, Judgment, now

ROLE = "G"
PURPOSE = "eval"
Tick = Callable[[int, int], None]  # (pairs judged, pairs in the run)


@dataclass
class RunSummary:
    run_id: int
    judge: str
    options: JudgeOptions
    pairs: int
    judged_now: int
    accuracy: float
    outcomes: dict[str, int] = field(default_factory=dict)
    by_domain: dict[str, float] = field(default_factory=dict)

    @property
    def no_verdict(self) -> int:
        return sum(n for outcome, n in self.outcomes.items() if outcome != VERDICT)


def _run_for(engine: Engine, benchmark_id: int, judge: str, options: JudgeOptions) -> JudgeRun:
    """The run with exactly these settings, or a new one."""
    wanted = options.as_settings()
    with transaction(engine) as s:
        for run in s.exec(select(JudgeRun).where(JudgeRun.benchmark_id == benchmark_id, JudgeRun.judge == judge,
                                                 JudgeRun.swapped == options.swap)).all():
            if run.settings == wanted:
                return run
        run = JudgeRun(benchmark_id=benchmark_id, judge=judge, evidence=options.evidence, scope=options.scope,
                       swapped=options.swap, settings=wanted, modality=options.modality)
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
    progress = {"done": len(done)}
    lock = threading.Lock()
    seed = settings.project.seed

    def one_item(item_id: int) -> None:
        question = questions[item_id]
        record: dict[str, Any] = {"mode": "none"}
        transcript, given = "", None
        if needs_evidence:
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
        rows = []
        for pair_id in todo[item_id]:
            a_is_better = sides[pair_id] != options.swap
            answer_a, answer_b = texts[pair_id].shown(a_is_better)
            verdict: str | None
            if given is None:
                verdict, raw = shortcuts.judge(judge, seed, pair_id, strip_citations(answer_a),
                                               strip_citations(answer_b), transcript,
                                               salt="swapped" if options.swap else "")
                outcome, call_id = VERDICT, 0
            else:
                assert runner is not None
                reply = ask(runner, judge, ROLE, question.text, answer_a, answer_b, given, generation,
                            purpose=PURPOSE, item_id=item_id, run_id=run_id)
                verdict, raw, outcome, call_id = reply.verdict, reply.raw, reply.outcome, reply.call_id
            rows.append(Judgment(run_id=run_id, pair_id=pair_id, a_is_better=a_is_better, verdict=verdict,
                                 score=score(verdict, a_is_better), raw=raw, evidence=record, outcome=outcome,
                                 call_id=call_id))
        with transaction(engine) as s:
            have = set(s.exec(select(Judgment.pair_id).where(Judgment.run_id == run_id,
                                                             col(Judgment.pair_id).in_(todo[item_id]))).all())
            s.add_all([r for r in rows if r.pair_id not in have])  # another process may have raced us
        with lock:
            progress["done"] += len(rows)
            if tick:
                tick(progress["done"], len(sides))

    if tick:
        tick(progress["done"], len(sides))
    run_each(one_item, sorted(todo), settings.eval.workers)
    with transaction(engine) as s:
        row = s.get(JudgeRun, run_id)
        if row is not None and not row.finished_at:
            row.finished_at = now()
            s.add(row)
    return summarize(engine, run_id, options, judged_now=sum(len(v) for v in todo.values()))


def summarize(engine: Engine, run_id: int, options: JudgeOptions, judged_now: int = 0) -> RunSummary:
    with transaction(engine) as s:
        run = s.get(JudgeRun, run_id)
        assert run is not None
        rows = s.exec(select(Judgment.pair_id, Judgment.score, Judgment.outcome).where(Judgment.run_id == run_id)).all()
    texts = pair_texts(engine, [int(p) for p, _, _ in rows])
    per_domain: dict[str, list[float]] = defaultdict(list)
    for pair_id, value, _ in rows:
        per_domain[texts[int(pair_id)].domain].append(float(value))
    scores = [float(v) for _, v, _ in rows]
    return RunSummary(
        run_id=run_id, judge=run.judge, options=options, pairs=len(rows), judged_now=judged_now,
        accuracy=sum(scores) / len(scores) if scores else 0.0,
        outcomes=dict(Counter(str(o) for _, _, o in rows)),
        by_domain={d: sum(v) / len(v) for d, v in sorted(per_domain.items())},
    )
