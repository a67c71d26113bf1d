"""SPEC F2, the difficulty gate: two deliberately weak judges (roles F_first and F_second) judge every
pair with the G4 prompt; a pair is kept iff at least one of them does not pick the intended answer.

Only a reply with a verdict is evidence (issue 9). A weak judge whose call fails, or whose reply
holds no verdict (or is a refusal) after ``[build] malformed_retries`` fresh asks, is a *fault*: the
pair is neither kept nor dropped on it, its verdict stays open, and ``select`` run again asks that
judge again (a new attempt, past the response cache) while the other judge's verdict is kept. After a
failure every later call would share (no key, no budget, no quota) the pass asks nothing more.

Each question is one job of the ``select`` queue (actors/evaluation.py): judged on worker threads in this
process by default, or by the ``playlisteval worker`` processes with Redis. Each question's evidence is
chosen once (``[select] difficulty_evidence`` / ``difficulty_scope``, with
the frame settings of ``[eval]``) and shared by its ten pairs. Verdicts are written per question, so
an interrupted gate (a budget pause) resumes where it stopped. Calls are on the ledger with purpose
"select": neither the build's cost (SPEC K2) nor a judge's evaluation cost (K4).
"""

from __future__ import annotations

import threading
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import col, select

from playlisteval.actors import jobs
from playlisteval.actors.evaluation import run_jobs
from playlisteval.benchmark.pairs import pair_texts, side_of
from playlisteval.config import Settings
from playlisteval.eval.corpus import Corpora, load_questions
from playlisteval.eval.evidence import Retriever, select_evidence
from playlisteval.eval.judging import AudioOptions, JudgeInput, ask, judge_input
from playlisteval.eval.scopes import check_scope
from playlisteval.eval.verdicts import ERROR, VERDICT
from playlisteval.logs import get_logger
from playlisteval.models.batch.lifecycle import Deferred
from playlisteval.models.request import GenerationSettings
from playlisteval.models.runner import Runner
from playlisteval.select import gate_key
from playlisteval.store.engine import transaction
from playlisteval.store.tables import Pair

log = get_logger(__name__)
ROLES = ("F_first", "F_second")
PURPOSE = "select"
Tick = Callable[[int], None]


@dataclass
class GateReport:
    judged: int = 0  # pairs decided now
    kept: int = 0
    dropped: int = 0
    errors: int = 0  # weak-judge faults left by this pass: calls that failed or replies without a verdict
    undecided: int = 0  # pairs of the gated questions still without a decision (a fault): select again
    stopped: str = ""  # budget / quota / unavailable: why the pass stopped asking
    rejudged: int = 0  # decided pairs judged again: a weak judge changed since (gate_key.py)
    changed: list[str] = field(default_factory=list)  # the roles whose judge changed, with what it was
    messages: list[str] = field(default_factory=list)  # the distinct faults, most frequent first


def pending_pairs(engine: Engine, item_ids: list[int], settings: Settings | None = None) -> dict[int, list[int]]:
    """Item → its pairs that have no difficulty verdict yet; with ``settings``, also those decided on a
    weak judge's verdict that the judge configured now did not give (gate_key.py): judged again."""
    return {item: [p for p, _ in pairs] for item, pairs in _pending(engine, item_ids, settings).items()}


def _pending(engine: Engine, item_ids: list[int], settings: Settings | None) -> dict[int, list[tuple[int, str]]]:
    """Item → (pair, why) for each pair to judge: why is "" (never decided) or the stale verdict's role
    and what its judge was."""
    out: dict[int, list[tuple[int, str]]] = defaultdict(list)
    keys = {role: (gate_key.judge_key(settings, role), settings.model_for(role)) for role in ROLES} if settings else {}
    wanted = sorted(set(item_ids))
    rows: list[Any] = []
    with transaction(engine) as s:
        for start in range(0, len(wanted), 500):  # bounded IN lists: 100k items are over SQLite's limit
            query = select(Pair.id, Pair.item_id, Pair.kept, Pair.difficulty).where(
                col(Pair.item_id).in_(wanted[start:start + 500]))
            if not keys:
                query = query.where(col(Pair.kept).is_(None))
            rows += s.exec(query).all()
    rows.sort(key=lambda r: int(r[0] or 0))  # in pair id order, as one ORDER BY gave them
    for pair_id, item_id, kept, record in rows:
        if kept is None:
            out[int(item_id)].append((int(pair_id or 0), ""))
            continue
        stale = [role for role in ROLES if not gate_key.current(record, role, *keys[role])]
        if stale:
            was = (record or {}).get(stale[0]) or {}
            out[int(item_id)].append((int(pair_id or 0), f"{stale[0]} (was {was.get('model', '?')}, "
                                                         f"key {was.get(gate_key.KEY, 'not recorded')})"))
    return dict(out)


def run_gate(settings: Settings, engine: Engine, item_ids: list[int], runner: Runner | None = None,
             tick: Tick | None = None, *, wait: bool = True) -> GateReport:
    """Judge every pending pair of ``item_ids`` with both weak judges; store verdicts and ``kept``.
    ``wait=False`` (Redis): send the questions to the workers and return at once, nothing decided yet."""
    todo = _pending(engine, item_ids, settings)
    report = GateReport()
    if not todo:
        return report
    changed = Counter(why for pairs in todo.values() for _, why in pairs if why)
    report.rejudged = sum(changed.values())
    report.changed = [f"{why}: {n} pair(s) judged again" for why, n in changed.most_common()]
    if changed:
        log.info("difficulty.judges_changed", changed=report.changed)
    check_scope(settings, settings.select.difficulty_scope)
    seen = [0]

    def progress(tally: jobs.Tally) -> None:
        decided = sum(int(r.get("decided", 0)) for r in tally.results)
        if tick and decided > seen[0]:
            tick(decided - seen[0])
        seen[0] = max(seen[0], decided)

    out = run_jobs(settings, "gate", 0, sorted(todo), {"budget_usd": settings.select.budget_usd}, runner=runner,
                   wait=wait, progress=progress)
    faults: Counter[str] = Counter()
    for result in out.tally.results:
        report.judged += int(result.get("decided", 0))
        report.kept += int(result.get("kept", 0))
        report.dropped += int(result.get("dropped", 0))
        report.errors += int(result.get("errors", 0))
        faults.update({str(m): int(n) for m, n in dict(result.get("faults", {})).items()})
    report.undecided = sum(len(v) for v in pending_pairs(engine, item_ids, settings).values())
    report.stopped = out.stopped[0]
    report.messages = [m for m, _ in faults.most_common()]
    return report


_passes: dict[str, tuple[Corpora, Retriever | None]] = {}
_passes_lock = threading.Lock()


def _pass_context(settings: Settings, engine: Engine, pass_id: str) -> tuple[Corpora, Retriever | None]:
    """The corpora (and retriever) of one pass, made once per process: read by all its questions."""
    with _passes_lock:
        if pass_id not in _passes:
            while len(_passes) >= 4:
                _passes.pop(next(iter(_passes)))
            retriever = Retriever(engine, settings) if settings.select.difficulty_evidence == "retrieved" else None
            _passes[pass_id] = (Corpora(engine, settings), retriever)
        return _passes[pass_id]


def gate_job(settings: Settings, engine: Engine, runner: Runner, job: jobs.Job) -> dict[str, Any]:
    """One question of the gate (the ``gate_question`` actor's work): its pending pairs judged by both
    weak judges, verdicts and ``kept`` written in one transaction; returns the question's counts."""
    item_id = job.item_id
    pair_ids = pending_pairs(engine, [item_id], settings).get(item_id, [])
    if not pair_ids:
        return {"decided": 0}
    cfg = settings.select
    corpora, retriever = _pass_context(settings, engine, job.pass_id)
    question = load_questions(engine, [item_id])[item_id]
    models = {role: settings.model_for(role) for role in ROLES}
    keys = {role: gate_key.judge_key(settings, role) for role in ROLES}  # the judge each verdict is by
    with transaction(engine) as s:  # what an earlier pass left: the usable verdicts are kept
        earlier = {int(p or 0): dict(d) for p, d in s.exec(
            select(Pair.id, Pair.difficulty).where(col(Pair.id).in_(pair_ids))).all() if d}
    retries = max(0, settings.build.malformed_retries)
    stop = {"reason": "", "error": ""}

    def stopped() -> bool:
        """Whether this pass was stopped, here or by another question (in another process, too)."""
        if not stop["reason"]:
            stop["reason"], stop["error"] = jobs.stop_of(engine, job.pass_id)
        return bool(stop["reason"])

    def judge_once(role: str, answer_a: str, answer_b: str, given: JudgeInput, a_is_better: bool,
                   before: dict[str, Any] | None) -> dict[str, Any]:
        """One weak judge's result for one pair, asked now (``before``: its fault in an earlier pass)."""
        asked = int(before.get("asks", 0)) if before and before.get("model") == models[role] else 0
        result: dict[str, Any] = {"model": models[role], gate_key.KEY: keys[role], "verdict": None,
                                  "outcome": ERROR, "correct": False, "call_id": 0, "asks": asked}
        for _ in range(retries + 1):
            if stopped():
                result["fault"] = f"not asked: an earlier call failed with {stop['error']}"
                return result
            reply = ask(runner, models[role], role, question.text, answer_a, answer_b, given, GenerationSettings(),
                        purpose=PURPOSE, item_id=item_id, attempt=result["asks"])
            result.update(verdict=reply.verdict, outcome=reply.outcome, call_id=reply.call_id, asks=result["asks"] + 1,
                          correct=reply.outcome == VERDICT and (reply.verdict == "A") == a_is_better)
            if reply.outcome == VERDICT:
                result.pop("fault", None)
                return result
            if reply.outcome == ERROR:
                result["fault"] = reply.error
                if reply.stop:
                    jobs.set_stop(engine, job.pass_id, reply.stop, reply.error)
                    stop["reason"] = ""
                    stopped()  # the pass's first stop is the one reported
                return result  # the runner has retried what was worth retrying
            result["fault"] = f"{reply.outcome}: the reply holds no [[A]] or [[B]]"
        return result

    texts = pair_texts(engine, pair_ids)
    verdicts: dict[int, dict[str, Any]] = {}
    given: JudgeInput | None = None
    evidence_record: dict[str, Any] = {}
    for pair_id in pair_ids:
        pair = texts[pair_id]
        a_is_better = side_of(settings.project.seed, pair.key, draw="F2")  # content-keyed: any store
        answer_a, answer_b = pair.shown(a_is_better)
        before = earlier.get(pair_id) or {}
        if before.get("a_is_better") != a_is_better:
            before = {}  # shown on the other side before: those verdicts do not apply
        record: dict[str, Any] = {"a_is_better": a_is_better, "evidence": before.get("evidence", {})}
        waiting = False
        for role in ROLES:
            prior = before.get(role)
            if prior and prior.get("outcome") == VERDICT and gate_key.current(before, role, keys[role],
                                                                              models[role]):
                record[role] = prior
                continue
            if given is None and not stopped():
                evidence = select_evidence(corpora, retriever, question, cfg.difficulty_evidence,
                                           cfg.difficulty_scope, settings.eval.frames,
                                           settings.eval.frames_per_chunk)
                evidence_record = evidence.record()
                given = judge_input(settings, evidence, settings.eval.modality, settings.eval.frame_size,
                                    AudioOptions(settings.eval.audio_mode, settings.eval.audio_speed,
                                                 settings.eval.audio_pause_s))
            if given is None:  # stopped before this question's evidence was made
                record[role] = {"model": models[role], gate_key.KEY: keys[role], "verdict": None,
                                "outcome": ERROR, "correct": False,
                                "call_id": 0, "asks": int((prior or {}).get("asks", 0)),
                                "fault": f"not asked: an earlier call failed with {stop['error']}"}
                continue
            record["evidence"] = evidence_record
            try:
                record[role] = judge_once(role, answer_a, answer_b, given, a_is_better, prior)
            except Deferred:  # `select --batch`: the answer comes from a batch; the next pass decides the pair
                waiting = True
                break
        if not waiting:
            verdicts[pair_id] = record
    decided = {p: all(r[x]["outcome"] == VERDICT for x in ROLES) for p, r in verdicts.items()}
    with transaction(engine) as s:
        for row in s.exec(select(Pair).where(col(Pair.id).in_(list(verdicts)))).all():
            record = verdicts[int(row.id or 0)]
            row.difficulty = record
            # kept iff a weak judge got it wrong; open (None) while a judge has no usable verdict
            row.kept = (not all(record[role]["correct"] for role in ROLES)) if decided[int(row.id or 0)] else None
            s.add(row)
    counts: dict[str, Any] = {"decided": 0, "kept": 0, "dropped": 0, "errors": 0}
    faults: Counter[str] = Counter()
    for pair_id, record in verdicts.items():
        if not decided[pair_id]:
            counts["errors"] += sum(1 for x in ROLES if record[x]["outcome"] != VERDICT)
            faults.update(str(record[x].get("fault", "")) for x in ROLES if record[x]["outcome"] != VERDICT)
            continue
        counts["decided"] += 1
        counts["dropped" if all(record[x]["correct"] for x in ROLES) else "kept"] += 1
    counts["faults"] = dict(faults)
    return counts
