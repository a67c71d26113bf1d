"""What every message goes through, whatever its actor does, as dramatiq middleware (issue 10):

    LogContext       every log line of a message's work names its actor, message and first argument
    StepClaim        a build step's item is claimed (lease, compare-and-set) before its actor runs, and
                     given back afterwards if the step neither committed nor gave it back itself; while
                     the build is cancelled (actors/cancel.py) nothing is claimed: the message is dropped
    PoisonLimit      an item claimed more than ``[broker] max_claims`` times without a commit keeps killing
                     its worker (SIGKILL, OOM): it fails as poison instead of running again
    BudgetPause      a step that met the build's budget pauses the build and gives its item back
    LeaseHeartbeat   the claim's lease is renewed while the step runs (actors/leases.py), so it can be short
    Sweeper          the worker's sweeper thread (the dramatiq CLI on Redis; `playlisteval worker` runs its own)

``install`` adds them to a broker once, in that order: dramatiq runs ``before_*`` hooks in order and
``after_*`` hooks in reverse, so the claim is taken first and given back last, around everything else.
They work the same on the in-process StubBroker, on Redis, and under ``dramatiq playlisteval.actors.tasks``.

The claim is what the heartbeat renews, the poison limit counts and the budget pause gives back, so it is
taken here, in ``before_process_message``, and shared with the step and the other middleware through a
``Turn`` kept per worker thread (dramatiq runs a message's hooks and its actor on one thread). Two thin
hooks remain in the step, for what dramatiq middleware cannot do:

- A middleware sees the exception an actor raised but cannot swallow it: an escaping BudgetExceeded
  would be logged as a crash, dead-lettered, and re-raised by ``StubBroker.join`` in a foreground build.
  So the step only notes it (``turn.paused``) and returns; BudgetPause does the rest.
- dramatiq logs and ignores an exception raised in a ``before_*`` hook (only SkipMessage stops a
  message). So a claim that fails because the store is down is kept on the turn (``turn.error``) and the
  actor raises it: dramatiq's Retries then retries the message as the infrastructure error it is.

``run_inline`` runs the same middleware around a step without a worker (``step.run_step``: tests, tools).
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import dramatiq
import structlog
from dramatiq.broker import MessageProxy
from dramatiq.middleware.time_limit import TimeLimitExceeded

from playlisteval.actors import ceilings
from playlisteval.errors import BudgetExceeded, as_infrastructure, outage_of
from playlisteval.logs import get_logger, outage
from playlisteval.models.budget import PAUSED_KEY
from playlisteval.store import cancels as cancel
from playlisteval.store import items, transaction
from playlisteval.store.states import STEPS, Event, State
from playlisteval.store.tables import KeyValue

if TYPE_CHECKING:
    from playlisteval.actors.app import App

log = get_logger(__name__)

#: build-step actor name → the working state it steps
STEP_ACTORS: dict[str, State] = {step.actor: state for state, step in STEPS.items()}


@dataclass
class Turn:
    """One build step's message on its way through the middleware and the actor."""

    app: App
    state: State
    item_id: int
    claim: items.Claim | None = None  # None: the item moved on or someone else holds it (a duplicate)
    settled: bool = False  # committed or given back: nothing left to release
    moved: State | None = None  # where the step moved the item
    paused: BudgetExceeded | None = None  # the step met the budget (see the module's docstring)
    error: BaseException | None = None  # a hook failed (the store is down): the actor raises it
    heartbeat: AbstractContextManager[None] | None = None

    @property
    def ready(self) -> bool:
        """Whether the step is to run: claimed, not failed as poison, no hook failed."""
        return self.claim is not None and not self.settled and self.error is None

    def end_heartbeat(self) -> None:
        """Stop renewing the lease: the step is about to commit or give the item back (a beat after that
        would find the lease gone and report it lost)."""
        if self.heartbeat is not None:
            heartbeat, self.heartbeat = self.heartbeat, None
            heartbeat.__exit__(None, None, None)


_local = threading.local()


def current_turn() -> Turn | None:
    """The turn of the step message this worker thread is processing, if any."""
    turn: Turn | None = getattr(_local, "turn", None)
    return turn


class StepMiddleware(dramatiq.Middleware):
    """A middleware acting on build-step messages only, through their ``Turn``: ``enter`` before the actor,
    ``leave`` after it (or after a skip), in the reverse order."""

    def enter(self, turn: Turn) -> None:
        pass

    def leave(self, turn: Turn, exception: BaseException | None) -> None:
        pass

    # -- dramatiq's hooks ------------------------------------------------------------------------
    def before_process_message(self, broker: dramatiq.Broker, message: MessageProxy) -> None:
        turn = current_turn()
        if turn is not None and turn.error is None:
            _guarded(turn, self.enter)

    def after_process_message(self, broker: dramatiq.Broker, message: MessageProxy, *,
                              result: Any = None, exception: BaseException | None = None) -> None:
        turn = current_turn()
        if turn is not None:
            self.leave(turn, exception)

    def after_skip_message(self, broker: dramatiq.Broker, message: MessageProxy) -> None:
        turn = current_turn()
        if turn is not None:
            self.leave(turn, None)


def _guarded(turn: Turn, hook: Callable[[Turn], None]) -> None:
    try:
        hook(turn)
    except Exception as exc:  # the store or Redis failed: the actor raises it (see the module's docstring)
        turn.error = as_infrastructure(exc) or exc
        if turn.error is not exc:
            turn.error.__cause__ = exc


class StepClaim(StepMiddleware):
    """Opens each build-step message's turn and claims its item; gives the item back at the end if the step
    did not settle it (it raised, was deferred to a batch, or met the budget)."""

    def before_process_message(self, broker: dramatiq.Broker, message: MessageProxy) -> None:
        state = STEP_ACTORS.get(message.actor_name)
        _local.turn = None
        if state is None or not message.args:
            return
        from playlisteval.actors.app import current_app  # the App module declares the actors: import late

        turn = Turn(current_app(), state, int(message.args[0]))
        _local.turn = turn
        _guarded(turn, self.enter)

    def enter(self, turn: Turn) -> None:
        app = turn.app
        if cancel.is_set(app.engine, cancel.BUILD):  # the item stays as it is, unleased, for `resume`
            log.info("step.cancelled", item=turn.item_id, state=turn.state.value)
            return
        turn.claim = items.claim(app.engine, turn.item_id, turn.state, app.worker_id, app.settings.broker.lease_s)
        outage.reached("store")
        if turn.claim is None:
            log.debug("step.skipped", item=turn.item_id, state=turn.state.value, why="moved on or leased")

    def leave(self, turn: Turn, exception: BaseException | None) -> None:
        try:
            if turn.claim is not None and not turn.settled and isinstance(exception, TimeLimitExceeded):
                # past the ceiling: failed with the reason, not given back to run (and stop) again
                turn.end_heartbeat()
                turn.settled = True
                _guarded(turn, lambda t: ceilings.fail_step(t, ceilings.step_s(t.app.settings)))
            if turn.claim is not None and not turn.settled:
                release_quietly(turn)
        finally:
            _local.turn = None


def release_quietly(turn: Turn) -> None:
    """Give the item back unmoved; if the store itself fails, the lease lapses (no heartbeat) and is swept."""
    assert turn.claim is not None
    turn.end_heartbeat()
    turn.settled = True
    try:
        items.release(turn.app.engine, turn.claim)
    except Exception as exc:
        if not outage.failed(outage_of(exc), exc, where="step release", item=turn.item_id):
            log.warning("step.release_failed", item=turn.item_id, error=f"{type(exc).__name__}: {exc}")


class PoisonLimit(StepMiddleware):
    """An item claimed again and again without a commit keeps killing its worker: it fails, kept for
    `retry-failed`, instead of taking down one worker after another."""

    def enter(self, turn: Turn) -> None:
        claim, settings = turn.claim, turn.app.settings
        if claim is None or claim.claims <= settings.broker.max_claims:
            return
        from playlisteval.actors.step import limits_for

        reason = f"poison: claimed {claim.claims} times without finishing its {turn.state.value} step"
        log.error("step.poison", item=turn.item_id, state=turn.state.value, claims=claim.claims)
        turn.moved = items.commit(turn.app.engine, claim, Event.ERROR, limits_for(settings), error=reason)
        turn.settled = True


class BudgetPause(StepMiddleware):
    """A step whose next paid call would pass the budget gives its item back and pauses the build: the
    sweepers leave a paused build alone, and `resume --budget` lifts the pause and sends every item again."""

    def leave(self, turn: Turn, exception: BaseException | None) -> None:
        if turn.paused is None or turn.claim is None:
            return
        release_quietly(turn)
        try:
            with transaction(turn.app.engine) as s:
                s.merge(KeyValue(key=PAUSED_KEY, value=str(turn.paused)))
        except Exception as exc:  # the store failed: the next step meets the budget again and retries this
            log.warning("build.pause_failed", item=turn.item_id, error=f"{type(exc).__name__}: {exc}")
            return
        log.warning("build.paused", item=turn.item_id, reason=str(turn.paused))


class LeaseHeartbeat(StepMiddleware):
    """Renews the step's lease while it runs (one heartbeat thread per process: actors/leases.py)."""

    def enter(self, turn: Turn) -> None:
        if turn.ready:
            assert turn.claim is not None
            ceiling = ceilings.step_s(turn.app.settings)
            turn.heartbeat = turn.app.leases.hold(turn.claim, ceiling, lambda: ceilings.fail_step(turn, ceiling))
            turn.heartbeat.__enter__()

    def leave(self, turn: Turn, exception: BaseException | None) -> None:
        turn.end_heartbeat()


#: the step middleware in the order of their ``before_*`` hooks
STEP_CHAIN: tuple[type[StepMiddleware], ...] = (StepClaim, PoisonLimit, BudgetPause, LeaseHeartbeat)


def run_inline(app: App, state: State, item_id: int, step: Callable[[Turn], State | None]) -> State | None:
    """Run ``step`` on ``item_id`` in this thread through the step middleware, as a worker would (no broker)."""
    chain = [cls() for cls in STEP_CHAIN]
    turn = Turn(app, state, item_id)
    for middleware in chain:
        if turn.error is None:
            _guarded(turn, middleware.enter)
    exception: BaseException | None = None
    try:
        return run_turn(turn, step)
    except BaseException as exc:
        exception = exc
        raise
    finally:
        for middleware in reversed(chain):
            middleware.leave(turn, exception)


def run_turn(turn: Turn, step: Callable[[Turn], State | None]) -> State | None:
    """The actor's part of a turn: raise what a hook met, else run the step if it is to run."""
    if turn.error is not None:
        raise turn.error
    if turn.ready:
        turn.moved = step(turn)
    return turn.moved


class LogContext(dramatiq.Middleware):
    """Every log line of a message's work names its actor, message and first argument (an item, video or
    job id), whichever worker thread or process does it."""

    def before_process_message(self, broker: dramatiq.Broker, message: MessageProxy) -> None:
        structlog.contextvars.bind_contextvars(actor=message.actor_name, message=message.message_id[:8],
                                               of=message.args[0] if message.args else None)

    def after_process_message(self, broker: dramatiq.Broker, message: MessageProxy, *,
                              result: Any = None, exception: BaseException | None = None) -> None:
        structlog.contextvars.clear_contextvars()

    def after_skip_message(self, broker: dramatiq.Broker, message: MessageProxy) -> None:
        structlog.contextvars.clear_contextvars()


class Sweeper(dramatiq.Middleware):
    """The sweeper of ``playlisteval worker`` as a worker middleware, for the dramatiq CLI."""

    def __init__(self) -> None:
        self._stop = threading.Event()

    def after_worker_boot(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        threading.Thread(target=self._run, daemon=True, name="sweeper").start()

    def before_worker_shutdown(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        self._stop.set()

    def _run(self) -> None:
        from playlisteval.actors.app import current_app

        # by name: the workers module runs the actors, the actors do not import it; it logs a failure
        sweep = getattr(importlib.import_module("playlisteval.actors.workers"), "guarded_sweep")  # noqa: B009
        app = current_app()
        while not self._stop.wait(app.settings.broker.sweep_every_s):
            sweep(app)


def install(broker: dramatiq.Broker) -> dramatiq.Broker:
    """``broker`` with this project's middleware (once): LogContext, then the step chain in order."""
    if not any(isinstance(m, LogContext) for m in broker.middleware):
        broker.add_middleware(LogContext())
    have = {type(m) for m in broker.middleware}
    for cls in STEP_CHAIN:
        if cls not in have:
            broker.add_middleware(cls())
    return broker
