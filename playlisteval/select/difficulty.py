"""SPEC F2, the difficulty gate: two deliberately weak judges (roles F_first and F_second) judge every
pair with the G4 prompt; a pair is kept iff at least one of them does not pick the intended answer
(a wrong pick, no verdict, a refusal or a failed call all count as not solving it).

Each question's evidence is chosen once (``[select] difficulty_evidence`` / ``difficulty_scope``, with
the frame settings of ``[eval]``) and shared by its ten pairs. Verdicts are written per question, so
an interrupted gate (a budget pause) resumes where it stopped. Calls are on the ledger with purpose
"select": neither the build's cost (SPEC K2) nor a judge's evaluation cost (K4).
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import col, select

from playlisteval.config import Settings
from playlisteval.eval.corpus import Corpora, check_scope, load_questions
from playlisteval.eval.evidence import Retriever, select_evidence
from playlisteval.eval.judging import AudioOptions, ask, judge_input
from playlisteval.eval.parallel import run_each
from playlisteval.eval.verdicts import VERDICT
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
    judged: int = 0  # pairs judged now
    kept: int = 0
    dropped: int = 0
    errors: int = 0  # weak-judge calls that failed for good (counted as not solved)


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

    def one_item(item_id: int) -> None:
        question = questions[item_id]
        evidence = select_evidence(corpora, retriever, question, cfg.difficulty_evidence, cfg.difficulty_scope,
                                   settings.eval.frames, settings.eval.frames_per_chunk)
        given = judge_input(settings, evidence, settings.eval.modality, settings.eval.frame_size,
                            AudioOptions(settings.eval.audio_mode, settings.eval.audio_speed,
                                         settings.eval.audio_pause_s))
        texts = pair_texts(engine, todo[item_id])
        verdicts: dict[int, dict[str, Any]] = {}
        for pair_id in todo[item_id]:
            pair = texts[pair_id]
            a_is_better = side_of(settings.project.seed, pair.key, draw="F2")  # content-keyed: any store
            answer_a, answer_b = pair.shown(a_is_better)
            record: dict[str, Any] = {"a_is_better": a_is_better, "evidence": evidence.record()}
            for role in ROLES:
                reply = ask(runner, models[role], role, question.text, answer_a, answer_b, given,
                            GenerationSettings(), purpose=PURPOSE, item_id=item_id)
                correct = reply.outcome == VERDICT and (reply.verdict == "A") == a_is_better
                record[role] = {"model": models[role], "verdict": reply.verdict, "outcome": reply.outcome,
                                "correct": correct, "call_id": reply.call_id}
            verdicts[pair_id] = record
        with transaction(engine) as s:
            for row in s.exec(select(Pair).where(col(Pair.id).in_(list(verdicts)))).all():
                record = verdicts[int(row.id or 0)]
                row.difficulty = record
                row.kept = not all(record[role]["correct"] for role in ROLES)
                s.add(row)
        with lock:
            report.judged += len(verdicts)
            report.kept += sum(1 for r in verdicts.values() if not all(r[x]["correct"] for x in ROLES))
            report.dropped += sum(1 for r in verdicts.values() if all(r[x]["correct"] for x in ROLES))
            report.errors += sum(1 for r in verdicts.values() for x in ROLES if r[x]["outcome"] == "error")
        if tick:
            tick(len(verdicts))

    run_each(one_item, sorted(todo), settings.eval.workers)
    return report
