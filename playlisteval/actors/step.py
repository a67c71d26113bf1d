"""One step of one item: stage → commit outputs + transition → send the next step's message.

The claim before it, the lease heartbeat during it, the poison limit and the budget pause are the step
middleware's (actors/middleware.py); what is left here is what the step decides:

- a stage's outcome is committed; the commit writes the next message to the outbox in its transaction
  (store/outbox.py), and the message is sent after it and crossed off — if the send fails, a sweeper
  sends it from the outbox, so a commit never strands its item;
- Redis or the store failing under the step is an infrastructure error: raised, the middleware gives the
  item back, and dramatiq's Retries retries the message (the actors retry nothing else: ``retry_when``);
- a model call that still fails with a transient error after the runner's own attempts (``[runner]
  max_attempts`` with backoff: the one retry layer for model calls) fails the item with the error kept,
  shown by `status`, and `retry-failed` resumes it — fail closed, not a silent loop behind the broker;
- a checker fault (a gate's model gave no usable reply) moves nothing: it is recorded, the item is given
  back and its step is sent again after a backoff; after ``FAULTS_PER_STEP`` faults in a row the item
  fails with the fault as its error, for `retry-failed` (issue 9);
- any other error fails the item with the error kept.
"""

from __future__ import annotations

from playlisteval.actors.app import App
from playlisteval.actors.middleware import Turn, release_quietly, run_inline
from playlisteval.build.stages import STAGES, StepContext, faults
from playlisteval.config import Settings
from playlisteval.errors import BudgetExceeded, CheckerFault, TransientModelError, as_infrastructure, outage_of
from playlisteval.logs import get_logger, outage
from playlisteval.models.batch.lifecycle import Deferred
from playlisteval.store import items, outbox
from playlisteval.store.states import WORKING, Event, Limits, State

log = get_logger(__name__)

def limits_for(settings: Settings) -> Limits:
    b = settings.build
    return Limits(attempts_per_phase=b.attempts_per_phase, phase2_per_question=b.phase2_per_question)


def run_step(app: App, state: State, item_id: int) -> State | None:
    """Do the item's step if it is still in ``state``, in this thread, through the step middleware as a
    worker would (tests, tools); return the state it moved to (None: nothing done)."""
    return run_inline(app, state, item_id, take_step)


def take_step(turn: Turn) -> State | None:
    """The step of a claimed item (``turn.claim``): the actors' body, between the middleware's hooks."""
    app, state, item_id, claim = turn.app, turn.state, turn.item_id, turn.claim
    assert claim is not None
    limits = limits_for(app.settings)
    ctx = StepContext(app.settings, app.engine, app.runner, item_id, claim.progress)
    try:
        result = STAGES[state](ctx)
    except BudgetExceeded as exc:
        turn.paused = exc  # BudgetPause gives the item back and pauses the build
        return None
    except CheckerFault as fault:
        return _checker_fault(turn, limits, fault)
    except Deferred:  # a request of a batched role waits for its batch (issue 15): the item waits, unmoved
        log.debug("step.deferred", item=item_id, state=state.value)
        return None  # StepClaim gives it back
    except Exception as exc:
        infra = as_infrastructure(exc)
        if infra is not None:  # Redis or the store, not the item: given back, dramatiq retries the message
            _outage(exc, "step.infrastructure", item=item_id, state=state.value)
            raise infra from exc
        error = f"{type(exc).__name__}: {exc}"
        if isinstance(exc, TransientModelError):  # the runner's attempts are spent: fail closed
            error += (f" (after {app.settings.runner.max_attempts} attempts;"
                      " `playlisteval retry-failed` tries again)")
        log.error("step.failed", item=item_id, state=state.value, error=error)
        return _commit(turn, Event.ERROR, limits, error=error)
    return _commit(turn, result.event, limits, result.write, reason=result.reason)


def _commit(turn: Turn, event: Event, limits: Limits, write: items.Writer | None = None, *,
            error: str | None = None, reason: str = "") -> State | None:
    """Commit the step (its next message into the outbox with it), then send that message."""
    assert turn.claim is not None
    turn.end_heartbeat()
    moved = items.commit(turn.app.engine, turn.claim, event, limits, write, error=error)
    turn.settled = True
    if moved is None:
        log.warning("step.lease_lost", item=turn.item_id, state=turn.state.value)
        return None
    log.info("step.done", item=turn.item_id, step=turn.state.value, outcome=event.value, to=moved.value,
             reason=reason[:120])
    if moved in WORKING:
        send_next(turn.app, turn.item_id, moved)
    return moved


def send_next(app: App, item_id: int, state: State) -> None:
    """Send the message a commit left in the outbox, and cross it off. A send that fails leaves the row:
    a sweeper sends it after ``[broker] sweep_grace_s``."""
    try:
        app.enqueue(item_id, state)
    except Exception as exc:
        if as_infrastructure(exc) is None:
            raise
        _outage(exc, "step.enqueue_failed", item=item_id, state=state.value, outbox=True)
        return
    try:
        outbox.sent(app.engine, item_id, state)
    except Exception as exc:  # sent, not crossed off: a sweeper sends it again — harmless (claim by CAS)
        if as_infrastructure(exc) is None:
            raise
        _outage(exc, "step.outbox_failed", item=item_id, state=state.value)


def _outage(exc: Exception, event: str, **fields: object) -> None:
    """An infrastructure error the step gets past: once per outage (logs/outage.py), else a warning."""
    if not outage.failed(outage_of(exc), exc, where=event, **fields):
        log.warning(event, error=str(exc), **fields)


def fault_backoff_ms(app: App, state: State, faults_in_a_row: int) -> int:
    """How long a faulted step waits to be sent again: the actor's own backoff (``min_backoff``, 2 s),
    doubled for each fault in a row, at most its ``max_backoff``."""
    options = app.actors[state].options
    first, most = int(options.get("min_backoff", 2_000)), int(options.get("max_backoff", 120_000))
    return min(most, first * 2 ** (faults_in_a_row - 1))


#: The phase (and the progress counter holding its current attempt) of each checking state.
_CHECKING = {State.QA_GENERATED: 1, State.DEGRADED: 2}


def _checker_fault(turn: Turn, limits: Limits, fault: CheckerFault) -> State | None:
    """Record the fault; fail the item once the step has had too many, else give it back and send the
    step again after a backoff (a message of its own, not dramatiq's retry of a failed one)."""
    app, claim, state = turn.app, turn.claim, turn.state
    assert claim is not None
    phase = fault.phase or _CHECKING.get(state, 0)
    attempt = fault.attempt or (claim.progress.phase1_attempts if phase == 1 else claim.progress.phase2_attempts)
    n = faults.record(app.engine, claim.item_id, claim.token, fault, phase, attempt)
    if n is None:
        turn.settled = True  # someone else holds the item: nothing of ours to give back
        log.warning("step.lease_lost", item=claim.item_id, state=state.value)
        return None
    log.warning("step.checker_fault", item=claim.item_id, state=state.value, gate=fault.gate, role=fault.role,
                faults=n, reason=fault.reason[:200])
    if n >= faults.FAULTS_PER_STEP:
        return _commit(turn, Event.ERROR, limits, error=faults.failure_message(fault, n))
    release_quietly(turn)
    delay_ms = fault_backoff_ms(app, state, n)
    try:
        app.enqueue(claim.item_id, state, delay_ms=delay_ms)
    except Exception as exc:  # the broker is down: the item has no lease and no message, a sweeper sends it
        if as_infrastructure(exc) is None:
            raise
        _outage(exc, "step.enqueue_failed", item=claim.item_id, state=state.value)
    return None
