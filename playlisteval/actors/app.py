"""One process's wiring: settings, store, runner, broker, and the module-level actors (actors/tasks.py)
bound to that broker."""

from __future__ import annotations

import threading

import dramatiq
from sqlalchemy.engine import Engine

from playlisteval.actors import tasks
from playlisteval.actors.broker import make_broker
from playlisteval.actors.leases import LeaseKeeper
from playlisteval.actors.tasks import BUILD_QUEUE
from playlisteval.config import Settings
from playlisteval.errors import StateError
from playlisteval.models.runner import Runner
from playlisteval.store import identity, open_store
from playlisteval.store.states import State

STEP_NAMES: dict[State, str] = {state: actor.actor_name for state, actor in tasks.STEPS.items()}

_current: App | None = None
_lock = threading.Lock()


def current_app() -> App:
    """This process's App; a worker started by the dramatiq CLI makes it from the settings the actors
    module found at import."""
    global _current
    with _lock:
        if _current is None and tasks.SETTINGS is not None:
            App(tasks.SETTINGS, broker=tasks.broker)
    if _current is None:
        raise StateError("no playlisteval App in this process (App(settings) first)")
    return _current


class App:
    def __init__(self, settings: Settings, *, engine: Engine | None = None, runner: Runner | None = None,
                 broker: dramatiq.Broker | None = None) -> None:
        global _current
        self.settings = settings
        self.engine = engine or open_store(settings)
        self.worker_id = identity.this_process()  # host:pid:place.nonce (issue 44)
        self.runner = runner or Runner(settings, self.engine, worker=self.worker_id)
        self.leases = LeaseKeeper(self.engine, settings.broker.lease_s)  # renewed while each step runs
        self.broker = broker or make_broker(settings)
        dramatiq.set_broker(self.broker)
        tasks.bind(self.broker, settings)
        self.actors: dict[State, dramatiq.Actor[[int], None]] = dict(tasks.STEPS)
        _current = self

    def enqueue(self, item_id: int, state: State, *, delay_ms: int | None = None) -> None:
        """Send the item's step for ``state`` (after ``delay_ms``: a checker fault's backoff)."""
        actor = self.actors.get(state)
        if actor is not None:
            actor.send_with_options(args=(item_id,), delay=delay_ms)


__all__ = ["App", "BUILD_QUEUE", "STEP_NAMES", "current_app"]
