"""The item state machine (SPEC E): states, events, attempt rules. Pure: no I/O, no clock.

    pending ──generated──▶ qa_generated ──passed──▶ gated ──generated──▶ degraded ──passed──▶ accepted
       ▲                        │ rejected               ▲                   │ rejected        │
       └────────────────────────┘ (Phase I again)        └───────────────────┘ (< 3 on this    ├─selected─▶ selected
       ▲                                                   question)          │                 └─too_easy─▶ too_easy
       └──────────────────────────────────────────────────────────────────────┘ (3rd rejection:
                                                                                  Phase I restarts)
    Any attempt past T per seed and phase ──▶ discarded.   Any permanent error ──▶ failed (retry-failed
    puts it back where it failed).

Attempts are counted when a generation finishes (``generated`` or ``malformed``): a malformed
generation is a rejected attempt with its own reason (DESIGN principle 5).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum

from playlisteval.errors import StateError


class State(StrEnum):
    PENDING = "pending"
    QA_GENERATED = "qa_generated"
    GATED = "gated"
    DEGRADED = "degraded"
    ACCEPTED = "accepted"
    SELECTED = "selected"
    TOO_EASY = "too_easy"
    DISCARDED = "discarded"
    FAILED = "failed"


class Event(StrEnum):
    GENERATED = "generated"  # a generator produced a well-formed candidate
    MALFORMED = "malformed"  # a generator's output stayed malformed after repair retries
    PASSED = "passed"  # every gate of the phase passed
    REJECTED = "rejected"  # a gate rejected the candidate
    ERROR = "error"  # a permanent error
    SELECTED = "selected"  # kept by the difficulty gate and drawn into the benchmark
    TOO_EASY = "too_easy"  # no pair survived the difficulty gate
    RETRY = "retry"  # retry-failed


#: States in which a build actor has work to do.
WORKING = (State.PENDING, State.QA_GENERATED, State.GATED, State.DEGRADED)
#: States a build never leaves on its own.
TERMINAL = (State.ACCEPTED, State.SELECTED, State.TOO_EASY, State.DISCARDED, State.FAILED)


@dataclass(frozen=True)
class Limits:
    attempts_per_phase: int = 6  # SPEC E3: T
    phase2_per_question: int = 3  # SPEC E2

    def __post_init__(self) -> None:
        if self.attempts_per_phase < 1 or self.phase2_per_question < 1:
            raise StateError("attempt limits must be at least 1")


@dataclass(frozen=True)
class Progress:
    """What the state machine needs to know about one item."""

    state: State = State.PENDING
    phase1_attempts: int = 0  # Phase I generations for this seed
    phase2_attempts: int = 0  # Phase II generations for this seed, over all its questions
    phase2_on_question: int = 0  # Phase II generations for the current question
    failed_from: State | None = None


def _after_phase1_rejection(p: Progress, limits: Limits) -> Progress:
    if p.phase1_attempts >= limits.attempts_per_phase:
        return replace(p, state=State.DISCARDED)
    return replace(p, state=State.PENDING, phase2_on_question=0)


def _after_phase2_rejection(p: Progress, limits: Limits) -> Progress:
    if p.phase2_attempts >= limits.attempts_per_phase:
        return replace(p, state=State.DISCARDED)
    if p.phase2_on_question >= limits.phase2_per_question:
        # SPEC E2: the question itself is given up; Phase I restarts with the history as feedback.
        return _after_phase1_rejection(p, limits)
    return replace(p, state=State.GATED)


def advance(p: Progress, event: Event, limits: Limits = Limits()) -> Progress:
    """Return the progress after ``event``; raise StateError for a transition that is not allowed."""
    s = p.state
    if event is Event.ERROR and s in WORKING:
        return replace(p, state=State.FAILED, failed_from=s)
    if s is State.PENDING:
        if p.phase1_attempts >= limits.attempts_per_phase:
            raise StateError("Phase I attempts exhausted; the item should have been discarded")
        if event is Event.GENERATED:
            return replace(p, state=State.QA_GENERATED, phase1_attempts=p.phase1_attempts + 1,
                           phase2_on_question=0)
        if event is Event.MALFORMED:
            return _after_phase1_rejection(replace(p, phase1_attempts=p.phase1_attempts + 1), limits)
    elif s is State.QA_GENERATED:
        if event is Event.PASSED:
            return replace(p, state=State.GATED)
        if event is Event.REJECTED:
            return _after_phase1_rejection(p, limits)
    elif s is State.GATED:
        if p.phase2_attempts >= limits.attempts_per_phase:
            raise StateError("Phase II attempts exhausted; the item should have been discarded")
        bumped = replace(p, phase2_attempts=p.phase2_attempts + 1,
                         phase2_on_question=p.phase2_on_question + 1)
        if event is Event.GENERATED:
            return replace(bumped, state=State.DEGRADED)
        if event is Event.MALFORMED:
            return _after_phase2_rejection(bumped, limits)
    elif s is State.DEGRADED:
        if event is Event.PASSED:
            return replace(p, state=State.ACCEPTED)
        if event is Event.REJECTED:
            return _after_phase2_rejection(p, limits)
    elif s is State.ACCEPTED:
        if event is Event.SELECTED:
            return replace(p, state=State.SELECTED)
        if event is Event.TOO_EASY:
            return replace(p, state=State.TOO_EASY)
    elif s is State.FAILED and event is Event.RETRY:
        return replace(p, state=p.failed_from or State.PENDING, failed_from=None)
    raise StateError(f"no transition from {s.value!r} on {event.value!r}")


def allowed_events(state: State) -> tuple[Event, ...]:
    """Events ``advance`` accepts in ``state`` (ignoring attempt limits)."""
    table: dict[State, tuple[Event, ...]] = {
        State.PENDING: (Event.GENERATED, Event.MALFORMED, Event.ERROR),
        State.QA_GENERATED: (Event.PASSED, Event.REJECTED, Event.ERROR),
        State.GATED: (Event.GENERATED, Event.MALFORMED, Event.ERROR),
        State.DEGRADED: (Event.PASSED, Event.REJECTED, Event.ERROR),
        State.ACCEPTED: (Event.SELECTED, Event.TOO_EASY),
        State.FAILED: (Event.RETRY,),
    }
    return table.get(state, ())
