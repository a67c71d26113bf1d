"""SPEC E1/E2/E4: a seed's failure history, rendered as guidance for its next generation.

Phase I prompts list every rejected question of the seed (question, answer, gate, reason and the
gate's guidance) and every question given up after its wrong answers failed ``phase2_per_question``
times (SPEC E2). Phase II prompts list every rejected set of wrong answers of the seed, with the
question it was written for, its four answers, the gate, reason and guidance.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from sqlalchemy import JSON, text
from sqlalchemy.engine import Connection, Engine

from playlisteval.store.direct import Direct
from playlisteval.store.engine import read_core

#: The pseudo-gate of a question given up after its Phase II attempts ran out (SPEC E2).
GAVE_UP = "E2"
#: How the structural gates (C1, D2) word the rejection of a reply that could not be read at all.
UNUSABLE = "generator output unusable"


@dataclass
class Failure:
    attempt: int
    gate: str
    reason: str
    guidance: str
    question: str = ""
    answer: str = ""  # Phase I: the rejected gold answer
    answers: list[tuple[int, str]] = field(default_factory=list)  # Phase II: (rating, text) of the set
    same_question: bool = True  # Phase II: written for the question now being answered


def guidance(gate: str, prompts_dir: str | None = None, reason: str = "") -> str:
    """The gate's advice to the generator (SPEC E4); an unreadable reply gets advice of its own."""
    from playlisteval.prompts.render import render  # jinja2 with the first advice: `show` of an item never
    # rejected needs none (issue 26)

    text, _ = render("feedback.j2", prompts_dir, gate=gate, unusable=reason.startswith(UNUSABLE))
    return text.strip()


# the columns read, not the ORM rows (issue 13: a row's unused JSON columns decoded, an entity built for each),
# as SQL text over store/tables.py's GateResult, DistractorSet and QA: `show` imports this module for
# ``guidance`` and loads no table class (issue 26); run on the driver's cursor (store/direct.py): every generation
# step reads them (issue 26)
_REJECTED = Direct(text("SELECT id, attempt, gate, reason, rejected_output FROM gate_result WHERE item_id = :item_id "
                 "AND phase = :phase AND verdict = 'reject' ORDER BY id").columns(rejected_output=JSON))
_SETS = Direct(text("SELECT attempt, qa_id FROM distractor_set WHERE item_id = :item_id"))
_QA = Direct(text("SELECT attempt, question, answer FROM qa WHERE id = :qa_id"))




class _Rejection(NamedTuple):
    id: int
    attempt: int
    gate: str
    reason: str
    rejected_output: dict[str, Any] | None


class _Question(NamedTuple):
    attempt: int
    question: str
    answer: str


def _rows(conn: Connection, item_id: int, phase: int) -> list[_Rejection]:
    """The seed's rejections in ``phase``, oldest first."""
    return [_Rejection(*r) for r in _REJECTED.rows(conn, {"item_id": item_id, "phase": phase})]


def _sets(conn: Connection, item_id: int) -> dict[int, int]:
    """The seed's sets of wrong answers: attempt → the question it was written for."""
    return {int(attempt): int(qa_id) for attempt, qa_id in _SETS.rows(conn, {"item_id": item_id})}


def _qa(conn: Connection, qa_id: int) -> _Question | None:
    """(attempt, question, answer) of a question, or None."""
    row = _QA.first(conn, {"qa_id": qa_id})
    return None if row is None else _Question(*row)


def _unusable(output: dict[str, Any]) -> str:
    return "(the reply could not be read)" if "raw" in output else ""


def phase1_failures(engine: Engine, item_id: int, prompts_dir: str | None = None) -> list[Failure]:
    """Every failed question of this seed, oldest first."""
    out: list[tuple[int, int, Failure]] = []
    with read_core(engine) as s:
        for r in _rows(s, item_id, 1):
            output = r.rejected_output or {}
            out.append((r.attempt, r.id or 0, Failure(
                r.attempt, r.gate, r.reason, guidance(r.gate, prompts_dir, r.reason),
                question=output.get("question") or _unusable(output), answer=output.get("answer", ""))))
        # questions given up in Phase II: their sets' rejections, grouped by question
        by_qa: dict[int, list[Any]] = defaultdict(list)
        sets = _sets(s, item_id)
        for r in _rows(s, item_id, 2):
            if r.attempt in sets:
                by_qa[sets[r.attempt]].append(r)
        for qa_id, rows in by_qa.items():
            qa = _qa(s, qa_id)
            if qa is None:
                continue
            why = "; ".join(f"{r.gate} ({r.reason[:160]})" for r in rows)
            out.append((qa.attempt, rows[-1].id or 0, Failure(
                qa.attempt, GAVE_UP, f"its wrong answers were rejected {len(rows)} time(s): {why}",
                guidance(GAVE_UP, prompts_dir), question=qa.question, answer=qa.answer)))
    return [f for _, _, f in sorted(out, key=lambda t: (t[0], t[1]))]


def phase2_failures(
    engine: Engine, item_id: int, current_qa_id: int | None, prompts_dir: str | None = None,
) -> list[Failure]:
    """Every rejected set of wrong answers of this seed, oldest first."""
    out: list[Failure] = []
    with read_core(engine) as s:
        sets = _sets(s, item_id)
        questions: dict[int, str] = {}
        for r in _rows(s, item_id, 2):
            qa_id = sets.get(r.attempt)
            if qa_id is not None and qa_id not in questions:
                qa = _qa(s, qa_id)
                questions[qa_id] = qa.question if qa else ""
            output = r.rejected_output or {}
            answers = [(rating, str((output.get(f"rating_{rating}") or {}).get("response", "")))
                       for rating in (4, 3, 2, 1) if output.get(f"rating_{rating}")]
            out.append(Failure(
                r.attempt, r.gate, r.reason, guidance(r.gate, prompts_dir, r.reason),
                question=questions.get(qa_id, "") if qa_id is not None else "",
                answer=_unusable(output), answers=answers, same_question=qa_id == current_qa_id))
    return out
