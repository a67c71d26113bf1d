"""A study and its tasks as the app, the export and the report read them.

An annotator sees the question, answer A and answer B (the intended one in the task's slot), both
formatted as judges see them: citations removed, one layout (SPEC G4, D3), and the task's evidence clips.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import col, select

from playlisteval.build.gates.citations import uniform
from playlisteval.human.diff import WordDiff, word_diff
from playlisteval.human.errors import HumanStudyError
from playlisteval.select.pairs import pair_texts
from playlisteval.store.engine import transaction
from playlisteval.store.tables import HumanStudy, HumanTask


def find_study(engine: Engine, name: str) -> HumanStudy:
    with transaction(engine) as s:
        study = s.exec(select(HumanStudy).where(HumanStudy.name == name)).first()
    if study is None:
        raise HumanStudyError(f"no human study named {name!r}: run `playlisteval human plan` first")
    return study


def study_setting(study: HumanStudy, key: str, default: Any) -> Any:
    """A setting the study was planned with (kept with it, so later config edits do not change it)."""
    return (study.settings or {}).get(key, default)


@dataclass(frozen=True)
class TaskView:
    task_id: int
    pair_id: int
    domain: str
    gap: int
    question: str
    answer_a: str
    answer_b: str
    intended_slot: str
    attention_check: bool
    clips: list[dict[str, Any]] = field(default_factory=list)

    def diff(self) -> WordDiff:
        return word_diff(self.answer_a, self.answer_b)


def task_views(engine: Engine, tasks: list[HumanTask]) -> dict[int, TaskView]:
    texts = pair_texts(engine, [t.pair_id for t in tasks])
    out = {}
    for t in tasks:
        p = texts[t.pair_id]
        better, worse = uniform(p.better), uniform(p.worse)
        a, b = (better, worse) if t.intended_slot == "A" else (worse, better)
        out[int(t.id or 0)] = TaskView(
            task_id=int(t.id or 0), pair_id=t.pair_id, domain=p.domain, gap=p.gap, question=p.question,
            answer_a=a, answer_b=b, intended_slot=t.intended_slot, attention_check=t.attention_check,
            clips=list((t.clips or {}).get("clips", [])))
    return out


def study_tasks(engine: Engine, study_id: int, *, ready_only: bool = False) -> list[HumanTask]:
    with transaction(engine) as s:
        query = select(HumanTask).where(HumanTask.study_id == study_id)
        if ready_only:
            query = query.where(HumanTask.evidence_status == "ok")
        return list(s.exec(query.order_by(col(HumanTask.task_key))).all())


def task_view(engine: Engine, study_id: int, task_id: int) -> TaskView | None:
    with transaction(engine) as s:
        task = s.get(HumanTask, task_id)
    if task is None or task.study_id != study_id:
        return None
    return task_views(engine, [task])[task_id]
