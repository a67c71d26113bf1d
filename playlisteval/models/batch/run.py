"""Driving batches to the end, and running a piece of work through them (issue 15).

``drive`` repeats write → send → poll until no request is live or its wait is over, sleeping until the
next batch is due (each batch's polls back off from [batch] poll_s to poll_max_s). ``run_batched`` runs
a caller's work twice around it: the first pass answers what the cache holds and queues the rest (the
runner's ``defer`` hook), the batches run, and the second pass finds the batched answers in the cache —
exactly as online answers — asks online what the batches failed, and skips what is still in a batch
(a later run, or `resume`, picks those up: the store remembers them).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TypeVar

from sqlalchemy import func
from sqlalchemy.engine import Engine
from sqlmodel import col, select

from playlisteval.config import Settings
from playlisteval.errors import BudgetExceeded, QuotaExhausted
from playlisteval.logs import get_logger
from playlisteval.models.batch.api import Backends
from playlisteval.models.batch.lifecycle import Collector, send_pending, write_batches
from playlisteval.models.batch.listing import LIVE, OPEN
from playlisteval.models.batch.results import poll_open
from playlisteval.models.runner import Runner
from playlisteval.store import transaction
from playlisteval.store.tables import ModelBatch, ModelBatchRequest

log = get_logger(__name__)
T = TypeVar("T")


class Clock:
    """Wall time and sleeping, replaceable in tests (a fake clock that jumps instead of sleeping)."""

    def now(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


@dataclass
class DriveReport:
    sent: int = 0  # batches that reached their provider
    stored: int = 0  # answers stored in the cache and the ledger
    live: int = 0  # requests still queued or in a batch when the drive stopped
    released: int = 0  # requests the batches gave back to the online path
    stopped: str = ""  # "budget" / "quota": a batch could not be written or sent; what is queued waits
    waiting: int = 0  # requests the last pass found still in a batch (set by the caller)

    @property
    def settled(self) -> bool:
        return self.live == 0


def live_requests(engine: Engine) -> int:
    with transaction(engine) as s:
        return int(s.exec(select(func.count()).select_from(ModelBatchRequest)
                          .where(col(ModelBatchRequest.state).in_(LIVE))).one())


def _released(engine: Engine) -> int:
    with transaction(engine) as s:
        return int(s.exec(select(func.count()).select_from(ModelBatchRequest)
                          .where(col(ModelBatchRequest.state).in_(("failed", "expired")))).one())


def _next_due(engine: Engine) -> float | None:
    with transaction(engine) as s:
        due = s.exec(select(func.min(ModelBatch.next_poll_at)).where(col(ModelBatch.state).in_(OPEN))).one()
    return float(due) if due is not None else None


def step(settings: Settings, engine: Engine, backends: Backends, now: float) -> DriveReport:
    """One round: write queued requests into batches, send what is due, poll what is due."""
    encoded = write_batches(settings, engine, backends, now)
    report = DriveReport()
    report.sent = send_pending(settings, engine, backends, now, encoded)
    report.stored = poll_open(settings, engine, backends, now)
    return report


def drive(settings: Settings, engine: Engine, backends: Backends | None = None, *, clock: Clock | None = None,
          wait_s: float | None = None, tick: Callable[[DriveReport], None] | None = None) -> DriveReport:
    """Work the batches until no request is live, or ``wait_s`` (default [batch] wait_s) has passed."""
    clock = clock or Clock()
    backends = backends or Backends(settings)
    released_before = _released(engine)
    deadline = clock.now() + (settings.batch.wait_s if wait_s is None else wait_s)
    total = DriveReport()
    while True:
        now = clock.now()
        one = step(settings, engine, backends, now)
        total.sent += one.sent
        total.stored += one.stored
        total.live = live_requests(engine)
        total.released = _released(engine) - released_before
        if tick:
            tick(total)
        if total.live == 0:
            return total
        due = _next_due(engine)
        now = clock.now()
        if now >= deadline:
            log.info("batch.wait_over", live=total.live)
            return total
        # queued requests with no batch yet are written at once on the next round
        wake = now if due is None else min(max(due, now), deadline)
        clock.sleep(max(0.0, wake - now))


def run_batched(settings: Settings, engine: Engine, roles: Iterable[str], work: Callable[[Runner], T], *,
                backends: Backends | None = None, clock: Clock | None = None, wait_s: float | None = None,
                runner: Runner | None = None, tick: Callable[[DriveReport], None] | None = None,
                max_rounds: int = 6) -> tuple[T, DriveReport, int]:
    """``work`` once to queue, the batches driven, ``work`` again to use the answers — and again while a
    pass queues new requests (a judge re-asked after a reply with no verdict), at most ``max_rounds``
    drives. Returns the last pass's result, the drives' report and the requests still waiting."""
    runner = runner or Runner(settings, engine)
    backends = backends or Backends(settings, runner.registry)
    clock = clock or Clock()
    collector = Collector(settings, engine, roles)
    deadline = clock.now() + (settings.batch.wait_s if wait_s is None else wait_s)
    total = DriveReport()
    runner.defer = collector.defer
    try:
        result = work(runner)
        for _ in range(max_rounds):
            if not collector.deferred:
                break
            try:
                report = drive(settings, engine, backends, clock=clock, wait_s=max(0.0, deadline - clock.now()),
                               tick=tick)
            except BudgetExceeded as exc:  # nothing more can be sent: use what came, keep the rest queued
                total.stopped = "quota" if isinstance(exc, QuotaExhausted) else "budget"
                log.warning("batch.stopped", reason=total.stopped, error=str(exc))
                collector.deferred = 0
                result = work(runner)
                break
            total.sent, total.stored = total.sent + report.sent, total.stored + report.stored
            total.released += report.released
            total.live = report.live
            collector.deferred = 0
            result = work(runner)  # batched answers now come from the cache; released ones are asked online
            if not report.settled:
                break  # the wait is over: what is still in a batch is picked up by a later run
    finally:
        runner.defer = None
    total.live = live_requests(engine)
    return result, total, collector.deferred
