"""The store's tables of the build: items and their events, QA, distractor sets, answers, gate results,
pairs, and the work queue and outbox that carry them (DESIGN "Data model"; re-exported by store/tables.py).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, Column, UniqueConstraint
from sqlmodel import Field

from playlisteval.store.table_base import StoreTable, now


class Item(StoreTable, table=True):
    id: int | None = Field(default=None, primary_key=True)
    seed_id: int = Field(foreign_key="seed.id", unique=True)
    state: str = Field(default="pending", index=True)
    phase1_attempts: int = 0
    phase2_attempts: int = 0
    phase2_on_question: int = 0
    failed_from: str | None = None
    current_qa_id: int | None = None
    current_set_id: int | None = None
    lease_owner: str | None = None
    lease_expires: float | None = Field(default=None, index=True)
    # 0500 (issue 10): when the holder last renewed its lease (its heartbeat): a stale one is a dead holder's
    lease_renewed_at: float = 0.0
    claims: int = 0  # claims since the last committed step: a worker-killing item is poison
    version: int = 0
    error: str | None = None
    created_at: float = Field(default_factory=now)
    updated_at: float = Field(default_factory=now)


class ItemEvent(StoreTable, table=True):
    """One row per committed step. (item_id, version) is unique: a step is never committed twice."""

    __tablename__ = "item_event"
    __table_args__ = (UniqueConstraint("item_id", "version"),)
    id: int | None = Field(default=None, primary_key=True)
    item_id: int = Field(foreign_key="item.id", index=True)
    version: int
    from_state: str
    event: str
    to_state: str
    worker: str | None = None
    at: float = Field(default_factory=now)


class QA(StoreTable, table=True):
    __table_args__ = (UniqueConstraint("item_id", "attempt"),)
    id: int | None = Field(default=None, primary_key=True)
    item_id: int = Field(foreign_key="item.id", index=True)
    attempt: int  # Phase I attempt number for the seed (1-based)
    question: str = ""
    answer: str = ""
    keyword: str = ""
    payload: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    template: str = ""
    template_hash: str = ""
    malformed: bool = False


class DistractorSet(StoreTable, table=True):
    __tablename__ = "distractor_set"
    __table_args__ = (UniqueConstraint("item_id", "attempt"),)
    id: int | None = Field(default=None, primary_key=True)
    item_id: int = Field(foreign_key="item.id", index=True)
    qa_id: int = Field(foreign_key="qa.id")
    attempt: int  # Phase II attempt number for the seed (1-based)
    payload: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    template: str = ""
    template_hash: str = ""
    malformed: bool = False


class Answer(StoreTable, table=True):
    __table_args__ = (UniqueConstraint("set_id", "rating"),)
    id: int | None = Field(default=None, primary_key=True)
    set_id: int = Field(foreign_key="distractor_set.id", index=True)
    rating: int  # 5 = gold … 1
    text: str
    degraded_weight: float = 0.0
    record: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))


class GateResult(StoreTable, table=True):
    __tablename__ = "gate_result"
    id: int | None = Field(default=None, primary_key=True)
    item_id: int = Field(foreign_key="item.id", index=True)
    phase: int
    attempt: int
    gate: str
    verdict: str  # pass / reject
    reason: str = ""
    details: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    rejected_output: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    call_ids: list[int] | None = Field(default=None, sa_column=Column(JSON))
    at: float = Field(default_factory=now)


class Pair(StoreTable, table=True):
    __table_args__ = (UniqueConstraint("item_id", "better_rating", "worse_rating"),)
    id: int | None = Field(default=None, primary_key=True)
    item_id: int = Field(foreign_key="item.id", index=True)
    set_id: int = Field(foreign_key="distractor_set.id")
    better_rating: int
    worse_rating: int
    gap: int
    difficulty: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    kept: bool | None = None


class WorkJob(StoreTable, table=True):
    """One question's share of `select` or `eval judge` work, or a block of questions of `eval retrieve`,
    done by an actor (issue 10): ``kind`` "gate" (run_id 0), "judge" or "retrieve". Unique per (kind, run,
    item), so sending it again is harmless; a worker claims it with a lease (renewed while it runs) and
    marks it done or failed. ``pass_id`` names the command's pass (its shared stop flag); ``payload``
    carries what a worker needs beyond ids (a run's options, a block's questions).

    state: queued → running → done / failed (queued again by the next pass)."""

    __tablename__ = "work_job"
    __table_args__ = (UniqueConstraint("kind", "run_id", "item_id"),)
    id: int | None = Field(default=None, primary_key=True)
    kind: str = Field(index=True)
    run_id: int = 0
    item_id: int
    pass_id: str = ""
    payload: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    result: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))  # the job's counts
    state: str = Field(default="queued", index=True)
    worker: str = ""  # the process that did it last (host:pid)
    error: str = ""
    lease_until: float = 0.0
    updated_at: float = Field(default_factory=now)


class ItemOutbox(StoreTable, table=True):
    """An item's next message, pending (issue 10, 0530): written in the transaction of the commit that moved
    the item into a working state, deleted once the message is sent (store/outbox.py). A row older than the
    sweepers' grace is a message the broker never got — Redis down, the worker killed between commit and
    send — and a sweeper sends it. One row per item: an item waits for one step at a time."""

    __tablename__ = "item_outbox"
    item_id: int = Field(primary_key=True, sa_column_kwargs={"autoincrement": False})
    state: str  # the working state the message is for: its step's actor
    created_at: float = Field(default_factory=now, index=True)  # when written, or last taken by a sweeper
