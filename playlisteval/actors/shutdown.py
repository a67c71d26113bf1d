"""A `playlisteval worker` stops within a bounded time on SIGTERM, whatever Redis does (issue 25).

dramatiq's stop waits for every busy thread to finish its message and for every consumer to hand back what
it prefetched; with Redis down or frozen (SIGSTOP) those calls block on a socket with no timeout, and the
main thread itself may be blocked in a sweep's Redis call, so a busy worker was still alive a minute after
SIGTERM. Now the signal starts a watchdog: the clean stop gets ``[broker] stop_timeout_s``; past it the
watchdog gives back every item and video lease this process holds (so the sweepers take them at once rather
than after ``lease_s``; a step that still commits finds its lease gone and writes nothing) and ends the
process. Its unacknowledged messages stay in Redis, which redelivers them once this worker's heartbeat is
gone, and the sweepers re-send whatever they find stranded.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import TYPE_CHECKING

import dramatiq

from playlisteval.actors.broker import stop_worker
from playlisteval.index import leases as video_leases
from playlisteval.logs import get_logger

if TYPE_CHECKING:
    from playlisteval.actors.app import App

log = get_logger(__name__)


class BoundedStop:
    """``request`` (the signal handler) sets ``stop`` and arms the watchdog; ``finish`` is the clean stop."""

    def __init__(self, app: App, stop: threading.Event, timeout_s: float) -> None:
        self.app, self.stop, self.timeout_s = app, stop, timeout_s
        self.done = threading.Event()
        self._armed = threading.Lock()
        self._watchdog: threading.Thread | None = None

    def request(self, *_: object) -> None:
        self.stop.set()
        with self._armed:
            if self._watchdog is None:
                self._watchdog = threading.Thread(target=self._watch, daemon=True, name="stop-watchdog")
                self._watchdog.start()

    def finish(self, worker: dramatiq.Worker) -> None:
        """dramatiq's stop (steps finish, messages acked or handed back), the heartbeat, the broker."""
        try:
            self.app.leases.close()
            stop_worker(worker)
            self.app.broker.close()
        except Exception as exc:  # Redis is gone: the watchdog, if armed, deals with the leases
            log.warning("worker.stop_failed", error=f"{type(exc).__name__}: {exc}")
        finally:
            self.done.set()

    def give_back(self) -> dict[str, list[int]]:
        """Release the item and video leases this process holds (bounded: the store may be down too)."""
        given: dict[str, list[int]] = {}

        def run() -> None:
            try:
                given["items"] = self.app.leases.give_back()
                given["videos"] = video_leases.give_back_all(self.app.engine, self.app.worker_id)
            except Exception as exc:  # the store is down too: the leases lapse within lease_s
                log.warning("worker.give_back_failed", error=f"{type(exc).__name__}: {exc}")

        helper = threading.Thread(target=run, daemon=True, name="worker-give-back")
        helper.start()
        helper.join(min(10.0, self.timeout_s))
        return given

    def _watch(self) -> None:
        if self.done.wait(self.timeout_s):
            return
        given = self.give_back()
        log.warning("worker.stopped_forcibly", worker=self.app.worker_id, after_s=self.timeout_s,
                    items=given.get("items"), videos=given.get("videos"))
        logging.shutdown()
        os._exit(0)  # the threads blocked on Redis cannot be joined; a stop was asked for, and it is done
