"""A per-client token bucket for the annotation app's ``/join`` (issue 25): invitation tokens are long and
random, but nothing stopped a client from trying them one after another as fast as the server answered.

Each client address has ``capacity`` tries of a bad token, refilled at ``capacity`` a ``period_s``; a good
token costs nothing. An empty bucket answers 429 to that address, with the seconds until its next try, until
it refills — an annotator who mistypes a link a few times is never held up.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

#: buckets kept at most; past it, the full ones (clients that stopped failing) are dropped
_MAX_CLIENTS = 10_000


class Throttle:
    def __init__(self, capacity: int = 10, period_s: float = 60.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.capacity, self.rate, self.clock = float(capacity), capacity / period_s, clock
        self._buckets: dict[str, tuple[float, float]] = {}  # client → (tokens, when counted)
        self._lock = threading.Lock()

    def _level(self, client: str, now: float) -> float:
        tokens, at = self._buckets.get(client, (self.capacity, now))
        return min(self.capacity, tokens + (now - at) * self.rate)

    def retry_after(self, client: str) -> float:
        """0 when ``client`` may try now; else the seconds until it may."""
        with self._lock:
            level = self._level(client, self.clock())
        return 0.0 if level >= 1 else (1 - level) / self.rate

    def failed(self, client: str) -> None:
        """``client`` tried a bad token: one try less."""
        now = self.clock()
        with self._lock:
            self._buckets[client] = (max(0.0, self._level(client, now) - 1), now)
            if len(self._buckets) > _MAX_CLIENTS:
                for key in [k for k in self._buckets if self._level(k, now) >= self.capacity]:
                    del self._buckets[key]
