"""Running the actors: in the foreground with the in-process broker, or as a `playlisteval worker`
process on Redis, with a sweeper that re-enqueues items whose lease expired (a worker died)."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterable

import dramatiq
import structlog
from dramatiq.errors import QueueJoinTimeout

from playlisteval.actors import BUILD_QUEUE, App
from playlisteval.state import State
from playlisteval.store import items

log = structlog.get_logger(__name__)


def enqueue_all(app: App, work: Iterable[tuple[int, State]]) -> int:
    n = 0
    for item_id, state in work:
        app.enqueue(item_id, state)
        n += 1
    return n


def run_foreground(app: App, work: Iterable[tuple[int, State]],
                   on_tick: Callable[[], None] | None = None, tick_s: float = 0.5) -> None:
    """Process ``work`` and everything it leads to with worker threads in this process, until the
    queue is empty. Ctrl-C stops cleanly: leases run out and `resume` continues."""
    worker = dramatiq.Worker(app.broker, worker_threads=app.settings.broker.threads, worker_timeout=100)
    worker.start()
    try:
        enqueue_all(app, work)
        while True:
            try:
                app.broker.join(BUILD_QUEUE, timeout=int(tick_s * 1000))
                break
            except QueueJoinTimeout:
                if on_tick:
                    on_tick()
    finally:
        worker.stop()
        if on_tick:
            on_tick()


def sweep_once(app: App) -> int:
    """Re-enqueue working items whose lease has expired (their worker died mid-step)."""
    expired = [(i, st) for i, st in items.resumable(app.engine, expired_only=True)]
    return enqueue_all(app, expired)


def serve(app: App, stop: threading.Event | None = None) -> None:
    """A `playlisteval worker` process: dramatiq worker threads on the Redis queue plus a sweeper."""
    threads = app.settings.broker.threads
    stop = stop or threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    from playlisteval.index.actors import INDEX_QUEUE  # videos to index (issue 3) share the workers

    worker = dramatiq.Worker(app.broker, worker_threads=threads, queues={BUILD_QUEUE, INDEX_QUEUE})
    # prefetch no more than we can work on: messages for long model calls must not wait in one
    # worker's buffer while another worker idles (dramatiq's default is twice the thread count)
    worker.queue_prefetch = threads
    worker.start()
    log.info("worker.started", worker=app.worker_id, threads=threads, broker=app.settings.broker.url)
    try:
        while not stop.wait(app.settings.broker.sweep_every_s):
            n = sweep_once(app)
            if n:
                log.info("worker.swept", requeued=n)
    finally:
        log.info("worker.stopping", worker=app.worker_id)
        worker.stop()
        app.broker.close()
