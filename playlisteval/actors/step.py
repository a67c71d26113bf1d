"""One step of one item: claim (lease) → stage → commit outputs + transition → enqueue the next step.

A checker fault (a gate's model gave no usable reply) moves nothing: it is recorded, the lease is given
back and the message is retried with the actor's backoff; after ``FAULTS_PER_STEP`` faults in a row the
item fails with the fault as its error, for `retry-failed` (issue 9).
"""

from __future__ import annotations

import structlog

from playlisteval.actors.app import App
from playlisteval.config import Settings
from playlisteval.errors import BudgetExceeded, CheckerFault, TransientModelError, as_infrastructure
from playlisteval.models.batch import Deferred
from playlisteval.models.runner import PAUSED_KEY
from playlisteval.stages import STAGES, StepContext, faults
from playlisteval.state import WORKING, Event, Limits, State
from playlisteval.store import items, transaction
from playlisteval.store.tables import KeyValue

log = structlog.get_logger(__name__)


def limits_for(settings: Settings) -> Limits:
    b = settings.build
    return Limits(attempts_per_phase=b.attempts_per_phase, phase2_per_question=b.phase2_per_question)


def run_step(app: App, state: State, item_id: int) -> State | None:
    """Do the item's step if it is still in ``state``; return the state it moved to (None: nothing done)."""
    claim = items.claim(app.engine, item_id, state, app.worker_id, app.settings.broker.lease_s)
    if claim is None:
        log.debug("step.skipped", item=item_id, state=state.value, why="moved on or leased")
        return None
    limits = limits_for(app.settings)
    if claim.claims > app.settings.broker.max_claims:
        # claimed again and again without a commit: it keeps killing its worker (SIGKILL, OOM)
        reason = f"poison: claimed {claim.claims} times without finishing its {state.value} step"
        log.error("step.poison", item=item_id, state=state.value, claims=claim.claims)
        return items.commit(app.engine, claim, Event.ERROR, limits, error=reason)
    ctx = StepContext(app.settings, app.engine, app.runner, item_id, claim.progress)
    try:
        with app.leases.hold(claim):  # renewed while the stage runs: a short lease, never outlived
            result = STAGES[state](ctx)
    except BudgetExceeded as exc:
        items.release(app.engine, claim)
        with transaction(app.engine) as s:
            s.merge(KeyValue(key=PAUSED_KEY, value=str(exc)))
        log.warning("build.paused", item=item_id, reason=str(exc))
        return None
    except TransientModelError:
        items.release(app.engine, claim)
        raise  # dramatiq retries the message with backoff; `resume` covers what it gives up on
    except CheckerFault as fault:
        return _checker_fault(app, claim, state, limits, fault)
    except Deferred:  # a request of a batched role waits for its batch (issue 15): the item waits, unmoved
        items.release(app.engine, claim)
        log.debug("step.deferred", item=item_id, state=state.value)
        return None
    except Exception as exc:  # permanent: the item fails with the error kept; retry-failed resumes it
        infra = as_infrastructure(exc)
        if infra is not None:  # Redis or the store, not the item: give it back, dramatiq retries the step
            _release_quietly(app, claim)
            log.warning("step.infrastructure", item=item_id, state=state.value, error=str(infra))
            raise infra from exc
        log.error("step.failed", item=item_id, state=state.value, error=f"{type(exc).__name__}: {exc}")
        return items.commit(app.engine, claim, Event.ERROR, limits, error=f"{type(exc).__name__}: {exc}")
    moved = items.commit(app.engine, claim, result.event, limits, result.write)
    if moved is None:
        log.warning("step.lease_lost", item=item_id, state=state.value)
        return None
    log.info("step.done", item=item_id, step=state.value, outcome=result.event.value, to=moved.value,
             reason=result.reason[:120])
    if moved in WORKING:
        try:
            app.enqueue(item_id, moved)
        except Exception as exc:
            if as_infrastructure(exc) is None:
                raise
            # committed, but the broker is down: a worker's sweeper sends the message once it is back
            log.warning("step.enqueue_failed", item=item_id, state=moved.value, error=str(exc))
    return moved


def _release_quietly(app: App, claim: items.Claim) -> None:
    try:
        items.release(app.engine, claim)
    except Exception as exc:  # the store itself failed: the lease lapses (no heartbeat) and is swept
        log.warning("step.release_failed", item=claim.item_id, error=f"{type(exc).__name__}: {exc}")


#: The phase (and the progress counter holding its current attempt) of each checking state.
_CHECKING = {State.QA_GENERATED: 1, State.DEGRADED: 2}


def _checker_fault(app: App, claim: items.Claim, state: State, limits: Limits, fault: CheckerFault) -> State | None:
    """Record the fault; fail the item once the step has had too many, else release it and re-raise so
    the broker delivers the step again after its backoff."""
    phase = fault.phase or _CHECKING.get(state, 0)
    attempt = fault.attempt or (claim.progress.phase1_attempts if phase == 1 else claim.progress.phase2_attempts)
    n = faults.record(app.engine, claim.item_id, claim.token, fault, phase, attempt)
    if n is None:
        log.warning("step.lease_lost", item=claim.item_id, state=state.value)
        return None
    log.warning("step.checker_fault", item=claim.item_id, state=state.value, gate=fault.gate, role=fault.role,
                faults=n, reason=fault.reason[:200])
    if n >= faults.FAULTS_PER_STEP:
        return items.commit(app.engine, claim, Event.ERROR, limits, error=faults.failure_message(fault, n))
    items.release(app.engine, claim)
    raise fault
