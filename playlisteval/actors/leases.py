"""The heartbeat of one process's item leases: renewed while their steps run, so a lease can be short.

A lease used to be long enough for a whole step (900 s) yet shorter than one model call's retries, so a
slow step lost its lease and ran twice, while a dead worker's items waited the whole 900 s. Now a lease
is ``[broker] lease_s`` (60 s) and one thread per process renews every lease it holds every third of
that: a live holder never loses its lease, and a dead one's lapses within ``lease_s``. A lease not
renewed for ``stale_s`` belongs to a holder that stopped beating (dead, or frozen): the sweeper and
`resume` take it back without waiting for it to run out.

A hold may carry a start-to-close ceiling (actors/ceilings.py): past it the heartbeat stops renewing that
lease and calls the hold's ``on_ceiling`` (which fails the item with the reason), however alive the worker.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from sqlalchemy.engine import Engine

from playlisteval.errors import outage_of
from playlisteval.logs import get_logger, outage
from playlisteval.store import items

log = get_logger(__name__)


class LeaseKeeper:
    def __init__(self, engine: Engine, lease_s: float) -> None:
        self.engine = engine
        self.lease_s = lease_s
        self._held: dict[str, int] = {}  # token → item id
        self._ceilings: dict[str, tuple[float, Callable[[], None]]] = {}  # token → (monotonic deadline, on_ceiling)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._wake = threading.Event()  # set by a new ceiling (it may come before the thread's next wake) and by close
        self._thread: threading.Thread | None = None

    @property
    def every_s(self) -> float:
        return max(0.1, self.lease_s / 3)

    @property
    def stale_s(self) -> float:
        """Three missed beats: the holder is dead or frozen."""
        return 3 * self.every_s

    @contextmanager
    def hold(self, claim: items.Claim, ceiling_s: float = 0.0,
             on_ceiling: Callable[[], None] | None = None) -> Iterator[None]:
        """Keep ``claim``'s lease alive for the duration of the block, or until ``ceiling_s`` (when given)
        have passed: then it is renewed no more and ``on_ceiling`` is called, on the heartbeat's thread."""
        with self._lock:
            self._held[claim.token] = claim.item_id
            if ceiling_s > 0 and on_ceiling is not None:
                self._ceilings[claim.token] = (time.monotonic() + ceiling_s, on_ceiling)
                self._wake.set()
            if self._thread is None or not self._thread.is_alive():
                self._stop.clear()
                self._thread = threading.Thread(target=self._run, daemon=True, name="lease-heartbeat")
                self._thread.start()
        try:
            yield
        finally:
            with self._lock:
                self._held.pop(claim.token, None)
                self._ceilings.pop(claim.token, None)

    def _past_ceiling(self) -> None:
        """Stop renewing the leases past their ceiling and call their ``on_ceiling``."""
        t = time.monotonic()
        with self._lock:
            due = [(token, hook) for token, (deadline, hook) in self._ceilings.items() if deadline <= t]
            for token, _ in due:
                self._held.pop(token, None)
                self._ceilings.pop(token, None)
        for token, hook in due:
            try:
                hook()
            except Exception as exc:  # the store is down: the lease, renewed no more, lapses and is swept
                log.warning("lease.ceiling_failed", token=token, error=f"{type(exc).__name__}: {exc}")

    def beat(self) -> None:
        """Fail what passed its ceiling, then renew every lease held now (one UPDATE)."""
        self._past_ceiling()
        with self._lock:
            tokens = dict(self._held)
        if not tokens:
            return
        try:
            kept = items.renew(self.engine, tokens, self.lease_s)
        except Exception as exc:  # the store is down, locked or read-only: the leases lapse if it lasts
            if not outage.failed(outage_of(exc), exc, where="lease heartbeat", leases=len(tokens)):
                log.warning("lease.renew_failed", leases=len(tokens), error=f"{type(exc).__name__}: {exc}")
            return
        outage.reached("store")
        with self._lock:
            lost = [t for t in set(tokens) - kept if t in self._held]  # not just committed meanwhile
        for token in lost:  # taken back: we were judged dead; the step's commit will find out and write nothing
            log.warning("lease.lost", item=tokens[token], token=token)

    def _run(self) -> None:
        # wakes for the next renewal or the next ceiling, whichever comes first (a ceiling may be shorter than
        # a third of the lease); renews only when a renewal is due
        due = time.monotonic() + self.every_s
        while not self._stop.is_set():
            self._wake.wait(max(0.05, min(due, self._next_ceiling()) - time.monotonic()))
            self._wake.clear()
            if self._stop.is_set():
                return
            if time.monotonic() < due:
                self._past_ceiling()
                continue
            self.beat()
            due = time.monotonic() + self.every_s

    def _next_ceiling(self) -> float:
        with self._lock:
            return min((deadline for deadline, _ in self._ceilings.values()), default=float("inf"))

    def give_back(self) -> list[int]:
        """Release every lease held now (a worker stopping before its steps could finish): the items are free
        at once for the sweepers instead of after ``lease_s``; a step that still commits finds its lease gone
        and writes nothing. The items given back."""
        with self._lock:
            tokens = dict(self._held)
        released = items.release_held(self.engine, tokens)
        if released:
            log.warning("lease.given_back", items=released)
        return released

    def close(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
