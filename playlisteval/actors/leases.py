"""The heartbeat of one process's item leases: renewed while their steps run, so a lease can be short.

A lease used to be long enough for a whole step (900 s) yet shorter than one model call's retries, so a
slow step lost its lease and ran twice, while a dead worker's items waited the whole 900 s. Now a lease
is ``[broker] lease_s`` (60 s) and one thread per process renews every lease it holds every third of
that: a live holder never loses its lease, and a dead one's lapses within ``lease_s``. A lease not
renewed for ``stale_s`` belongs to a holder that stopped beating (dead, or frozen): the sweeper and
`resume` take it back without waiting for it to run out.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
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
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def every_s(self) -> float:
        return max(0.1, self.lease_s / 3)

    @property
    def stale_s(self) -> float:
        """Three missed beats: the holder is dead or frozen."""
        return 3 * self.every_s

    @contextmanager
    def hold(self, claim: items.Claim) -> Iterator[None]:
        """Keep ``claim``'s lease alive for the duration of the block."""
        with self._lock:
            self._held[claim.token] = claim.item_id
            if self._thread is None or not self._thread.is_alive():
                self._stop.clear()
                self._thread = threading.Thread(target=self._run, daemon=True, name="lease-heartbeat")
                self._thread.start()
        try:
            yield
        finally:
            with self._lock:
                self._held.pop(claim.token, None)

    def beat(self) -> None:
        """Renew every lease held now (one UPDATE)."""
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
        while not self._stop.wait(self.every_s):
            self.beat()

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
        if self._thread is not None:
            self._thread.join(timeout=5)
