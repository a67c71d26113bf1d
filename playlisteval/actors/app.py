"""One process's wiring: settings, store, runner, broker and the actors declared on it."""

from __future__ import annotations

import os
import socket
from functools import partial

import dramatiq
from sqlalchemy.engine import Engine

from playlisteval.actors.leases import LeaseKeeper
from playlisteval.broker import make_broker
from playlisteval.config import Settings
from playlisteval.errors import StateError
from playlisteval.models.runner import Runner
from playlisteval.state import State
from playlisteval.store import open_store

BUILD_QUEUE = "build"
STEP_NAMES: dict[State, str] = {
    State.PENDING: "generate_qa",
    State.QA_GENERATED: "check_qa",
    State.GATED: "generate_distractors",
    State.DEGRADED: "check_distractors",
}

_current: App | None = None


def current_app() -> App:
    if _current is None:
        raise StateError("no playlisteval App in this process (App(settings) first)")
    return _current


def _step(state: State, item_id: int) -> None:
    from playlisteval.actors.step import run_step

    run_step(current_app(), state, item_id)


class App:
    def __init__(self, settings: Settings, *, engine: Engine | None = None, runner: Runner | None = None,
                 broker: dramatiq.Broker | None = None) -> None:
        global _current
        self.settings = settings
        self.engine = engine or open_store(settings)
        self.worker_id = f"{socket.gethostname()}:{os.getpid()}"
        self.runner = runner or Runner(settings, self.engine, worker=self.worker_id)
        self.leases = LeaseKeeper(self.engine, settings.broker.lease_s)  # renewed while each step runs
        self.broker = broker or make_broker(settings)
        dramatiq.set_broker(self.broker)
        cfg = settings.runner
        # the time limit must exceed a whole model call with its retries (DESIGN, delivery facts); the
        # lease need not: it is renewed while the step runs
        time_limit_ms = int(max(settings.broker.lease_s, cfg.timeout_s * cfg.max_attempts) * 1000)
        self.actors: dict[State, dramatiq.Actor[[int], None]] = {}
        for state, name in STEP_NAMES.items():
            fn = partial(_step, state)
            fn.__name__ = name  # type: ignore[attr-defined]
            fn.__module__ = __name__
            self.actors[state] = dramatiq.actor(
                actor_name=name, queue_name=BUILD_QUEUE, broker=self.broker,
                max_retries=5, min_backoff=2_000, max_backoff=120_000, time_limit=time_limit_ms,
            )(fn)
        # the "index" queue's actors (issue 3): `playlisteval worker` serves them next to the build's
        from playlisteval.index.actors import IndexContext, declare_index_actors

        self.index_actors = declare_index_actors(
            self.broker, lambda: IndexContext(self.settings, self.engine, self.worker_id))
        _current = self

    def enqueue(self, item_id: int, state: State) -> None:
        actor = self.actors.get(state)
        if actor is not None:
            actor.send(item_id)
