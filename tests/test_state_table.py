"""One state table (issue 10, deliverable 5): the transitions as data and each working state's step declared
once in playlisteval/store/states.py; everything derived from them agrees with them — the working and terminal
sets, the events allowed, what ``advance`` does, the actors (names, queues), the stages and the funnel."""

from __future__ import annotations

import itertools

import pytest

from playlisteval.actors import STEP_NAMES, tasks
from playlisteval.benchmark.pairs import FINISHED as FINISHED_VALUES
from playlisteval.build.stages import STAGES
from playlisteval.commands.funnel import GATES
from playlisteval.errors import StateError
from playlisteval.store.states import (
    FINISHED,
    GATE_ORDER,
    REDIRECTS,
    STEPS,
    TERMINAL,
    TRANSITIONS,
    WORKING,
    Event,
    Limits,
    Progress,
    State,
    advance,
    allowed_events,
)

ROOMY = Limits(attempts_per_phase=6, phase2_per_question=3)


def test_working_and_terminal_split_the_states_by_the_steps() -> None:
    assert set(WORKING) == set(STEPS) and not set(WORKING) & set(TERMINAL)
    assert set(WORKING) | set(TERMINAL) == set(State)
    assert list(WORKING) == [s for s in State if s in WORKING]  # the funnel's order: the states' order
    # a build never leaves a terminal state on its own: only select (accepted) and retry-failed (failed) do
    build_events = {Event.GENERATED, Event.MALFORMED, Event.PASSED, Event.REJECTED, Event.ERROR}
    assert not [(s, e) for (s, e) in TRANSITIONS if s in TERMINAL and e in build_events]
    assert all(TRANSITIONS.get((s, Event.ERROR)) is State.FAILED for s in WORKING)


def test_allowed_events_are_the_tables() -> None:
    for state in State:
        assert set(allowed_events(state)) == {e for (s, e) in TRANSITIONS if s is state}


@pytest.mark.parametrize(("state", "event"), list(itertools.product(State, Event)))
def test_advance_follows_the_table(state: State, event: Event) -> None:
    """Fresh counters: the table's state; anything the table lacks is refused."""
    p = Progress(state=state, failed_from=None)
    if (state, event) not in TRANSITIONS:
        with pytest.raises(StateError):
            advance(p, event, ROOMY)
        return
    assert advance(p, event, ROOMY).state is TRANSITIONS[state, event]


def test_every_redirect_is_reached_and_no_other() -> None:
    """The attempt rules send a rejection only where REDIRECTS says, and each place it lists is reached."""
    reached: dict[tuple[State, Event], set[State]] = {}
    for (state, event), target in TRANSITIONS.items():
        if state is State.FAILED:  # retry-failed: back where it failed
            starts = [Progress(state=state, failed_from=origin) for origin in WORKING]
        else:
            starts = [Progress(state=state, phase1_attempts=p1, phase2_attempts=p2, phase2_on_question=q)
                      for p1, p2, q in itertools.product(range(7), range(7), range(4))]
        for progress in starts:
            try:
                out = advance(progress, event, ROOMY).state
            except StateError:
                continue  # attempts already exhausted: the item would have been discarded
            if out is not target:
                reached.setdefault((state, event), set()).add(out)
    assert reached == {k: set(v) for k, v in REDIRECTS.items()}


def test_every_state_is_reachable_and_every_working_state_can_finish() -> None:
    edges = {(s, t) for (s, e), t in TRANSITIONS.items()} | {(s, t) for (s, _), ts in REDIRECTS.items() for t in ts}
    seen, todo = {State.PENDING}, [State.PENDING]
    while todo:
        here = todo.pop()
        for s, t in edges:
            if s is here and t not in seen:
                seen.add(t)
                todo.append(t)
    assert seen == set(State)
    for state in WORKING:
        ahead, todo = {state}, [state]
        while todo:
            here = todo.pop()
            for s, t in edges:
                if s is here and t not in ahead:
                    ahead.add(t)
                    todo.append(t)
        assert ahead & set(TERMINAL)


def test_the_actors_stages_and_funnel_are_derived_from_the_steps() -> None:
    assert set(tasks.STEPS) == set(STEPS) == set(STAGES) == set(STEP_NAMES)
    for state, step in STEPS.items():
        actor = tasks.STEPS[state]
        assert (actor.actor_name, actor.queue_name) == (step.actor, step.queue) == (STEP_NAMES[state], step.queue)
        assert getattr(tasks, step.actor) is actor  # a module attribute, as the dramatiq CLI expects
        assert actor.queue_name in tasks.QUEUES
        assert STAGES[state].__module__ == f"playlisteval.build.stages.{step.stage}"
    assert GATES == GATE_ORDER == tuple(g for s in WORKING for g in STEPS[s].gates)
    assert GATE_ORDER == ("C1", "C2.1", "C2.2", "C3", "D2", "D3", "D4")
    assert FINISHED == (State.ACCEPTED, State.SELECTED, State.TOO_EASY)
    assert tuple(s.value for s in FINISHED) == FINISHED_VALUES
