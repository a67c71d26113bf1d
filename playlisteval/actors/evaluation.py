"""`select`'s difficulty gate, `eval judge` and `eval retrieve` on the actors: one job per question (a block of
questions for `eval retrieve`, actors/jobs.py).

``run_jobs`` is how a command runs them: with the in-process broker (the default, or whenever the command
brings its own runner — a batched one) on worker threads in this process until they are done; with Redis
it sends one message per job to the ``playlisteval worker`` processes and waits, reading progress from the
store (or returns at once, ``wait=False``). ``run_job`` is the actors' body: claim the job, do the
question's work under a renewed lease, record the outcome. Its work is found by name (``HANDLERS``), so the
engine does not import the packages that use it.
"""

from __future__ import annotations

import contextlib
import importlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import dramatiq
from dramatiq.brokers.stub import StubBroker
from dramatiq.errors import QueueJoinTimeout

from playlisteval import errors
from playlisteval.actors import ceilings, jobs, tasks
from playlisteval.actors.app import App, current_app
from playlisteval.actors.broker import is_redis, stop_worker
from playlisteval.config import Settings
from playlisteval.errors import Cancelled, InfrastructureError, PlaylistEvalError, as_infrastructure
from playlisteval.logs import get_logger
from playlisteval.models.runner import Runner
from playlisteval.store import cancels as cancel
from playlisteval.store import open_store

log = get_logger(__name__)

#: kind → "module:function" doing one job: fn(settings, engine, runner, job) → the job's counts
HANDLERS = {"gate": "playlisteval.select.difficulty:gate_job", "judge": "playlisteval.eval.judge:judge_job",
            "retrieve": "playlisteval.eval.ranking:retrieve_job"}
Progress = Callable[[jobs.Tally], None]
IDLE_HINT_S = 30.0  # waiting this long with nothing finished: say that workers may be missing


def _handler(kind: str) -> Callable[..., dict[str, Any]]:
    module, _, name = HANDLERS[kind].partition(":")
    fn: Callable[..., dict[str, Any]] = getattr(importlib.import_module(module), name)
    return fn


def _runner_for(app: App, job: jobs.Job) -> tuple[Settings, Runner]:
    """The App's runner, or one whose settings carry the command's budget (``--budget``) when it differs
    from this worker's own."""
    budget = job.payload.get("budget_usd")
    section = "select" if job.kind == "gate" else "eval"
    if budget is None or float(getattr(app.settings, section).budget_usd) == float(budget):
        return app.settings, app.runner
    settings = app.settings.model_copy(deep=True)
    getattr(settings, section).budget_usd = float(budget)
    return settings, Runner(settings, app.engine, worker=app.worker_id)


def run_job(job_id: int, kind: str) -> None:
    app = current_app()
    lease_s = app.settings.broker.lease_s
    job = jobs.claim(app.engine, job_id, app.worker_id, lease_s)
    if job is None:
        log.debug("job.skipped", job=job_id, kind=kind, why="done, held or cancelled")
        return
    if cancel.is_set(app.engine, cancel.job_key(job.kind, job.run_id)):  # cancelled since it was queued
        jobs.drop_cancelled(app.engine, job_id, app.worker_id)
        log.info("job.cancelled", job=job_id, kind=kind, run=job.run_id)
        return
    log.debug("job.start", job=job_id, kind=kind, item=job.item_id, run=job.run_id)
    try:
        settings, runner = _runner_for(app, job)
        ceiling = ceilings.job_s(app.settings)
        why, item = ceilings.reason(f"the {kind} job", ceiling, "[broker] job_ceiling_s"), job.item_id

        def give_up() -> None:  # past the ceiling (actors/ceilings.py): failed with the reason, worker alive or not
            jobs.finish(app.engine, job_id, app.worker_id, error=why)
            log.error("job.ceiling", job=job_id, kind=kind, item=item, ceiling_s=ceiling)

        with jobs.renewed(app.engine, job_id, app.worker_id, lease_s, ceiling, give_up):
            result = _handler(job.kind)(settings, app.engine, runner, job)
    except Exception as exc:
        infra = as_infrastructure(exc)
        if infra is not None:  # Redis or the store, not the question: give it back, dramatiq retries it
            with contextlib.suppress(Exception):  # else the lease lapses and the sweeper resends it
                jobs.release(app.engine, job_id, app.worker_id)
            log.warning("job.infrastructure", job=job_id, kind=kind, error=str(infra))
            raise infra from exc
        log.error("job.failed", job=job_id, kind=kind, item=job.item_id, error=f"{type(exc).__name__}: {exc}")
        jobs.finish(app.engine, job_id, app.worker_id, error=f"{type(exc).__name__}: {exc}")
        return
    jobs.finish(app.engine, job_id, app.worker_id, result)
    log.info("job.done", job=job_id, kind=kind, item=job.item_id, run=job.run_id)  # a worker's line per unit


@dataclass(frozen=True)
class Outcome:
    tally: jobs.Tally
    stopped: tuple[str, str]  # (reason, error) when a job stopped the pass
    waited: bool = True


def _raise_failed(kind: str, failed: Sequence[str]) -> None:
    """A job that failed raises here as what it raised there (its error's class, when it is ours)."""
    first = failed[0]
    name, _, message = first.partition(": ")
    cls = getattr(errors, name, None)
    more = f" (and {len(failed) - 1} more question(s))" if len(failed) > 1 else ""
    if isinstance(cls, type) and issubclass(cls, PlaylistEvalError):
        raise cls(message + more)
    raise PlaylistEvalError(f"{kind}: {first}{more}")


def fans_out(settings: Settings, runner: Runner | None = None) -> bool:
    """Whether ``run_jobs`` sends the jobs to worker processes (Redis, and no runner of the command's own)."""
    return runner is None and is_redis(settings.broker.url)


def run_jobs(settings: Settings, kind: str, run_id: int, item_ids: Sequence[int], payload: dict[str, Any], *,
             runner: Runner | None = None, wait: bool = True, progress: Progress | None = None,
             payloads: Mapping[int, dict[str, Any]] | None = None, threads: int | None = None) -> Outcome:
    """Run one job per item of ``item_ids`` (see the module's docstring); raise what a failed job raised.
    ``payloads``: what a job carries beyond ``payload``, by item (a block's questions). ``threads``: the
    in-process worker threads when more than ``[eval] workers`` (a remote judge's ceiling, issue 43)."""
    engine = open_store(settings)
    cancel.clear(engine, cancel.job_key(kind, run_id))  # running it again is how a cancelled run resumes
    pass_id = jobs.new_pass()
    ids = jobs.prepare(engine, kind, run_id, item_ids, pass_id, payload, payloads)
    actor = tasks.JOBS[kind]
    queue = actor.queue_name
    if not fans_out(settings, runner):
        stub = StubBroker()
        app = App(settings, engine=engine, runner=runner, broker=stub)
        worker = dramatiq.Worker(app.broker, worker_threads=max(settings.eval.workers, threads or 0),
                                 worker_timeout=100)
        worker.start()
        try:
            for job_id in ids:
                actor.send(job_id)
            while True:
                try:
                    stub.join(queue, timeout=500, fail_fast=False)
                    break
                except QueueJoinTimeout:
                    if progress:
                        progress(jobs.tally(engine, ids))
        finally:
            stop_worker(worker)
            app.leases.close()
    else:
        app = App(settings, engine=engine)
        for job_id in ids:
            actor.send(job_id)
        jobs.touch(engine, ids)
        if not wait:
            return Outcome(jobs.tally(engine, ids), ("", ""), waited=False)
        log.info("jobs.waiting", kind=kind, jobs=len(ids), queue=queue, broker=settings.broker.url)
        started, hinted = time.monotonic(), False
        while (tally := jobs.tally(engine, ids)).open:
            if progress:
                progress(tally)
            if not hinted and tally.open == tally.total and time.monotonic() - started > IDLE_HINT_S:
                hinted = True  # nothing finished yet: perhaps no worker serves this broker
                log.warning("jobs.no_worker_yet", queue=queue, jobs=tally.total, broker=settings.broker.url,
                            hint="start `playlisteval worker` (or `dramatiq playlisteval.actors.tasks`) on this "
                                 "broker; Ctrl-C leaves the questions queued for them")
            time.sleep(0.5)
    tally = jobs.tally(engine, ids)
    if progress:
        progress(tally)
    stopped = jobs.stop_of(engine, pass_id)
    jobs.clear_stop(engine, pass_id)
    if tally.failed:
        _raise_failed(kind, tally.failed)
    if tally.cancelled:
        what = "select's difficulty gate" if kind == "gate" else f"{kind} run {run_id}"
        again = {"gate": "`playlisteval select`", "judge": "`playlisteval eval judge` with the same options",
                 "retrieve": "`playlisteval eval retrieve` with the same options"}.get(kind, "the command")
        raise Cancelled(f"{what} was cancelled: {tally.total - tally.open - tally.cancelled} of {tally.total} "
                        f"question(s) finished and kept, {tally.cancelled} not started; run {again} again to "
                        "finish it")
    if tally.open:  # the in-process broker gave up on a job (Redis or the store kept failing under it)
        raise InfrastructureError(f"{tally.open} {kind} job(s) unfinished: run the command again")
    return Outcome(tally, stopped)
