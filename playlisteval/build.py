"""`build`, `resume`, `retry-failed` and `status` as services the CLI (and tests) call."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from sqlalchemy import case, func
from sqlmodel import col, select

from playlisteval.actors import App
from playlisteval.actors.step import limits_for
from playlisteval.batch_build import run_build
from playlisteval.bounded import bounds_of, create_items
from playlisteval.broker import is_redis
from playlisteval.config import Settings
from playlisteval.errors import ConfigError
from playlisteval.gates.preflight import preflight
from playlisteval.models.batch_run import open_batches
from playlisteval.models.preflight import check_build
from playlisteval.models.runner import BUDGET_KEY, PAUSED_KEY, budget_usd, spend
from playlisteval.models.simulated import is_simulated
from playlisteval.state import State
from playlisteval.store import items, open_store, transaction
from playlisteval.store.tables import GateResult, Item, KeyValue, ModelCall, Seed
from playlisteval.workers import enqueue_all


@dataclass
class BuildOutcome:
    created: int
    enqueued: int
    foreground: bool


def set_budget(settings: Settings, budget: float | None) -> None:
    """Record a new budget for every worker, and lift a budget pause."""
    if budget is not None and budget < 0:
        raise ConfigError(f"a budget must not be negative (got {budget} USD); 0 means no budget")
    engine = open_store(settings)
    with transaction(engine) as s:
        if budget is not None:
            s.merge(KeyValue(key=BUDGET_KEY, value=repr(float(budget))))
        paused = s.get(KeyValue, PAUSED_KEY)
        if paused is not None:
            s.delete(paused)


def check(settings: Settings) -> None:
    """Refuse to start, before anything is created or called, on a configuration that cannot run."""
    preflight(settings)  # SPEC C4 and the prompt folder
    check_build(settings, open_store(settings))  # SDKs, keys, prices; no sim on videos synth did not make


def _paused(app: App) -> bool:
    with transaction(app.engine) as s:
        return s.get(KeyValue, PAUSED_KEY) is not None


def build(settings: Settings, budget: float | None = None, on_tick: Callable[[], None] | None = None,
          app: App | None = None, max_items: int | None = None) -> BuildOutcome:
    """Create items for seeds that have none (within the bounds of bounded.py) and run them.

    In this process, with a per-domain target of accepted questions, items discarded or failed on
    the way leave room: new ones are created in further waves until the target or the seeds run out.
    """
    if max_items is not None and max_items < 0:
        raise ConfigError(f"--max-items must not be negative (got {max_items})")
    check(settings)
    set_budget(settings, budget)
    app = app or App(settings)
    bounds = bounds_of(settings, max_items)
    created = create_items(app.engine, bounds, settings.project.seed)
    work = [(i, State.PENDING) for i in created]
    if not is_redis(settings.broker.url):
        # nothing survives in an in-process queue: pick up whatever an earlier run left unfinished
        seen = set(created)
        work += [(i, st) for i, st in items.resumable(app.engine) if i not in seen]
        total_created, processed = len(created), len(work)
        while work:
            run_build(app, work, on_tick)  # in rounds around batches when build roles go by batch
            if not bounds.target_per_domain or _paused(app):
                break
            more = create_items(app.engine, bounds, settings.project.seed)
            work = [(i, State.PENDING) for i in more]
            total_created, processed = total_created + len(more), processed + len(more)
        return BuildOutcome(total_created, processed, True)
    return BuildOutcome(len(created), enqueue_all(app, work), False)


def resume(settings: Settings, budget: float | None = None, on_tick: Callable[[], None] | None = None,
           app: App | None = None) -> BuildOutcome:
    check(settings)
    set_budget(settings, budget)
    app = app or App(settings)
    work = items.resumable(app.engine)
    if not is_redis(settings.broker.url):
        run_build(app, work, on_tick)  # open batches are picked up: items waiting on them move on
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
    spent_usd: float  # shown: paid + open reservations (the two below)
    budget_usd: float
    paused: str | None
    calls: int
    cache_hits: int
    tokens: int
    failures: list[tuple[int, str]] = field(default_factory=list)
    rejections: dict[str, int] = field(default_factory=dict)
    simulated: bool = False  # built by the sim world: its numbers exercise the machinery only
    batches: list[dict[str, object]] = field(default_factory=list)  # open batches (issue 15): models/batch_run.py
    paid_usd: float = 0.0  # what finished calls cost
    reserved_usd: float = 0.0  # open reservations: calls in flight now, at their estimate
    interrupted_usd: float = 0.0  # calls cut short by a dead worker, cost unknown: at their estimate

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
    money = spend(engine)
    return Status(
        seeds=int(seeds), states=items.counts(engine), phase1_attempts=int(p1), phase2_attempts=int(p2),
        spent_usd=money.shown, paid_usd=money.paid, reserved_usd=money.reserved,
        interrupted_usd=money.interrupted, budget_usd=budget, paused=paused, calls=int(calls),
        cache_hits=int(hits), tokens=int(tokens), failures=failures, rejections=rejections,
        simulated=is_simulated(engine, "build"),
        batches=[vars(b) for b in open_batches(engine)],
    )
