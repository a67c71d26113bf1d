"""Start-to-close ceilings: the longest a unit of work may take before it is failed with its reason (issue 44).

A lease says whether a holder is alive; it says nothing about whether the work will ever end. A 180-s MP4
whose headers claimed 596 h pinned a worker for a quarter of an hour with its lease renewed all along. So
every kind of work has a ceiling, counted from its claim:

- a build step: ``[broker] step_ceiling_s`` (0: one model call with all its retries, at least ``lease_s``);
- a gate, judge or retrieve job: ``[broker] job_ceiling_s`` (0: twenty step ceilings);
- a video's indexing: ``[index] lease_s``.

The lease's heartbeat (actors/leases.py, index/leases.py, actors/jobs.py) enforces it: at the ceiling it
stops renewing and fails the unit in the store, compare-and-set on the holder, with the reason — whatever
the worker thread is doing, even blocked in a decoder that no Python exception reaches. The worker's own
late commit then finds the unit no longer its own and writes nothing. dramatiq's time limit, a little later,
interrupts the thread where Python code runs again, so the worker is free for the next message.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from playlisteval.config import Settings
from playlisteval.logs import get_logger

if TYPE_CHECKING:
    from playlisteval.actors.middleware import Turn

log = get_logger(__name__)

#: jobs are ten pairs of two weak judges each: twenty steps' worth
JOB_STEPS = 20


def step_s(settings: Settings) -> float:
    if settings.broker.step_ceiling_s > 0:
        return float(settings.broker.step_ceiling_s)
    runner = settings.runner
    return float(max(settings.broker.lease_s, runner.timeout_s * runner.max_attempts))


def job_s(settings: Settings) -> float:
    if settings.broker.job_ceiling_s > 0:
        return float(settings.broker.job_ceiling_s)
    return JOB_STEPS * step_s(settings)


def index_s(settings: Settings) -> float:
    return float(settings.index.lease_s)


def interrupt_ms(ceiling_s: float, settings: Settings) -> int:
    """dramatiq's time limit for work of ``ceiling_s``: the heartbeat fails the unit first (it checks every
    third of a lease), with its reason; the interrupt then frees the thread."""
    return int((ceiling_s + settings.broker.lease_s / 3 + 1.0) * 1000)


def reason(what: str, ceiling_s: float, setting: str) -> str:
    """What a unit failed at its ceiling is stored with."""
    return f"{what} exceeded its start-to-close ceiling of {ceiling_s:g} s ({setting}); failed while its worker lived"


def fail_step(turn: Turn, ceiling_s: float) -> None:
    """The step ran past its ceiling: its item fails with the reason, compare-and-set on the claim, so the
    step's own late commit writes nothing (called on the heartbeat's thread, or by StepClaim when dramatiq's
    time limit interrupted the step first)."""
    from playlisteval.actors.step import limits_for
    from playlisteval.store import items
    from playlisteval.store.states import Event

    assert turn.claim is not None
    why = reason(f"the {turn.state.value} step", ceiling_s, "[broker] step_ceiling_s")
    if items.commit(turn.app.engine, turn.claim, Event.ERROR, limits_for(turn.app.settings), error=why):
        log.error("step.ceiling", item=turn.item_id, state=turn.state.value, ceiling_s=ceiling_s)
