from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from playlisteval.errors import StateError
from playlisteval.store.states import TERMINAL, WORKING, Event, Limits, Progress, State, advance, allowed_events

L = Limits(attempts_per_phase=6, phase2_per_question=3)


def test_happy_path_walks_every_working_state() -> None:
    p = Progress()
    for event, expected in [(Event.GENERATED, State.QA_GENERATED), (Event.PASSED, State.GATED),
                            (Event.GENERATED, State.DEGRADED), (Event.PASSED, State.ACCEPTED),
                            (Event.SELECTED, State.SELECTED)]:
        p = advance(p, event, L)
        assert p.state is expected
    assert (p.phase1_attempts, p.phase2_attempts) == (1, 1)


def test_too_easy_after_accepted() -> None:
    p = Progress(state=State.ACCEPTED)
    assert advance(p, Event.TOO_EASY, L).state is State.TOO_EASY


def test_phase1_rejection_returns_to_pending_then_discards_at_T() -> None:
    p = Progress()
    for attempt in range(1, 7):
        p = advance(p, Event.GENERATED, L)
        assert p.phase1_attempts == attempt
        p = advance(p, Event.REJECTED, L)
    assert p.state is State.DISCARDED


def test_malformed_generation_counts_as_an_attempt() -> None:
    p = advance(Progress(), Event.MALFORMED, L)
    assert (p.state, p.phase1_attempts) == (State.PENDING, 1)
    p = advance(Progress(state=State.GATED, phase1_attempts=1), Event.MALFORMED, L)
    assert (p.state, p.phase2_attempts, p.phase2_on_question) == (State.GATED, 1, 1)


def test_third_phase2_rejection_restarts_phase1() -> None:
    p = Progress(state=State.GATED, phase1_attempts=1)
    for n in range(1, 4):
        p = advance(p, Event.GENERATED, L)
        p = advance(p, Event.REJECTED, L)
        if n < 3:
            assert (p.state, p.phase2_on_question) == (State.GATED, n)
    assert p.state is State.PENDING  # SPEC E2: Phase I restarts for the same seed
    assert p.phase2_attempts == 3
    p = advance(p, Event.GENERATED, L)
    assert p.phase2_on_question == 0 and p.phase1_attempts == 2


def test_phase2_total_limit_discards() -> None:
    p = Progress(state=State.GATED, phase1_attempts=2, phase2_attempts=5, phase2_on_question=1)
    p = advance(advance(p, Event.GENERATED, L), Event.REJECTED, L)
    assert p.state is State.DISCARDED


def test_restart_after_last_phase1_attempt_discards() -> None:
    p = Progress(state=State.DEGRADED, phase1_attempts=6, phase2_attempts=3, phase2_on_question=3)
    assert advance(p, Event.REJECTED, L).state is State.DISCARDED


@pytest.mark.parametrize("state", list(WORKING))
def test_error_fails_and_retry_restores(state: State) -> None:
    p = advance(Progress(state=state), Event.ERROR, L)
    assert p.state is State.FAILED and p.failed_from is state
    assert advance(p, Event.RETRY, L).state is state


@pytest.mark.parametrize("state", list(State))
def test_only_allowed_events_are_accepted(state: State) -> None:
    for event in Event:
        p = Progress(state=state, failed_from=State.PENDING if state is State.FAILED else None)
        if event in allowed_events(state):
            advance(p, event, L)
        else:
            with pytest.raises(StateError):
                advance(p, event, L)


def test_terminal_states_have_no_build_events() -> None:
    for state in (State.SELECTED, State.TOO_EASY, State.DISCARDED):
        assert allowed_events(state) == ()


@settings(max_examples=300, deadline=None)
@given(
    verdicts=st.lists(st.sampled_from(["ok", "reject", "malformed"]), min_size=0, max_size=200),
    t=st.integers(min_value=1, max_value=8),
    per_question=st.integers(min_value=1, max_value=5),
)
def test_random_verdicts_respect_limits_and_terminate(verdicts: list[str], t: int, per_question: int) -> None:
    limits = Limits(attempts_per_phase=t, phase2_per_question=per_question)
    p = Progress()
    stream = iter(verdicts)
    steps = 0
    while p.state in WORKING:
        v = next(stream, "reject")  # once the draws run out, keep rejecting: it must still end
        if p.state in (State.PENDING, State.GATED):
            event = Event.MALFORMED if v == "malformed" else Event.GENERATED
        else:
            event = Event.PASSED if v == "ok" else Event.REJECTED
        p = advance(p, event, limits)
        steps += 1
        assert p.phase1_attempts <= t and p.phase2_attempts <= t
        assert p.phase2_on_question <= per_question
        assert steps <= 4 * t + 4 * t  # every step is a generation or its check
    assert p.state in TERMINAL
