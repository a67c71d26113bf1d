"""A build in rounds when build roles go by batch (issue 15: roles listed in [batch] roles).

Each round runs every resumable item as far as it goes: a request of a batched role that is not in the
response cache is queued and its item given back unmoved (``Deferred``: the step commits nothing). Then
the round's requests go out as batches and are driven until they are answered (or [batch] wait_s is
over), and the next round finds those answers in the cache. Rounds go on while items wait on batches.
An item's sequential calls take one round each, so a batched build trades hours for half the price.

A reply that a semantic check must pass (the D3 and D4 rankings are permutations) comes back as the
request's first try: the runner checks it and, like any malformed reply, repairs it online. With a Redis
broker the workers only queue requests; `playlisteval batches --collect` (run now and then) sends and
collects them, and `resume` then moves the waiting items.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from playlisteval.actors import App
from playlisteval.actors.workers import run_foreground
from playlisteval.errors import BudgetExceeded
from playlisteval.logs import get_logger
from playlisteval.models.batch.api import Backends
from playlisteval.models.batch.lifecycle import Collector
from playlisteval.models.batch.run import drive, live_requests
from playlisteval.models.budget import PAUSED_KEY
from playlisteval.store import cancels, items, transaction
from playlisteval.store.states import State
from playlisteval.store.tables import KeyValue

log = get_logger(__name__)

#: roles of the build (everything but the difficulty gate, the judges and the human study)
BUILD_ROLES = frozenset({"B", "C2_transcript_answer", "C2_transcript_verify", "C2_parametric_answer_a",
                         "C2_parametric_verify_a", "C2_parametric_answer_b", "C2_parametric_verify_b", "C3", "D1",
                         "D3_first", "D3_second", "D4"})
MAX_ROUNDS = 200  # a bound, far above the calls one item makes


def batched_roles(app: App) -> frozenset[str]:
    return BUILD_ROLES & frozenset(app.settings.batch.roles)


def run_build(app: App, work: Iterable[tuple[int, State]], on_tick: Callable[[], None] | None = None) -> int:
    """Run ``work`` in this process, in rounds around batches when build roles go by batch; returns
    the rounds run (1 without batches)."""
    roles = batched_roles(app)
    if not roles:
        run_foreground(app, work, on_tick)
        if live_requests(app.engine):  # a judge run's or the gate's batches: send and collect what is due
            try:
                drive(app.settings, app.engine, Backends(app.settings, app.runner.registry), wait_s=0)
            except BudgetExceeded as exc:  # their purpose's budget, not the build's: they wait
                log.warning("batch.waiting", reason=str(exc))
        return 1
    collector = Collector(app.settings, app.engine, roles)
    backends = Backends(app.settings, app.runner.registry)
    app.runner.defer = collector.defer
    rounds = 0
    try:
        while rounds < MAX_ROUNDS:
            rounds += 1
            collector.deferred = 0
            run_foreground(app, work, on_tick)
            if not collector.deferred and not live_requests(app.engine) or cancels.is_set(app.engine, cancels.BUILD):
                break
            try:
                report = drive(app.settings, app.engine, backends)
            except BudgetExceeded as exc:  # as a step would: the build pauses, resumable
                with transaction(app.engine) as s:
                    s.merge(KeyValue(key=PAUSED_KEY, value=str(exc)))
                log.warning("build.paused", reason=str(exc))
                break
            log.info("build.round", round=rounds, waited=collector.deferred, stored=report.stored,
                     released=report.released, live=report.live)
            if not report.settled:
                break  # the wait is over: `resume` (or `build`) later picks the batches and the items up
            work = items.resumable(app.engine)
    finally:
        app.runner.defer = None
    return rounds
