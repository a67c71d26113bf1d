"""The store's tables of human studies: studies, tasks, ratings, annotators and claims (DESIGN "Data
model"; re-exported by store/tables.py).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, Column, Index, UniqueConstraint
from sqlmodel import Field

from playlisteval.store.table_base import StoreTable, now


class HumanStudy(StoreTable, table=True):
    """A human study of one benchmark (SPEC H1): its seed and the settings it was planned with."""

    __tablename__ = "human_study"
    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(unique=True)
    benchmark_id: int = Field(foreign_key="benchmark.id", index=True)
    seed: int = 0
    settings: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    created_at: float = Field(default_factory=now)


class HumanTask(StoreTable, table=True):
    __tablename__ = "human_task"
    id: int | None = Field(default=None, primary_key=True)
    pair_id: int = Field(foreign_key="pair.id", index=True)
    intended_slot: str = "A"
    attention_check: bool = False
    clips: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    # 0701 (issue 12): the study, a content key for seeded draws, and the evidence clips' grounding
    # (SPEC H2): pending / ok / fault, with the fault's reason, the attempts and the last ledger row
    study_id: int = Field(default=0, index=True)
    task_key: str = ""
    evidence_status: str = "pending"
    evidence_reason: str = ""
    evidence_attempts: int = 0
    evidence_call_id: int = 0
    grounding: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))


class HumanRating(StoreTable, table=True):
    __tablename__ = "human_rating"
    # a rating is final: one per annotator and task (0703 adds the index to older stores)
    __table_args__ = (Index("uq_human_rating_task_annotator", "task_id", "annotator", unique=True),)
    id: int | None = Field(default=None, primary_key=True)
    task_id: int = Field(foreign_key="human_task.id", index=True)
    annotator: str
    choice: str
    reason: str = ""
    # 0702 (issue 12): where it came from (app / import) and when
    source: str = "app"
    created_at: float = 0.0


class HumanAnnotator(StoreTable, table=True):
    """An invited annotator; only a hash of their link token is kept."""

    __tablename__ = "human_annotator"
    __table_args__ = (UniqueConstraint("study_id", "name"),)
    id: int | None = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="human_study.id", index=True)
    name: str
    token_hash: str = Field(unique=True)
    created_at: float = Field(default_factory=now)


class HumanClaim(StoreTable, table=True):
    """A task shown to an annotator, held for them a while so that no more than N people rate a pair."""

    __tablename__ = "human_claim"
    __table_args__ = (UniqueConstraint("task_id", "annotator_id"),)
    id: int | None = Field(default=None, primary_key=True)
    task_id: int = Field(foreign_key="human_task.id", index=True)
    annotator_id: int = Field(foreign_key="human_annotator.id", index=True)
    claimed_at: float = Field(default_factory=now)
