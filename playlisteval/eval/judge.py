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
Each question of a run is one job of the ``eval`` queue (actors/evaluation.py): judged on worker threads in
this process by default, or by the ``playlisteval worker`` processes with Redis. Every judgment stores
exactly what was shown (chunks, frames with their timestamps, transcript lines,
audio files) and how the reply ended.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import col, select

from playlisteval.actors import jobs
from playlisteval.actors.evaluation import run_jobs
from playlisteval.benchmark.names import check_judge_name
from playlisteval.benchmark.pairs import find_benchmark, pair_texts
from playlisteval.build.gates.citations import strip_citations
from playlisteval.config import Settings
from playlisteval.errors import MediaError, ModelError, StateError
from playlisteval.eval import shortcuts
from playlisteval.eval.bounds import first_pairs
from playlisteval.eval.corpus import Corpora, load_questions
from playlisteval.eval.evidence import Retriever, select_evidence
from playlisteval.eval.judging import MODALITIES, ask, judge_input
from playlisteval.eval.options import JudgeOptions
from playlisteval.eval.parallel import map_ordered
from playlisteval.eval.reward import ask_reward, is_reward_judge
from playlisteval.eval.run_summary import RunSummary, summarize
from playlisteval.eval.runs import record as record_results
from playlisteval.eval.verdicts import ERROR, VERDICT, score
from playlisteval.logs import get_logger
from playlisteval.models.adaptive import call_threads
from playlisteval.models.batch.lifecycle import Deferred
from playlisteval.models.call_rate import of_run
from playlisteval.models.registry import split_spec
from playlisteval.models.request import AudioPart, GenerationSettings
from playlisteval.models.runner import Runner
from playlisteval.store import open_store, versions
from playlisteval.store.engine import transaction
from playlisteval.store.tables import BenchmarkPair, JudgeRun, Judgment, Pair, now

log = get_logger(__name__)

ROLE = "G"
PURPOSE = "eval"
Tick = Callable[[int, int], None]  # (pairs judged, pairs in the run)


def _run_for(engine: Engine, benchmark_id: int, judge: str, options: JudgeOptions) -> JudgeRun:
    """The run with exactly these options, or a new one."""
    wanted = options.as_settings()
    version = versions.version_number(engine, benchmark_id)  # the version it is made on (issue 22)
    with transaction(engine) as s:
        run = s.exec(select(JudgeRun).where(JudgeRun.benchmark_id == benchmark_id, JudgeRun.judge == judge,
                                            JudgeRun.options_hash == options.options_hash)
                     .order_by(col(JudgeRun.id))).first()
        if run is not None:
            return run
        run = JudgeRun(benchmark_id=benchmark_id, judge=judge, evidence=options.evidence, scope=options.scope,
                       swapped=options.swap, settings=wanted, modality=options.modality,
                       options_hash=options.options_hash,
                       benchmark_version=version)
        s.add(run)
        s.flush()
        return run


def run_judge(settings: Settings, judge: str, options: JudgeOptions, benchmark: str | None = None, *,
              runner: Runner | None = None, tick: Tick | None = None, wait: bool = True,
              max_pairs: int | None = None) -> RunSummary:
    """Judge the benchmark's pairs that have no judgment in this run yet. ``wait=False`` (Redis): send the
    questions to the workers and return at once with the run as it stands. ``max_pairs``: only the
    benchmark's first N pairs by content key (eval/bounds.py); the run stays incomplete beyond them."""
    engine = open_store(settings)
    judge = check_judge_name(judge)  # one line of printable text, as a benchmark name (issue 44)
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
    if max_pairs is not None:  # `--max-pairs N` (issue 42): the first N pairs by content key
        sides = {p: sides[p] for p in first_pairs(engine, sides, max_pairs)}
        done &= set(sides)
    texts = pair_texts(engine, [p for p in sides if p not in done])
    items = sorted({t.item_id for t in texts.values()})
    progress = {"done": len(done)}

    def moved(tally: jobs.Tally) -> None:
        now_done = len(done) + sum(int(r.get("pairs", 0)) for r in tally.results)
        if tick and now_done != progress["done"]:
            tick(now_done, len(sides))
        progress["done"] = now_done

    if tick:
        tick(progress["done"], len(sides))
    payload = {"judge": judge, "options": asdict(options), "budget_usd": settings.eval.budget_usd}
    bounded = None if max_pairs is None else {i: {"pairs": sorted(p for p, t in texts.items() if t.item_id == i)}
                                              for i in items}
    # questions at once: enough for the judge's provider to reach its ceiling (the adaptive limit gates them)
    threads = 1 if shortcut else call_threads(settings, judge)
    pass_started = now()
    out = run_jobs(settings, "judge", run_id, items, payload, runner=runner, wait=wait, progress=moved,
                   payloads=bounded, threads=threads)
    if not out.waited:
        return summarize(engine, run_id, options)
    judged_now = sum(int(r.get("judged_now", 0)) for r in out.tally.results)
    with transaction(engine) as s:
        row = s.get(JudgeRun, run_id)
        if row is not None and (items or not row.finished_at):
            row.finished_at = now()  # this pass ended: finished, or incomplete if errors remain
            s.add(row)
    stop_reason, stop_error = out.stopped
    if stop_reason:
        log.warning("eval.stopped", run_id=run_id, judge=judge, reason=stop_reason, error=stop_error)
    summary = summarize(engine, run_id, options, judged_now=judged_now)
    summary.stopped = stop_reason
    if not shortcut:
        summary.calls = of_run(engine, run_id, PURPOSE, since=pass_started)
    return summary


_passes: dict[str, tuple[Corpora, Retriever | None]] = {}
_passes_lock = threading.Lock()


def _pass_context(settings: Settings, engine: Engine, pass_id: str, options: JudgeOptions,
                  needs_evidence: bool) -> tuple[Corpora, Retriever | None]:
    """The corpora (and retriever) of one pass, made once per process: read by all its questions."""
    with _passes_lock:
        if pass_id not in _passes:
            while len(_passes) >= 4:
                _passes.pop(next(iter(_passes)))
            retriever = (Retriever(engine, settings, options.retriever)
                         if needs_evidence and (options.evidence == "retrieved" or options.agentic) else None)
            _passes[pass_id] = (Corpora(engine, settings), retriever)
        return _passes[pass_id]


def options_of(payload: dict[str, Any]) -> JudgeOptions:
    data = dict(payload)
    data["size"] = tuple(data["size"])
    return JudgeOptions(**data)


def judge_job(settings: Settings, engine: Engine, runner: Runner, job: jobs.Job) -> dict[str, Any]:
    """One question of a judge run (the ``judge_question`` actor's work): its pairs without a judgment
    asked, judgments and errors recorded; returns the question's counts."""
    run_id, item_id = job.run_id, job.item_id
    judge: str = job.payload["judge"]
    options = options_of(job.payload["options"])
    with transaction(engine) as s:
        run = s.get(JudgeRun, run_id)
        if run is None:
            raise StateError(f"judge run {run_id} is gone (eval drop?)")
        sides = {int(p): bool(a) for p, a in s.exec(
            select(BenchmarkPair.pair_id, BenchmarkPair.a_is_better)
            .join(Pair, col(Pair.id) == col(BenchmarkPair.pair_id))
            .where(BenchmarkPair.benchmark_id == run.benchmark_id, Pair.item_id == item_id)).all()}
        done = set(s.exec(select(Judgment.pair_id).where(Judgment.run_id == run_id,
                                                         col(Judgment.pair_id).in_(list(sides)))).all())
    only = job.payload.get("pairs")  # `--max-pairs`: this question's pairs within the bound
    pair_ids = sorted(p for p in sides if p not in done and (only is None or p in only))
    if not pair_ids:
        return {"pairs": 0, "judged_now": 0}
    texts = pair_texts(engine, pair_ids)
    shortcut = shortcuts.is_shortcut(judge)
    needs_evidence = not shortcut or shortcuts.needs_transcript(judge)
    corpora, retriever = _pass_context(settings, engine, job.pass_id, options, needs_evidence)
    toolbox = None
    if options.agentic:  # the judge finds its own evidence (eval/agent.py): nothing is selected for it
        if shortcut:
            raise StateError(f"{judge} calls no model: --agentic needs a model judge")
        needs_evidence = False
    question = load_questions(engine, [item_id])[item_id]
    generation = GenerationSettings(thinking=options.thinking or None,
                                    media_resolution=options.media_resolution or None,
                                    temperature=options.temperature)  # issue 21: a sampled run's temperature
    seed = settings.project.seed
    stop = {"reason": "", "error": ""}

    def stopped() -> bool:
        """Whether this pass was stopped, here or by another question (in another process, too)."""
        if not stop["reason"]:
            stop["reason"], stop["error"] = jobs.stop_of(engine, job.pass_id)
        return bool(stop["reason"])

    def not_asked() -> str:
        return f"not asked: an earlier call failed with {stop['error']}"

    record: dict[str, Any] = {"mode": "none"}
    transcript, given = "", None
    failed: dict[int, tuple[str, bool]] = {}
    rows = []
    reward = False  # a classifier reward model (SPEC G7): each answer scored on its own (eval/reward.py)
    if not shortcut:
        try:
            reward = is_reward_judge(runner, judge)
        except ModelError as exc:  # its kind cannot even be read: every pair is an error, never a 0.5
            failed = {p: (f"{type(exc).__name__}: {exc}", False) for p in pair_ids}
        if reward and options.agentic:
            failed = {p: (f"{judge} is a reward model: it scores an answer, it cannot call tools (--agentic)", False)
                      for p in pair_ids}
    try:
        if options.agentic:
            from playlisteval.eval.agent_tools import Toolbox

            toolbox = Toolbox(settings, question, corpora.scope(question, options.scope), retriever, options.size)
        if needs_evidence and not failed and not stopped():
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
        failed = {p: (f"evidence: {exc}", False) for p in pair_ids}
    stop_lock = threading.Lock()

    def judge_pair(pair_id: int) -> Judgment | tuple[str, bool] | None:
        """One pair: its judgment, its failure (error, asked), or None (deferred to a batch). Pairs of a
        question may be asked at once (``call_threads``): the stop is read and set under a lock."""
        with stop_lock:
            if stopped():
                return (not_asked(), False)
        a_is_better = sides[pair_id] != options.swap
        answer_a, answer_b = texts[pair_id].shown(a_is_better)
        verdict: str | None
        shown = record
        if shortcut:
            verdict, raw = shortcuts.judge(judge, seed, pair_id, strip_citations(answer_a),
                                           strip_citations(answer_b), transcript,
                                           salt="swapped" if options.swap else "")
            outcome, call_id = VERDICT, 0
        else:
            try:
                if toolbox is not None:
                    from playlisteval.eval.agent import ask_agentic

                    reply, shown = ask_agentic(runner, judge, ROLE, question.text, answer_a, answer_b, toolbox,
                                               generation, purpose=PURPOSE, item_id=item_id, run_id=run_id,
                                               scope=options.scope)
                else:
                    assert given is not None
                    # a sample's index is its attempt: N samples are N requests, never one cached answer
                    reply = (ask_reward if reward else ask)(runner, judge, ROLE, question.text, answer_a,
                                                            answer_b, given, generation, purpose=PURPOSE,
                                                            item_id=item_id, run_id=run_id, attempt=options.sample)
            except Deferred:  # `eval judge --batch`: its answer comes from a batch; the next pass judges it
                return None
            if reply.outcome == ERROR:
                if reply.stop:
                    with stop_lock:
                        jobs.set_stop(engine, job.pass_id, reply.stop, reply.error)
                        stop["reason"] = ""
                        stopped()  # the pass's first stop is the one reported
                return (reply.error, True)
            verdict, raw, outcome, call_id = reply.verdict, reply.raw, reply.outcome, reply.call_id
        return Judgment(run_id=run_id, pair_id=pair_id, a_is_better=a_is_better, verdict=verdict,
                        score=score(verdict, a_is_better), raw=raw, evidence=shown, outcome=outcome,
                        call_id=call_id)

    todo = [p for p in pair_ids if p not in failed]
    # a remote judge's pairs are asked at once, up to its provider's ceiling; the agentic judge's toolbox
    # and the local providers keep one pair at a time
    threads = 1 if shortcut or toolbox is not None else call_threads(settings, judge)
    for pair_id, result in zip(todo, map_ordered(judge_pair, todo, threads), strict=True):
        if isinstance(result, Judgment):
            rows.append(result)
        elif result is not None:
            failed[pair_id] = result
    added = record_results(engine, run_id, item_id, rows, failed)
    return {"pairs": len(pair_ids), "judged_now": added}
