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


#: The transitions, as data: (state, event) → the state it leads to. The attempt rules of ``advance`` may
#: send a rejection further (past T attempts: discarded; the 3rd Phase II rejection of a question: Phase I
#: again), an error is kept with the state it came from, and a retry goes back there.
TRANSITIONS: dict[tuple[State, Event], State] = {
    (State.PENDING, Event.GENERATED): State.QA_GENERATED,
    (State.PENDING, Event.MALFORMED): State.PENDING,
    (State.PENDING, Event.ERROR): State.FAILED,
    (State.QA_GENERATED, Event.PASSED): State.GATED,
    (State.QA_GENERATED, Event.REJECTED): State.PENDING,
    (State.QA_GENERATED, Event.ERROR): State.FAILED,
    (State.GATED, Event.GENERATED): State.DEGRADED,
    (State.GATED, Event.MALFORMED): State.GATED,
    (State.GATED, Event.ERROR): State.FAILED,
    (State.DEGRADED, Event.PASSED): State.ACCEPTED,
    (State.DEGRADED, Event.REJECTED): State.GATED,
    (State.DEGRADED, Event.ERROR): State.FAILED,
    (State.ACCEPTED, Event.SELECTED): State.SELECTED,
    (State.ACCEPTED, Event.TOO_EASY): State.TOO_EASY,
    (State.FAILED, Event.RETRY): State.PENDING,  # back where it failed (``failed_from``)
}
#: Where the attempt rules may send a rejection instead of the table's state.
REDIRECTS: dict[tuple[State, Event], tuple[State, ...]] = {
    (State.PENDING, Event.MALFORMED): (State.DISCARDED,),
    (State.QA_GENERATED, Event.REJECTED): (State.DISCARDED,),
    (State.GATED, Event.MALFORMED): (State.PENDING, State.DISCARDED),
    (State.DEGRADED, Event.REJECTED): (State.PENDING, State.DISCARDED),
    (State.FAILED, Event.RETRY): (State.QA_GENERATED, State.GATED, State.DEGRADED),
}


@dataclass(frozen=True)
class Step:
    """The work of a working state: the actor (on ``queue``) that runs stage ``stage`` (playlisteval.build.stages)
    and the gates that stage runs, in order (the funnel's rows)."""

    actor: str
    queue: str
    stage: str
    gates: tuple[str, ...] = ()


#: Each working state's step, declared once: the actors, the stages and the funnel are derived from it.
STEPS: dict[State, Step] = {
    State.PENDING: Step("generate_qa", "build", "generate_qa"),  # Phase I generation (SPEC B)
    State.QA_GENERATED: Step("check_qa", "build", "check_qa", ("C1", "C2.1", "C2.2", "C3")),  # SPEC C
    State.GATED: Step("generate_distractors", "build", "generate_distractors"),  # SPEC D1
    State.DEGRADED: Step("check_distractors", "build", "check_distractors", ("D2", "D3", "D4")),  # SPEC D2–D4
}

#: States in which a build actor has work to do.
WORKING: tuple[State, ...] = tuple(s for s in State if s in STEPS)
#: States a build never leaves on its own.
TERMINAL: tuple[State, ...] = tuple(s for s in State if s not in STEPS)
#: The build's gates in the order they run.
GATE_ORDER: tuple[str, ...] = tuple(g for s in WORKING for g in STEPS[s].gates)
#: Items that passed every gate: accepted, and where a selection moves them.
FINISHED: tuple[State, ...] = (State.ACCEPTED, *(t for (s, _), t in TRANSITIONS.items() if s is State.ACCEPTED))


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


#: The Phase (1 or 2) whose attempt a generation event in a state finishes, and whose rules a rejection follows.
_PHASE = {State.PENDING: 1, State.QA_GENERATED: 1, State.GATED: 2, State.DEGRADED: 2}


def _counted(p: Progress, event: Event) -> Progress:
    """Attempts are counted when a generation finishes (``generated`` or ``malformed``)."""
    if event not in (Event.GENERATED, Event.MALFORMED):
        return p
    if p.state is State.PENDING:
        return replace(p, phase1_attempts=p.phase1_attempts + 1,
                       phase2_on_question=0 if event is Event.GENERATED else p.phase2_on_question)
    return replace(p, phase2_attempts=p.phase2_attempts + 1, phase2_on_question=p.phase2_on_question + 1)


def advance(p: Progress, event: Event, limits: Limits = Limits()) -> Progress:
    """Return the progress after ``event``: the table's state (TRANSITIONS), unless the attempt rules send a
    rejection further; raise StateError for a transition that is not allowed."""
    s = p.state
    target = TRANSITIONS.get((s, event))
    if target is None:
        raise StateError(f"no transition from {s.value!r} on {event.value!r}")
    if event is Event.ERROR:
        return replace(p, state=target, failed_from=s)
    if event is Event.RETRY:
        return replace(p, state=p.failed_from or target, failed_from=None)
    if s is State.PENDING and p.phase1_attempts >= limits.attempts_per_phase:
        raise StateError("Phase I attempts exhausted; the item should have been discarded")
    if s is State.GATED and p.phase2_attempts >= limits.attempts_per_phase:
        raise StateError("Phase II attempts exhausted; the item should have been discarded")
    p = _counted(p, event)
    if event in (Event.MALFORMED, Event.REJECTED):  # a rejected attempt
        return _after_phase1_rejection(p, limits) if _PHASE[s] == 1 else _after_phase2_rejection(p, limits)
    return replace(p, state=target)


def allowed_events(state: State) -> tuple[Event, ...]:
    """Events ``advance`` accepts in ``state`` (ignoring attempt limits)."""
    return tuple(e for (s, e) in TRANSITIONS if s is state)
