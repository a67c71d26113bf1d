"""How many calls a provider may have in flight, found while calling it (issue 43): AIMD with a memory.

A provider says how much it takes only by refusing (429, 503, Retry-After). So the limit starts at
``[runner] concurrency_start``, grows by one per answered call (doubling per round trip) up to the level a
refusal was last seen at, halves on a refusal, and probes that level again only slowly (one step per
``PROBE`` × limit answers): each probe above the provider's capacity costs one refused call, and a
refusal share under 10 % needs probes to be rare. A call that succeeds at or above the remembered level
says the capacity grew: the memory is dropped and fast growth resumes. A Retry-After pauses new calls
of that provider until it has passed (calls already sent go on). The limit never exceeds its ceiling:
``[rate_limits.X] concurrent`` when set, else ``[runner] concurrency_max``.

Several refusals of calls sent before the last halving are one overshoot, halved once (as TCP counts
one loss per window): otherwise a burst of refusals would collapse the limit to 1.

The state is in-process here; ``ratelimit.RedisShared`` keeps the same numbers in Redis for workers that
share a provider across processes.
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass

from playlisteval.errors import ModelError, TransientModelError

PROBE = 8  # answers per limit step once at the level of the last refusal
MAX_PAUSE_S = 60.0  # a Retry-After longer than this is the runner's backoff's business, not every call's
_THROTTLED = re.compile(r"\b(429|503)\b|rate limit|overloaded|too many requests", re.I)


def is_throttled(exc: BaseException) -> bool:
    """Whether ``exc`` is the provider saying "too much" (429/503, or any transient error with a
    Retry-After), as opposed to a failure of this call (timeout, 500) that says nothing about load."""
    if not isinstance(exc, TransientModelError):
        return False
    return exc.retry_after is not None or bool(_THROTTLED.search(str(exc)))


@dataclass
class Ticket:
    """One admitted call: the limit's epoch when it was sent and how many were in flight with it."""

    epoch: int
    level: int


@dataclass
class Counts:
    """What a process's calls to one provider did (tries, not requests): for summaries and tests."""

    sent: int = 0
    answered: int = 0
    throttled: int = 0
    peak: int = 0  # most calls in flight at once


class AdaptiveLimit:
    """One provider's limit in this process: ``acquire`` blocks until a call may go, ``release`` says how
    it ended. Waiters sleep on a condition, not a poll: a judge pass can hold dozens of waiting threads."""

    def __init__(self, start: int, ceiling: int, clock: object = time.monotonic) -> None:
        self.ceiling = max(1, ceiling)
        self.limit = float(min(max(1, start), self.ceiling))
        self.refused_at: int | None = None  # the in-flight level of the last refusal
        self.in_flight = 0
        self.paused_until = 0.0
        self.epoch = 0
        self.counts = Counts()
        self._clock = clock
        self._cond = threading.Condition()

    def _now(self) -> float:
        return float(self._clock())  # type: ignore[operator]

    def allowed(self) -> int:
        return max(1, int(self.limit))

    def acquire(self) -> Ticket:
        with self._cond:
            while True:
                wait = self.paused_until - self._now()
                if wait <= 0 and self.in_flight < self.allowed():
                    break
                self._cond.wait(timeout=wait if wait > 0 else 1.0)
            self.in_flight += 1
            self.counts.sent += 1
            self.counts.peak = max(self.counts.peak, self.in_flight)
            return Ticket(self.epoch, self.in_flight)

    def release(self, ticket: Ticket, error: BaseException | None = None) -> None:
        """End a call: ``error`` None when answered; a refusal shrinks the limit, other errors change nothing."""
        with self._cond:
            self.in_flight -= 1
            if error is None:
                self.counts.answered += 1
                self._grow(ticket)
            elif is_throttled(error):
                self.counts.throttled += 1
                self._shrink(ticket, getattr(error, "retry_after", None))
            self._cond.notify_all()

    def _grow(self, ticket: Ticket) -> None:
        if self.refused_at is not None and ticket.level >= self.refused_at:
            self.refused_at = None  # answered at a level once refused: the provider takes more now
        if self.refused_at is None or self.limit + 1 < self.refused_at:
            self.limit += 1.0  # below what was refused: back up quickly
        else:
            self.limit += 1.0 / (PROBE * self.limit)  # at the edge: probe rarely
        self.limit = min(self.limit, float(self.ceiling))

    def _shrink(self, ticket: Ticket, retry_after: float | None) -> None:
        if retry_after:
            self.paused_until = max(self.paused_until, self._now() + min(float(retry_after), MAX_PAUSE_S))
        if ticket.epoch != self.epoch:
            return  # sent before the last halving: the same overshoot, already paid for
        self.epoch += 1
        self.refused_at = ticket.level
        self.limit = max(1.0, min(self.limit, float(ticket.level)) / 2)


def outcome_error(exc: BaseException | None) -> BaseException | None:
    """The error a limit learns from: model errors only (a bug or Ctrl-C in between says nothing)."""
    return exc if isinstance(exc, ModelError) else None
