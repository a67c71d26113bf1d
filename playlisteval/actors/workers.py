"""Running the actors: in the foreground with the in-process broker, or as a `playlisteval worker`
process on Redis, with a sweeper that sends work nobody is doing a new message: items whose holder
died (lease lapsed, or its process gone or silent), and items no worker holds and no message carries
for longer than ``[broker] sweep_grace_s`` (the message after a commit was lost in a Redis stall or an
empty restart); videos to index whose holder died likewise (actors/video_sweep.py). No item waits for a
manual `resume`."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterable
from typing import Any

import dramatiq
from dramatiq.brokers.stub import StubBroker
from dramatiq.middleware.time_limit import TimeLimitExceeded

from playlisteval.actors import BUILD_QUEUE, App, jobs, tasks
from playlisteval.actors.broker import queued_ids, stop_worker
from playlisteval.actors.shutdown import BoundedStop
from playlisteval.actors.video_sweep import sweep_videos
from playlisteval.errors import outage_of
from playlisteval.logs import get_logger, outage
from playlisteval.models.budget import PAUSED_KEY
from playlisteval.store import cancels as cancel
from playlisteval.store import items, outbox, transaction
from playlisteval.store.states import State
from playlisteval.store.tables import KeyValue

log = get_logger(__name__)

#: The longest a Redis consumer of steps or questions waits before looking for work again (ms): its back-off
#: grows from 5 ms to this while the queue is empty or every thread is busy; the step-to-step gap holds
#: about 3/4 of it. The price: idle polling, a small Lua call per such queue every 10–20 ms (~5 % of a core
#: per idle worker process with its three prompt queues, and ~1.5 % of Redis's, measured on 2 cores).
POLL_MS = 20


def enqueue_all(app: App, work: Iterable[tuple[int, State]]) -> int:
    n = 0
    for item_id, state in work:
        app.enqueue(item_id, state)
        n += 1
    return n


def run_foreground(app: App, work: Iterable[tuple[int, State]],
                   on_tick: Callable[[], None] | None = None, tick_s: float = 0.5) -> None:
    """Process ``work`` and everything it leads to with worker threads in this process, until the
    queue is empty. Ctrl-C stops cleanly: leases run out and `resume` continues.

    One thread waits for the queue to drain (a join with no timeout) while this one ticks: a join with a
    timeout starts a thread per call that stays blocked until the queue drains (hundreds in a long run)."""
    worker = dramatiq.Worker(app.broker, worker_threads=app.settings.broker.threads, worker_timeout=100)
    worker.start()
    drained = threading.Event()
    failure: list[BaseException] = []

    dead: list[Any] = getattr(app.broker, "dead_letters_by_queue", {}).get(BUILD_QUEUE, [])
    before = len(dead)  # letters of an earlier run on this broker are not this run's

    def wait_drained() -> None:
        try:
            if isinstance(app.broker, StubBroker):  # the in-process broker: its dead letters are read below
                app.broker.join(BUILD_QUEUE, fail_fast=False)
                failure.extend(_raised(dead[before:]))
            else:
                app.broker.join(BUILD_QUEUE)
        except BaseException as exc:
            failure.append(exc)
        finally:
            drained.set()

    try:
        enqueue_all(app, work)
        threading.Thread(target=wait_drained, daemon=True, name="foreground-join").start()
        while not drained.wait(tick_s):
            if on_tick:
                on_tick()
        if failure:
            raise failure[0]
    finally:
        stop_worker(worker)
        app.leases.close()  # no lease is held any more: the heartbeat thread need not wait around
        if on_tick:
            on_tick()


def _raised(letters: list[Any]) -> list[BaseException]:
    """What the messages that gave up raised, for the caller to raise (the first): all but a step stopped at
    its time limit, whose item failed with its ceiling's reason (actors/ceilings.py) — the run ends with it
    failed, `retry-failed` tries it again (the build's exit status says so), instead of a traceback."""
    out: list[BaseException] = []
    for message in letters:
        exc = getattr(message, "_exception", None) or Exception(f"{message} failed with an unknown error")
        if isinstance(exc, TimeLimitExceeded):
            log.warning("step.time_limit", message=str(message))
            continue
        out.append(exc)
    return out


def guarded_sweep(app: App) -> int:
    """``sweep_once``, its failure logged: an outage once (logs/outage.py), anything else each time. A sweep
    reads the store and, on Redis, the queues: one that got through ends an outage of both."""
    try:
        n = sweep_once(app)
    except Exception as exc:  # Redis or the store is down: the next sweep tries again
        if not outage.failed(outage_of(exc), exc, where="sweeper"):
            log.warning("worker.sweep_failed", error=f"{type(exc).__name__}: {exc}")
        return 0
    outage.reached("store", "broker")
    return n


def sweep_once(app: App) -> int:
    """Send a message for each working item nobody is doing; returns how many were sent."""
    # the broker's messages first: an item enqueued after this read was touched (updated_at) just
    # before, so the grace below keeps it out
    live = queued_ids(app.broker, BUILD_QUEUE, app.settings.broker.sweep_grace_s)
    items.reclaim_dead(app.engine, app.leases.stale_s)  # dead or silent holders: their leases end now
    freed = items.take_back_expired(app.engine)
    if _build_paused(app):
        # a budget pause: a message would only meet the budget again (claim, refuse, release, every grace
        # period); `resume --budget` lifts the pause and sends every item back
        if freed:
            log.info("worker.sweep", freed=[i for i, _ in freed], paused=True)
        return _sweep_jobs(app) + sweep_videos(app)
    # messages committed and never sent (store/outbox.py), then, as a safety net for messages the broker
    # lost after taking them (an empty restart), working items with no lease and no message
    from_outbox = _send_outbox(app, live)
    sent = from_outbox | {i for i, _ in freed}
    lost: list[tuple[int, State]] = []
    if live is not None:
        lost = [(i, st) for i, st in items.stranded(app.engine, app.settings.broker.sweep_grace_s)
                if i not in live and i not in sent]
    if freed or lost:
        log.info("worker.sweep", freed=[i for i, _ in freed], lost=[i for i, _ in lost])
    return len(from_outbox) + enqueue_all(app, freed + lost) + _sweep_jobs(app) + sweep_videos(app)


#: `build` and `resume` on a shared broker leave alone an item touched this recently: a worker committing
#: it right now sends its message itself (a duplicate would be harmless, only wasted)
UNSENT_GRACE_S = 2.0


def resend_unsent(app: App, skip: set[int]) -> int:
    """Issue 44: on a shared broker, `build` and `resume` also send what an earlier run committed and never
    sent — items created or moved before a failed send (Redis down, Ctrl-C between commit and send) that no
    message will carry until a worker's sweeper runs, or forever when no worker runs one. An item waiting in
    the queue already, held under a live lease, or in ``skip`` (just sent) is left alone. Returns how many
    were sent; 0 when the broker cannot say what it holds (nothing is known to be lost)."""
    live = queued_ids(app.broker, BUILD_QUEUE)
    if live is None:
        return 0
    unsent = outbox.pending(app.engine)
    lost = [(i, st) for i, st in items.stranded(app.engine, UNSENT_GRACE_S) if i not in live and i not in skip]
    for item_id, state in lost:
        app.enqueue(item_id, state)
        if item_id in unsent:
            outbox.sent(app.engine, item_id, unsent[item_id])
    if lost:
        log.info("build.resent", items=[i for i, _ in lost])
    return len(lost)


def _send_outbox(app: App, live: set[int] | None) -> set[int]:
    """Send the messages still in the outbox a grace period after their commit (the worker that committed
    could not send them); each is taken by one sweeper, sent, and crossed off. One the broker holds
    already (sent, not crossed off) is only crossed off."""
    sent: set[int] = set()
    for item_id, state, written_at in outbox.due(app.engine, app.settings.broker.sweep_grace_s):
        if not outbox.take(app.engine, item_id, written_at):
            continue  # another sweeper has it, or a newer commit replaced it
        if live is None or item_id not in live:
            app.enqueue(item_id, state)  # a broker error ends the sweep: the row is due again after the grace
            sent.add(item_id)
        outbox.sent(app.engine, item_id, state)
    if sent:
        log.info("worker.sweep_outbox", sent=sorted(sent))
    return sent


def _build_paused(app: App) -> bool:
    """Paused by the budget, or cancelled (actors/cancel.py): either way `resume` sends the items again."""
    with transaction(app.engine) as s:
        return s.get(KeyValue, PAUSED_KEY) is not None or s.get(KeyValue, cancel.BUILD) is not None


def _sweep_jobs(app: App) -> int:
    """The same for `select`'s and `eval judge`'s questions (actors/jobs.py): a job queued with no message
    for the grace period, or running under a lease its holder stopped renewing, is sent again."""
    live: set[int] = set()
    for actor in tasks.JOBS.values():
        ids = queued_ids(app.broker, actor.queue_name, app.settings.broker.sweep_grace_s)
        if ids is None:
            return 0  # the broker cannot tell what it holds: nothing is known to be lost
        live |= ids
    resend = [(i, kind) for i, kind in jobs.lost(app.engine, app.settings.broker.sweep_grace_s) if i not in live]
    for job_id, kind in resend:
        tasks.JOBS[kind].send(job_id)
    if resend:
        jobs.touch(app.engine, [i for i, _ in resend])
        log.info("worker.sweep_jobs", jobs=[i for i, _ in resend])
    return len(resend)


class _PromptWorker(dramatiq.Worker):
    """A dramatiq worker whose consumers of ``prompt`` queues look for work every ``POLL_MS`` at most; the
    others (videos to index, which take minutes; messages delayed for a retry) keep dramatiq's second,
    which costs next to nothing while idle."""

    def __init__(self, *args: Any, prompt: set[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.prompt = prompt

    def _add_consumer(self, queue_name: str, *args: Any, **kwargs: Any) -> None:  # dramatiq's, private
        default = self.worker_timeout
        self.worker_timeout = POLL_MS if queue_name in self.prompt and not kwargs.get("delay") else default
        try:
            super()._add_consumer(queue_name, *args, **kwargs)
        finally:
            self.worker_timeout = default


def serve(app: App, stop: threading.Event | None = None) -> None:
    """A `playlisteval worker` process: dramatiq worker threads on the Redis queue plus a sweeper."""
    threads = app.settings.broker.threads
    stop = stop or threading.Event()
    # a signal arms a watchdog: the stop is clean within [broker] stop_timeout_s, or forced (actors/shutdown.py)
    stopper = BoundedStop(app, stop, app.settings.broker.stop_timeout_s)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, stopper.request)
    # build steps, videos to index (issue 3), questions of the difficulty gate and of judge runs.
    # The consumer's timeout caps how long it sleeps between fetches when it found nothing or had no room:
    # dramatiq's default (1 s) left a freed thread or a just-sent step waiting ~0.45 s (issue 13); steps
    # and questions are polled within POLL_MS, videos to index (minutes each) at the default
    worker = _PromptWorker(app.broker, worker_threads=threads, queues=set(tasks.QUEUES),
                           prompt=set(tasks.QUEUES) - {tasks.INDEX_QUEUE})
    # prefetch no more than we can work on: messages for long model calls must not wait in one
    # worker's buffer while another worker idles (dramatiq's default is twice the thread count)
    worker.queue_prefetch = threads
    worker.start()
    log.info("worker.started", worker=app.worker_id, threads=threads, broker=app.settings.broker.url)
    try:
        while not stop.wait(app.settings.broker.sweep_every_s):
            n = guarded_sweep(app)
            if n:
                log.info("worker.swept", requeued=n)
    finally:
        log.info("worker.stopping", worker=app.worker_id)
        stopper.finish(worker)
