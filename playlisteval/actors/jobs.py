"""Jobs of `select` and `eval judge` in the store: one row per question (``work_job``), claimed with a lease
like an item's step, so that a duplicate or late message does nothing and a dead worker's job is taken back.

A command makes (or re-queues) its jobs, sends one message per job id and waits for them to leave
``queued``/``running``; the store, not the broker, says how far they are, so a command can wait for workers
on other machines, and ``--no-wait`` can return at once.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from sqlalchemy import or_, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select

from playlisteval.errors import outage_of
from playlisteval.logs import get_logger, outage
from playlisteval.store.engine import transaction
from playlisteval.store.tables import KeyValue, WorkJob, now

log = get_logger(__name__)

QUEUED, RUNNING, DONE, FAILED = "queued", "running", "done", "failed"
CANCELLED = "cancelled"  # its run was cancelled before it started (actors/cancel.py); the next pass queues it
OPEN = (QUEUED, RUNNING)


@dataclass(frozen=True)
class Job:
    id: int
    kind: str
    run_id: int
    item_id: int
    pass_id: str
    payload: dict[str, Any]


def new_pass() -> str:
    return uuid.uuid4().hex[:16]


def prepare(engine: Engine, kind: str, run_id: int, item_ids: Sequence[int], pass_id: str,
            payload: dict[str, Any], payloads: Mapping[int, dict[str, Any]] | None = None) -> list[int]:
    """A queued job per item (made, or re-queued when an earlier pass finished it); its ids in item order.
    A job some worker is running now stays as it is: it is part of this pass too. ``payloads`` adds to
    ``payload`` by item."""
    ids: list[int] = []
    with transaction(engine) as s:
        have = {j.item_id: j for j in s.exec(select(WorkJob).where(
            WorkJob.kind == kind, WorkJob.run_id == run_id, col(WorkJob.item_id).in_(list(item_ids)))).all()}
        for item_id in item_ids:
            job = have.get(item_id) or WorkJob(kind=kind, run_id=run_id, item_id=item_id)
            if job.state != RUNNING or job.lease_until < now():
                job.state, job.error, job.lease_until = QUEUED, "", 0.0
            job.pass_id, job.payload, job.updated_at = pass_id, {**payload, **(payloads or {}).get(item_id, {})}, now()
            s.add(job)
            s.flush()
            ids.append(int(job.id or 0))
    return ids


def claim(engine: Engine, job_id: int, worker: str, lease_s: float) -> Job | None:
    """Take the job, or None when it is done, failed, or held under a live lease (a duplicate message)."""
    t = now()
    with transaction(engine) as s:
        result = s.execute(update(WorkJob).where(
            col(WorkJob.id) == job_id,
            or_(col(WorkJob.state) == QUEUED, (col(WorkJob.state) == RUNNING) & (col(WorkJob.lease_until) < t)),
        ).values(state=RUNNING, worker=worker, lease_until=t + lease_s, updated_at=t))
        if result.rowcount != 1:  # type: ignore[attr-defined]
            return None
        row = s.get(WorkJob, job_id)
        assert row is not None
        s.refresh(row)
        return Job(int(row.id or 0), row.kind, row.run_id, row.item_id, row.pass_id, dict(row.payload))


def finish(engine: Engine, job_id: int, worker: str, result: dict[str, Any] | None = None, error: str = "") -> None:
    with transaction(engine) as s:
        s.execute(update(WorkJob).where(col(WorkJob.id) == job_id, col(WorkJob.worker) == worker,
                                        col(WorkJob.state) == RUNNING)
                  .values(state=FAILED if error else DONE, error=error, result=result or {}, lease_until=0.0,
                          updated_at=now()))


def drop_cancelled(engine: Engine, job_id: int, worker: str) -> None:
    """Give back a job just claimed whose run was cancelled: not started, marked cancelled (not queued, or the
    sweepers would send it again), so the next pass of its command queues it again."""
    with transaction(engine) as s:
        s.execute(update(WorkJob).where(col(WorkJob.id) == job_id, col(WorkJob.worker) == worker,
                                        col(WorkJob.state) == RUNNING)
                  .values(state=CANCELLED, lease_until=0.0, updated_at=now()))


def release(engine: Engine, job_id: int, worker: str) -> None:
    """Give the job back unfinished (Redis or the store failed under it): the broker's retry takes it."""
    with transaction(engine) as s:
        s.execute(update(WorkJob).where(col(WorkJob.id) == job_id, col(WorkJob.worker) == worker,
                                        col(WorkJob.state) == RUNNING)
                  .values(state=QUEUED, lease_until=0.0, updated_at=now()))


@dataclass(frozen=True)
class Tally:
    total: int
    open: int
    failed: list[str]  # errors of the failed jobs, in job order
    workers: dict[str, int]  # who did the finished ones
    results: list[dict[str, Any]]  # of the finished (done) jobs, in job order
    cancelled: int = 0  # not started: their run was cancelled


def tally(engine: Engine, job_ids: Sequence[int]) -> Tally:
    with transaction(engine) as s:
        rows = s.exec(select(WorkJob.state, WorkJob.error, WorkJob.worker, WorkJob.result)
                      .where(col(WorkJob.id).in_(list(job_ids))).order_by(col(WorkJob.id))).all()
    workers: dict[str, int] = {}
    for state, _, worker, _ in rows:
        if state in (DONE, FAILED):
            workers[worker] = workers.get(worker, 0) + 1
    return Tally(len(rows), sum(1 for r in rows if r[0] in OPEN), [r[1] for r in rows if r[0] == FAILED], workers,
                 [dict(r[3] or {}) for r in rows if r[0] == DONE], sum(1 for r in rows if r[0] == CANCELLED))


def lost(engine: Engine, grace_s: float) -> list[tuple[int, str]]:
    """(job id, kind) of jobs no live worker holds that nothing touched for ``grace_s``: a queued job
    whose message may be lost, a running one whose holder stopped renewing its lease."""
    t = now()
    with transaction(engine) as s:
        rows = s.exec(select(WorkJob.id, WorkJob.kind).where(or_(
            (col(WorkJob.state) == QUEUED) & (col(WorkJob.updated_at) < t - grace_s),
            (col(WorkJob.state) == RUNNING) & (col(WorkJob.lease_until) < t),
        )).order_by(col(WorkJob.id))).all()
    return [(int(i or 0), str(k)) for i, k in rows]


def touch(engine: Engine, job_ids: Sequence[int]) -> None:
    """Mark jobs as just sent (the sweeper's grace starts again)."""
    with transaction(engine) as s:
        s.execute(update(WorkJob).where(col(WorkJob.id).in_(list(job_ids)), col(WorkJob.state) == QUEUED)
                  .values(updated_at=now()))


@contextmanager
def renewed(engine: Engine, job_id: int, worker: str, lease_s: float, ceiling_s: float = 0.0,
            on_ceiling: Callable[[], None] | None = None) -> Iterator[None]:
    """Renew the job's lease every third of it while the block runs: a live holder never loses it. Past
    ``ceiling_s`` (when given) the lease is renewed no more and ``on_ceiling`` is called (actors/ceilings.py)."""
    stop = threading.Event()
    deadline = time.monotonic() + ceiling_s if ceiling_s > 0 else float("inf")

    def beat() -> None:
        while not stop.wait(max(0.1, min(lease_s / 3, ceiling_s or lease_s))):
            if time.monotonic() >= deadline and on_ceiling is not None:
                try:
                    on_ceiling()
                except Exception as exc:  # the store is down: the lease, renewed no more, lapses and is swept
                    log.warning("job.ceiling_failed", job=job_id, error=f"{type(exc).__name__}: {exc}")
                return
            try:
                with transaction(engine) as s:
                    s.execute(update(WorkJob).where(col(WorkJob.id) == job_id, col(WorkJob.worker) == worker,
                                                    col(WorkJob.state) == RUNNING)
                              .values(lease_until=now() + lease_s))
            except Exception as exc:  # the store is down: the lease lapses if it lasts
                if not outage.failed(outage_of(exc), exc, where="job lease", job=job_id):
                    log.warning("job.renew_failed", job=job_id, error=f"{type(exc).__name__}: {exc}")
                continue
            outage.reached("store")

    thread = threading.Thread(target=beat, daemon=True, name=f"job-lease-{job_id}")
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=5)


# -- a pass's shared stop: after a failure every later call would share (no key, no budget, no quota) --------
def _stop_key(pass_id: str) -> str:
    return f"stop:{pass_id}"


def stop_of(engine: Engine, pass_id: str) -> tuple[str, str]:
    """(reason, error) once some job of the pass stopped it, else ("", "")."""
    with transaction(engine) as s:
        row = s.get(KeyValue, _stop_key(pass_id))
    if row is None:
        return "", ""
    reason, _, error = row.value.partition("\t")
    return reason, error


def set_stop(engine: Engine, pass_id: str, reason: str, error: str) -> None:
    try:
        with transaction(engine) as s:
            if s.get(KeyValue, _stop_key(pass_id)) is None:
                s.add(KeyValue(key=_stop_key(pass_id), value=f"{reason}\t{error}"))
    except IntegrityError:  # another job stopped the pass first: its reason stands
        pass


def clear_stop(engine: Engine, pass_id: str) -> None:
    with transaction(engine) as s:
        row = s.get(KeyValue, _stop_key(pass_id))
        if row is not None:
            s.delete(row)
