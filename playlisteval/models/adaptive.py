"""How many calls a provider may have in flight, found while calling it (issue 43): AIMD with a memory.

A provider says how much it takes only by refusing (429, 503, Retry-After). So the limit starts at
``[runner] concurrency_start``, grows by one per answered call (doubling per round trip) up to the level a
refusal was last seen at, halves on a refusal, and probes that level again only slowly (one step per
``PROBE`` × limit answers): each probe above the provider's capacity costs one refused call, and a
refusal share under 10 % needs probes to be rare. The memory fades ``FORGET_S`` after the last refusal
(the provider may take more by then). A Retry-After pauses new calls of that provider until it has passed
(calls already sent go on). The limit never exceeds its ceiling: ``[rate_limits.X] concurrent`` when
set, else ``[runner] concurrency_max``.

Two guards keep an overshoot to about one refused call. Calls that would go above the highest level yet
answered are paced ``PACE_S`` apart: answers of calls sent together arrive together, and growing by one
per answer would send a whole wave past the capacity before the first refusal (which comes back at once)
could stop it. And refusals of calls sent before the last halving are the same overshoot, halved once
(as TCP counts one loss per window): otherwise they would collapse the limit to 1.

The state here is per process; with a Redis broker, models/adaptive_redis.py keeps the same state in Redis,
shared by every worker process that calls the provider.
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass

from playlisteval.config import Settings
from playlisteval.errors import ModelError, TransientModelError

PROBE = 16  # answers per limit step once at the level of the last refusal
PACE_S = 0.05  # between calls that go above the highest level answered so far
FORGET_S = 60.0  # a refusal this long ago no longer holds the limit below its level
MAX_PAUSE_S = 60.0  # a Retry-After longer than this is the runner's backoff's business, not every call's
#: providers that run here (a CPU or GPU model, the sim world): their concurrency is their own threads', not
#: a remote service's to be found by calling it (models/adaptive.py)
LOCAL_PROVIDERS = frozenset({"sim", "llama", "hf", "shortcut"})
#: how a refusal reads in an error's text (the ledger keeps only the text: models/call_rate.py)
THROTTLED_TEXT = re.compile(r"\b(429|503)\b|rate limit|overloaded|too many requests", re.I)


def is_throttled(exc: BaseException) -> bool:
    """Whether ``exc`` is the provider saying "too much" (429/503, or any transient error with a
    Retry-After), as opposed to a failure of this call (timeout, 500) that says nothing about load."""
    if not isinstance(exc, TransientModelError):
        return False
    return exc.retry_after is not None or bool(THROTTLED_TEXT.search(str(exc)))


@dataclass
class Ticket:
    """One admitted call: the limit's epoch when it was sent and how many were in flight with it."""

    epoch: int
    level: int
    token: str = ""  # its place in Redis's set of calls in flight (models/adaptive_redis.py)


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
        self.refused_when = 0.0
        self.answered_at = int(self.limit)  # the highest level answered (the start is taken on trust)
        self.in_flight = 0
        self.paused_until = 0.0
        self.probe_after = 0.0  # the next call above ``answered_at`` goes no sooner
        self.epoch = 0
        self.counts = Counts()
        self._clock = clock
        self._cond = threading.Condition()

    def _now(self) -> float:
        return float(self._clock())  # type: ignore[operator]

    def allowed(self) -> int:
        return max(1, int(self.limit))

    def _wait_s(self) -> float | None:
        """How long the next call must wait (0: it may go now; None: until a call ends)."""
        now = self._now()
        if self.paused_until > now:
            return self.paused_until - now
        if self.in_flight >= self.allowed():
            return None
        if self.in_flight >= self.answered_at and self.probe_after > now:
            return self.probe_after - now
        return 0.0

    def acquire(self) -> Ticket:
        with self._cond:
            while (wait := self._wait_s()) != 0.0:
                self._cond.wait(timeout=1.0 if wait is None else wait)
            self.in_flight += 1
            if self.in_flight > self.answered_at:
                self.probe_after = self._now() + PACE_S
            self.counts.sent += 1
            self.counts.peak = max(self.counts.peak, self.in_flight)
            return Ticket(self.epoch, self.in_flight)

    def release(self, ticket: Ticket, error: BaseException | None = None) -> None:
        """End a call: ``error`` None when answered; a refusal shrinks the limit, other errors change nothing."""
        with self._cond:
            level = self.in_flight  # this call included
            self.in_flight -= 1
            if error is None:
                self.counts.answered += 1
                self.answered_at = max(self.answered_at, ticket.level)
                self._grow()
            elif is_throttled(error):
                self.counts.throttled += 1
                # the fewer of the calls in flight when it was sent and when it was refused: both count calls
                # the provider had already let go of, so the smaller is the nearer to what it held
                self._shrink(ticket, min(level, ticket.level), getattr(error, "retry_after", None))
            self._cond.notify_all()

    def _grow(self) -> None:
        if self.refused_at is not None and self._now() - self.refused_when > FORGET_S:
            self.refused_at = None
        if self.refused_at is None or self.limit + 1 < self.refused_at:
            self.limit += 1.0  # below what was refused: back up quickly
        else:
            self.limit += 1.0 / (PROBE * self.limit)  # at the edge: probe rarely
        self.limit = min(self.limit, float(self.ceiling))

    def _shrink(self, ticket: Ticket, level: int, retry_after: float | None) -> None:
        now = self._now()
        if retry_after:
            self.paused_until = max(self.paused_until, now + min(float(retry_after), MAX_PAUSE_S))
        if ticket.epoch != self.epoch:
            return  # sent before the last halving: the same overshoot, already paid for
        self.epoch += 1
        self.refused_at, self.refused_when = level, now
        self.limit = max(1.0, min(self.limit, float(level)) / 2)
        self.answered_at = min(self.answered_at, level - 1)


def outcome_error(exc: BaseException | None) -> BaseException | None:
    """The error a limit learns from: model errors only (a bug or Ctrl-C in between says nothing)."""
    return exc if isinstance(exc, ModelError) else None


def is_adaptive(settings: Settings, provider: str) -> bool:
    """Whether calls to ``provider`` go through an adaptive limit (a remote provider, ``[runner] adaptive``)."""
    return settings.runner.adaptive and provider not in LOCAL_PROVIDERS


def ceiling_of(settings: Settings, provider: str) -> int:
    """The most calls ``provider`` may have in flight: ``[rate_limits.X] concurrent`` when set (a configured
    limit is a ceiling), else ``[runner] concurrency_max``."""
    configured = settings.rate_limits.get(provider, {}).get("concurrent")
    return int(configured) if configured else int(settings.runner.concurrency_max)


def call_threads(settings: Settings, spec: str) -> int:
    """Threads enough to keep ``spec``'s provider at its ceiling, so that no fixed pool caps what the
    adaptive limit finds; 1 for a local provider or a shortcut (their concurrency is set elsewhere)."""
    provider = spec.split("/", 1)[0]
    return ceiling_of(settings, provider) if is_adaptive(settings, provider) and "/" in spec else 1
