"""Who rates what (issue 12): the next task of an annotator, their progress, and a final rating.

- An annotator is shown only tasks whose clips are ready, never a pair they already rated, and a study
  pair only while it has fewer than N ratings plus live claims of others (a claim holds a shown task
  for its annotator ``claim_ttl_s`` seconds). Attention checks have no cap: everyone meets them.
- The order is the annotator's own seeded permutation of the tasks (keyed by task content), so people
  do not all start on the same pair; a reload shows the task they hold, not a new one.
- A rating needs the annotator's claim on the task, a choice of A or B and a long enough reason; it is
  committed before the app answers, and it is final: a second one for the same task is refused.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from playlisteval.human.errors import RatingRefused
from playlisteval.human.tasks import study_setting
from playlisteval.human.words import choice_problem, reason_problem
from playlisteval.store.engine import transaction
from playlisteval.store.tables import HumanAnnotator, HumanClaim, HumanRating, HumanStudy, HumanTask, now


@dataclass(frozen=True)
class Progress:
    done: int
    total: int  # done + what is still open to this annotator now

    @property
    def remaining(self) -> int:
        return self.total - self.done


def _order_key(seed: int, annotator: str, task_key: str) -> str:
    return hashlib.sha256(f"{seed}:human-order:{annotator}:{task_key}".encode()).hexdigest()


def _open_tasks(s: Session, study: HumanStudy, annotator: HumanAnnotator, ttl_s: float,
                at: float) -> list[HumanTask]:
    """Tasks this annotator may be given now, in their order."""
    per_pair = int(study_setting(study, "annotators_per_pair", 3))
    tasks = s.exec(select(HumanTask).where(HumanTask.study_id == study.id,
                                           HumanTask.evidence_status == "ok")).all()
    ids = [int(t.id or 0) for t in tasks]
    ratings = s.exec(select(HumanRating.task_id, HumanRating.annotator).where(
        col(HumanRating.task_id).in_(ids or [-1]))).all()
    mine = {int(t) for t, who in ratings if who == annotator.name}
    filled = Counter(int(t) for t, _ in ratings)
    live = Counter(int(c.task_id) for c in s.exec(select(HumanClaim).where(
        col(HumanClaim.task_id).in_(ids or [-1]), HumanClaim.annotator_id != annotator.id,
        HumanClaim.claimed_at > at - ttl_s)).all())
    open_ = [t for t in tasks if t.id not in mine
             and (t.attention_check or filled[int(t.id or 0)] + live[int(t.id or 0)] < per_pair)]
    return sorted(open_, key=lambda t: _order_key(study.seed, annotator.name, t.task_key))


def next_task(engine: Engine, study: HumanStudy, annotator: HumanAnnotator, ttl_s: float) -> int | None:
    """The task to show: the one the annotator holds, else a new claim; None when nothing is left."""
    at = now()
    with transaction(engine) as s:
        rated = set(s.exec(select(HumanRating.task_id).where(HumanRating.annotator == annotator.name)).all())
        for claim in s.exec(select(HumanClaim).where(HumanClaim.annotator_id == annotator.id)
                            .order_by(col(HumanClaim.claimed_at))).all():
            task = s.get(HumanTask, claim.task_id)
            if claim.task_id in rated or task is None or task.evidence_status != "ok":
                s.delete(claim)
                continue
            claim.claimed_at = at
            s.add(claim)
            return int(claim.task_id)
        for task in _open_tasks(s, study, annotator, ttl_s, at):
            s.add(HumanClaim(task_id=int(task.id or 0), annotator_id=int(annotator.id or 0), claimed_at=at))
            return int(task.id or 0)
    return None


def progress(engine: Engine, study: HumanStudy, annotator: HumanAnnotator, ttl_s: float) -> Progress:
    with transaction(engine) as s:
        done = len(s.exec(select(HumanRating.id).join(HumanTask, col(HumanTask.id) == col(HumanRating.task_id))
                          .where(HumanTask.study_id == study.id, HumanRating.annotator == annotator.name)).all())
        held = s.exec(select(HumanClaim.task_id).where(HumanClaim.annotator_id == annotator.id)).all()
        open_ids = {int(t.id or 0) for t in _open_tasks(s, study, annotator, ttl_s, now())} | {int(t) for t in held}
    return Progress(done, done + len(open_ids))


def validate(choice: str, reason: str, min_words: int) -> None:
    problem = choice_problem(choice) or reason_problem(reason, min_words)
    if problem:
        raise RatingRefused(problem, 422)


def submit(engine: Engine, study: HumanStudy, annotator: HumanAnnotator, task_id: int, choice: str,
           reason: str) -> HumanRating:
    """Store a rating from the app; refused unless the annotator holds the task and has not rated it."""
    validate(choice, reason, int(study_setting(study, "min_reason_words", 20)))
    with transaction(engine) as s:
        task = s.get(HumanTask, task_id)
        if task is None or task.study_id != study.id:
            raise RatingRefused("no such task", 404)
        if s.exec(select(HumanRating).where(HumanRating.task_id == task_id,
                                            HumanRating.annotator == annotator.name)).first() is not None:
            raise RatingRefused("this task is already rated: a submitted rating is final", 409)
        claim = s.exec(select(HumanClaim).where(HumanClaim.task_id == task_id,
                                                HumanClaim.annotator_id == annotator.id)).first()
        if claim is None:
            raise RatingRefused("this task was not given to you", 403)
        rating = HumanRating(task_id=task_id, annotator=annotator.name, choice=choice, reason=reason.strip(),
                             source="app", created_at=now())
        s.add(rating)
        s.delete(claim)
    return rating


def holds(engine: Engine, annotator: HumanAnnotator, task_id: int) -> bool:
    """Whether the annotator may see this task's clips: they hold it, or they rated it."""
    with transaction(engine) as s:
        if s.exec(select(HumanClaim.id).where(HumanClaim.task_id == task_id,
                                              HumanClaim.annotator_id == annotator.id)).first() is not None:
            return True
        return s.exec(select(HumanRating.id).where(HumanRating.task_id == task_id,
                                                   HumanRating.annotator == annotator.name)).first() is not None
