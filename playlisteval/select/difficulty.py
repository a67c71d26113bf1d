"""SPEC F2, the difficulty gate: two deliberately weak judges (roles F_first and F_second) judge every
pair with the G4 prompt; a pair is kept iff at least one of them does not pick the intended answer.

Only a reply with a verdict is evidence (issue 9). A weak judge whose call fails, or whose reply
holds no verdict (or is a refusal) after ``[build] malformed_retries`` fresh asks, is a *fault*: the
pair is neither kept nor dropped on it, its verdict stays open, and ``select`` run again asks that
judge again (a new attempt, past the response cache) while the other judge's verdict is kept. After a
failure every later call would share (no key, no budget, no quota) the pass asks nothing more.

Each question's evidence is chosen once (``[select] difficulty_evidence`` / ``difficulty_scope``, with
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

from playlisteval.config import Settings
from playlisteval.eval.corpus import Corpora, check_scope, load_questions
from playlisteval.eval.evidence import Retriever, select_evidence
from playlisteval.eval.judging import AudioOptions, JudgeInput, ask, judge_input
from playlisteval.eval.parallel import run_each
from playlisteval.eval.verdicts import ERROR, VERDICT
from playlisteval.models.batch import Deferred
from playlisteval.models.request import GenerationSettings
from playlisteval.models.runner import Runner
from playlisteval.select.pairs import pair_texts, side_of
from playlisteval.store.engine import transaction
from playlisteval.store.tables import Pair

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
    messages: list[str] = field(default_factory=list)  # the distinct faults, most frequent first


def pending_pairs(engine: Engine, item_ids: list[int]) -> dict[int, list[int]]:
    """Item → its pairs that have no difficulty verdict yet."""
    out: dict[int, list[int]] = defaultdict(list)
    with transaction(engine) as s:
        rows = s.exec(select(Pair.id, Pair.item_id).where(col(Pair.item_id).in_(item_ids),
                                                         col(Pair.kept).is_(None)).order_by(col(Pair.id))).all()
    for pair_id, item_id in rows:
        out[int(item_id)].append(int(pair_id or 0))
    return dict(out)


def run_gate(settings: Settings, engine: Engine, item_ids: list[int], runner: Runner | None = None,
             tick: Tick | None = None) -> GateReport:
    """Judge every pending pair of ``item_ids`` with both weak judges; store verdicts and ``kept``."""
    todo = pending_pairs(engine, item_ids)
    report = GateReport()
    if not todo:
        return report
    cfg = settings.select
    check_scope(settings, cfg.difficulty_scope)
    runner = runner or Runner(settings, engine)
    corpora = Corpora(engine, settings)
    retriever = Retriever(engine, settings) if cfg.difficulty_evidence == "retrieved" else None
    questions = load_questions(engine, list(todo))
    models = {role: settings.model_for(role) for role in ROLES}
    lock = threading.Lock()
    with transaction(engine) as s:  # what an earlier pass left: the usable verdicts are kept
        earlier = {int(p or 0): dict(d) for p, d in s.exec(
            select(Pair.id, Pair.difficulty).where(col(Pair.id).in_([p for ps in todo.values() for p in ps]))).all()
            if d}

    retries = max(0, settings.build.malformed_retries)
    stop = {"reason": "", "error": ""}
    faults: Counter[str] = Counter()

    def judge_once(role: str, question: str, answer_a: str, answer_b: str, given: JudgeInput, item_id: int,
                   a_is_better: bool, before: dict[str, Any] | None) -> dict[str, Any]:
        """One weak judge's result for one pair, asked now (``before``: its fault in an earlier pass)."""
        asked = int(before.get("asks", 0)) if before and before.get("model") == models[role] else 0
        result: dict[str, Any] = {"model": models[role], "verdict": None, "outcome": ERROR, "correct": False,
                                  "call_id": 0, "asks": asked}
        for _ in range(retries + 1):
            if stop["reason"]:
                result["fault"] = f"not asked: an earlier call failed with {stop['error']}"
                return result
            reply = ask(runner, models[role], role, question, answer_a, answer_b, given, GenerationSettings(),
                        purpose=PURPOSE, item_id=item_id, attempt=result["asks"])
            result.update(verdict=reply.verdict, outcome=reply.outcome, call_id=reply.call_id, asks=result["asks"] + 1,
                          correct=reply.outcome == VERDICT and (reply.verdict == "A") == a_is_better)
            if reply.outcome == VERDICT:
                result.pop("fault", None)
                return result
            if reply.outcome == ERROR:
                result["fault"] = reply.error
                if reply.stop:
                    with lock:
                        if not stop["reason"]:
                            stop.update(reason=reply.stop, error=reply.error)
                return result  # the runner has retried what was worth retrying
            result["fault"] = f"{reply.outcome}: the reply holds no [[A]] or [[B]]"
        return result

    def one_item(item_id: int) -> None:
        question = questions[item_id]
        texts = pair_texts(engine, todo[item_id])
        verdicts: dict[int, dict[str, Any]] = {}
        given: JudgeInput | None = None
        evidence_record: dict[str, Any] = {}
        for pair_id in todo[item_id]:
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
                if prior and prior.get("outcome") == VERDICT and prior.get("model") == models[role]:
                    record[role] = prior
                    continue
                if given is None and not stop["reason"]:
                    evidence = select_evidence(corpora, retriever, question, cfg.difficulty_evidence,
                                               cfg.difficulty_scope, settings.eval.frames,
                                               settings.eval.frames_per_chunk)
                    evidence_record = evidence.record()
                    given = judge_input(settings, evidence, settings.eval.modality, settings.eval.frame_size,
                                        AudioOptions(settings.eval.audio_mode, settings.eval.audio_speed,
                                                     settings.eval.audio_pause_s))
                if given is None:  # stopped before this question's evidence was made
                    record[role] = {"model": models[role], "verdict": None, "outcome": ERROR, "correct": False,
                                    "call_id": 0, "asks": int((prior or {}).get("asks", 0)),
                                    "fault": f"not asked: an earlier call failed with {stop['error']}"}
                    continue
                record["evidence"] = evidence_record
                try:
                    record[role] = judge_once(role, question.text, answer_a, answer_b, given, item_id, a_is_better,
                                              prior)
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
        with lock:
            for pair_id, record in verdicts.items():
                if not decided[pair_id]:
                    report.errors += sum(1 for x in ROLES if record[x]["outcome"] != VERDICT)
                    faults.update(str(record[x].get("fault", "")) for x in ROLES if record[x]["outcome"] != VERDICT)
                    continue
                report.judged += 1
                if all(record[x]["correct"] for x in ROLES):
                    report.dropped += 1
                else:
                    report.kept += 1
        if tick:
            tick(sum(decided.values()))

    run_each(one_item, sorted(todo), settings.eval.workers)
    report.undecided = sum(len(v) for v in pending_pairs(engine, item_ids).values())
    report.stopped = stop["reason"]
    report.messages = [m for m, _ in faults.most_common()]
    return report
