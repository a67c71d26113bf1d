"""`index`'s videos on the engine: one ``tasks.index_video`` message per video, on the "index" queue of this
process's App broker.

- in-process (the default, ``[broker] url = "memory://"``): ``[index] threads`` worker threads of this process
  run the actor on an in-process broker;
- Redis: the messages go to the shared "index" queue, where `playlisteval worker` processes on any machine take
  them; this process works on the queue too (unless ``[index] threads = 0``), so it finishes with or without
  them.

Whoever indexes a video writes its outcome to the store; the coordinator (index/pipeline.py) reads progress and
decides when to stop waiting through ``check``, so this module only sends and serves.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

import dramatiq
from dramatiq.brokers.stub import StubBroker
from sqlalchemy.engine import Engine

from playlisteval.actors import tasks
from playlisteval.actors.app import App
from playlisteval.actors.broker import is_redis, make_broker, stop_worker
from playlisteval.actors.video_sweep import Healer
from playlisteval.config import Settings
from playlisteval.errors import Cancelled
from playlisteval.index import pipeline
from playlisteval.index.changes import Changed
from playlisteval.index.pipeline import IndexReport, Progress
from playlisteval.logs import get_logger
from playlisteval.store import cancels

log = get_logger(__name__)


def _drained(stub: StubBroker, queue: str) -> threading.Event:
    """Set once the in-process queue (and its delay queue) is empty: every message ran or gave up its retries.
    One waiting thread for the whole run, not one per poll (a timed ``join`` leaves a thread behind each time)."""
    done = threading.Event()

    def wait() -> None:
        stub.join(queue, fail_fast=False)
        done.set()

    threading.Thread(target=wait, daemon=True, name=f"join-{queue}").start()
    return done


def index_videos(settings: Settings, engine: Engine, video_ids: Sequence[int], embedder: str, run: str,
                 check: Callable[[], bool]) -> None:
    """Send ``index_video(video, embedder, run)`` for each video and serve the queue until ``check()`` says to
    stop (every video has its outcome, or the coordinator gave up waiting) or, in-process, the queue is empty.
    ``check`` is called every ``[index] poll_s``."""
    cfg = settings.index
    redis = is_redis(settings.broker.url)
    broker: dramatiq.Broker = make_broker(settings) if redis else StubBroker()
    app = App(settings, engine=engine, broker=broker)
    # this process's threads sign their videos apart from `playlisteval worker` processes on the same host
    app.worker_id = f"{app.worker_id}:index"
    worker = None
    if cfg.threads > 0 or not redis:  # with Redis, threads = 0 leaves all the work to the worker processes
        # idle worker threads wait this long (ms) for a message before looking whether they are stopped: at
        # the end of a run ``stop`` waits that long twice (workers, then consumers). In process, the queue is
        # in memory and a shorter wait costs next to nothing: ~0.13 s off every `index` (issue 43); Redis keeps 100
        worker = dramatiq.Worker(broker, worker_threads=max(1, cfg.threads), queues={tasks.INDEX_QUEUE},
                                 worker_timeout=100 if redis else 20)
        worker.start()
    # dead holders' videos taken back and sent again as the workers' sweepers do for items (issue 25)
    healer = Healer(app, broker, video_ids, embedder, run)
    try:
        healer.start()
        for video_id in video_ids:
            tasks.index_video.send(video_id, embedder, run)
        log.debug("index.sent", videos=len(video_ids), broker=settings.broker.url, run=run)
        drained = _drained(broker, tasks.INDEX_QUEUE) if isinstance(broker, StubBroker) else None
        while not check():
            if cancels.is_set(engine, cancels.INDEX) and (drained is None or drained.is_set()):
                # every message left was dropped and the videos in flight here finished (with Redis, the
                # workers finish theirs): the videos not started stay as they were for the next `index`
                raise Cancelled("the index was cancelled (`playlisteval cancel index`): the videos indexed are "
                                "kept, the others left as they were; `playlisteval index` goes on with them")
            if drained is not None and drained.is_set():
                # the in-process queue is empty, yet videos are open: held by another process, or by one
                # that died (sent again once its lease is taken back); stop when nothing is left to wait on.
                # Who holds what is read before the heal: a lease that lapses after this read is the heal's
                # to send again, never a reason to stop with the video undone (read after, it was both)
                waiting = healer.waiting_on()
                if healer.heal(queue_empty=True) and isinstance(broker, StubBroker):
                    drained = _drained(broker, tasks.INDEX_QUEUE)
                    continue
                if not waiting or healer.stalled_s() > cfg.wait_stall_s:
                    break
                time.sleep(cfg.poll_s)
                continue
            if drained is None:
                time.sleep(cfg.poll_s)
            else:
                drained.wait(cfg.poll_s)
            if healer.due():
                healer.heal()
    finally:
        healer.end()
        if worker is not None:
            stop_worker(worker)
        broker.close()
        app.leases.close()


def index_collection(settings: Settings, engine: Engine, progress: Progress | None = None,
                     changed: list[Changed] | None = None) -> IndexReport:
    """`playlisteval index`: the collection's coordinator (index/pipeline.py) with its videos on the engine;
    ``changed``: videos changed in place, as the caller found them (None: the coordinator looks)."""
    cancels.clear(engine, cancels.INDEX)  # running `index` again is how a cancelled index goes on
    return pipeline.index_collection(settings, engine, progress, dispatch=index_videos, changed=changed)
