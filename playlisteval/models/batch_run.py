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

import structlog
from sqlalchemy import func
from sqlalchemy.engine import Engine
from sqlmodel import col, select

from playlisteval.config import Settings
from playlisteval.models.batch import LIVE, OPEN, Collector, poll_open, send_pending, write_batches
from playlisteval.models.batch_api import Backends
from playlisteval.models.runner import Runner
from playlisteval.store import transaction
from playlisteval.store.tables import ModelBatch, ModelBatchRequest

log = structlog.get_logger(__name__)
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
                ) -> tuple[T, DriveReport, int]:
    """``work`` once to queue, the batches driven, ``work`` again to finish. Returns the second pass's
    result, the drive's report and the requests still waiting in batches after the second pass."""
    runner = runner or Runner(settings, engine)
    backends = backends or Backends(settings, runner.registry)
    collector = Collector(settings, engine, roles)
    runner.defer = collector.defer
    try:
        work(runner)
        report = drive(settings, engine, backends, clock=clock, wait_s=wait_s, tick=tick)
        collector.deferred = 0
        result = work(runner)
    finally:
        runner.defer = None
    return result, report, collector.deferred
