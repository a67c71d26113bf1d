"""`build`, `resume`, `retry-failed` and `status` as services the CLI (and tests) call."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from playlisteval.actors import App
from playlisteval.actors.batch_rounds import run_build
from playlisteval.actors.broker import is_redis
from playlisteval.actors.step import limits_for
from playlisteval.actors.workers import enqueue_all, resend_unsent
from playlisteval.build.bounded import bounds_of, create_items
from playlisteval.build.gates.preflight import preflight
from playlisteval.build.status import Status, status  # noqa: F401  (here since issue 14; read in build/)
from playlisteval.config import Settings
from playlisteval.errors import ConfigError
from playlisteval.index.changes import refuse_changed
from playlisteval.models.budget import BUDGET_KEY, PAUSED_KEY
from playlisteval.models.preflight import check_build
from playlisteval.store import cancels as cancel
from playlisteval.store import items, open_store, transaction
from playlisteval.store.states import State
from playlisteval.store.tables import KeyValue


@dataclass
class BuildOutcome:
    created: int
    enqueued: int
    foreground: bool


def set_budget(settings: Settings, budget: float | None) -> None:
    """Record a new budget for every worker, and lift a budget pause and a cancellation."""
    if budget is not None and budget < 0:
        raise ConfigError(f"a budget must not be negative (got {budget} USD); 0 means no budget")
    engine = open_store(settings)
    with transaction(engine) as s:
        if budget is not None:
            s.merge(KeyValue(key=BUDGET_KEY, value=repr(float(budget))))
        paused = s.get(KeyValue, PAUSED_KEY)
        if paused is not None:
            s.delete(paused)
    cancel.clear(engine, cancel.BUILD)  # `build` and `resume` are how a cancelled build goes on


def check(settings: Settings) -> None:
    """Refuse to start, before anything is created or called, on a configuration that cannot run."""
    preflight(settings)  # SPEC C4 and the prompt folder
    engine = open_store(settings)
    check_build(settings, engine)  # SDKs, keys, prices; no sim on videos synth did not make
    refuse_changed(engine)  # no build over the old content of a file changed in place (issue 22)


def _paused(app: App) -> bool:
    with transaction(app.engine) as s:
        return s.get(KeyValue, PAUSED_KEY) is not None or s.get(KeyValue, cancel.BUILD) is not None


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
    sent = enqueue_all(app, work)
    return BuildOutcome(len(created), sent + resend_unsent(app, set(created)), False)


def resume(settings: Settings, budget: float | None = None, on_tick: Callable[[], None] | None = None,
           app: App | None = None) -> BuildOutcome:
    check(settings)
    set_budget(settings, budget)
    app = app or App(settings)
    work = items.resumable(app.engine)
    if not is_redis(settings.broker.url):
        run_build(app, work, on_tick)  # open batches are picked up: items waiting on them move on
        return BuildOutcome(0, len(work), True)
    sent = enqueue_all(app, work)
    return BuildOutcome(0, sent + resend_unsent(app, {i for i, _ in work}), False)


def retry_failed(settings: Settings, on_tick: Callable[[], None] | None = None) -> list[int]:
    engine = open_store(settings)
    moved = items.retry_failed(engine, limits_for(settings))
    if moved:
        resume(settings, on_tick=on_tick)
    return moved


