"""`build`, `resume`, `retry-failed` and `status` as services the CLI (and tests) call."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from sqlalchemy import case, func
from sqlmodel import col, select

from playlisteval.actors import App
from playlisteval.actors.step import limits_for
from playlisteval.broker import is_redis
from playlisteval.config import Settings
from playlisteval.gates.preflight import preflight
from playlisteval.models.runner import BUDGET_KEY, PAUSED_KEY, budget_usd, spent_usd
from playlisteval.state import State
from playlisteval.store import items, open_store, transaction
from playlisteval.store.tables import GateResult, Item, KeyValue, ModelCall, Seed
from playlisteval.workers import enqueue_all, run_foreground


@dataclass
class BuildOutcome:
    created: int
    enqueued: int
    foreground: bool


def set_budget(settings: Settings, budget: float | None) -> None:
    """Record a new budget for every worker, and lift a budget pause."""
    engine = open_store(settings)
    with transaction(engine) as s:
        if budget is not None:
            s.merge(KeyValue(key=BUDGET_KEY, value=repr(float(budget))))
        paused = s.get(KeyValue, PAUSED_KEY)
        if paused is not None:
            s.delete(paused)


def build(settings: Settings, budget: float | None = None, on_tick: Callable[[], None] | None = None,
          app: App | None = None) -> BuildOutcome:
    preflight(settings)  # SPEC C4 and the prompt folder: refuse to start on a bad configuration
    set_budget(settings, budget)
    app = app or App(settings)
    created = items.create_items(app.engine)
    work = [(i, State.PENDING) for i in created]
    if not is_redis(settings.broker.url):
        # nothing survives in an in-process queue: pick up whatever an earlier run left unfinished
        seen = set(created)
        work += [(i, st) for i, st in items.resumable(app.engine) if i not in seen]
        run_foreground(app, work, on_tick)
        return BuildOutcome(len(created), len(work), True)
    return BuildOutcome(len(created), enqueue_all(app, work), False)


def resume(settings: Settings, budget: float | None = None, on_tick: Callable[[], None] | None = None,
           app: App | None = None) -> BuildOutcome:
    preflight(settings)
    set_budget(settings, budget)
    app = app or App(settings)
    work = items.resumable(app.engine)
    if not is_redis(settings.broker.url):
        run_foreground(app, work, on_tick)
        return BuildOutcome(0, len(work), True)
    return BuildOutcome(0, enqueue_all(app, work), False)


def retry_failed(settings: Settings, on_tick: Callable[[], None] | None = None) -> list[int]:
    engine = open_store(settings)
    moved = items.retry_failed(engine, limits_for(settings))
    if moved:
        resume(settings, on_tick=on_tick)
    return moved


@dataclass
class Status:
    seeds: int
    states: dict[str, int]
    phase1_attempts: int
    phase2_attempts: int
    spent_usd: float
    budget_usd: float
    paused: str | None
    calls: int
    cache_hits: int
    tokens: int
    failures: list[tuple[int, str]] = field(default_factory=list)
    rejections: dict[str, int] = field(default_factory=dict)

    @property
    def items(self) -> int:
        return sum(self.states.values())


def status(settings: Settings) -> Status:
    engine = open_store(settings)
    with transaction(engine) as s:
        seeds = s.exec(select(func.count()).select_from(Seed)).one()
        p1, p2 = s.exec(select(func.coalesce(func.sum(Item.phase1_attempts), 0),
                               func.coalesce(func.sum(Item.phase2_attempts), 0))).one()
        calls, hits, tokens = s.exec(select(
            # a boolean has no sum() on PostgreSQL, and SQLAlchemy types sum(bool) as bool (so SQLite's 58
            # came back as True, i.e. 1): count the hits as integers
            func.count(), func.coalesce(func.sum(case((col(ModelCall.cache_hit), 1), else_=0)), 0),
            func.coalesce(func.sum(ModelCall.input_tokens + ModelCall.output_tokens + ModelCall.thinking_tokens), 0),
        )).one()
        failures = [(int(i or 0), e or "") for i, e in s.exec(
            select(col(Item.id), col(Item.error)).where(Item.state == State.FAILED.value).order_by(col(Item.id))
        ).all()]
        rejections = {g: int(n) for g, n in s.exec(
            select(GateResult.gate, func.count()).where(GateResult.verdict == "reject")
            .group_by(GateResult.gate)).all()}
        budget = budget_usd(s, settings)
        paused_row = s.get(KeyValue, PAUSED_KEY)
        paused = paused_row.value if paused_row else None
    return Status(
        seeds=int(seeds), states=items.counts(engine), phase1_attempts=int(p1), phase2_attempts=int(p2),
        spent_usd=spent_usd(engine), budget_usd=budget, paused=paused, calls=int(calls),
        cache_hits=int(hits), tokens=int(tokens), failures=failures, rejections=rejections,
    )
