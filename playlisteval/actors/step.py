"""One step of one item: claim (lease) → stage → commit outputs + transition → enqueue the next step."""

from __future__ import annotations

import structlog

from playlisteval.actors.app import App
from playlisteval.config import Settings
from playlisteval.errors import BudgetExceeded, TransientModelError
from playlisteval.models.runner import PAUSED_KEY
from playlisteval.stages import STAGES, StepContext
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
    except Exception as exc:  # permanent: the item fails with the error kept; retry-failed resumes it
        log.error("step.failed", item=item_id, state=state.value, error=f"{type(exc).__name__}: {exc}")
        return items.commit(app.engine, claim, Event.ERROR, limits, error=f"{type(exc).__name__}: {exc}")
    moved = items.commit(app.engine, claim, result.event, limits, result.write)
    if moved is None:
        log.warning("step.lease_lost", item=item_id, state=state.value)
        return None
    log.info("step.done", item=item_id, step=state.value, outcome=result.event.value, to=moved.value,
             reason=result.reason[:120])
    if moved in WORKING:
        app.enqueue(item_id, moved)
    return moved
