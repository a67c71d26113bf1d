"""Per-provider rate limits enforced across every worker process (DESIGN 6).

With a Redis broker the limits live in Redis, so all workers on all machines share them; otherwise
they are in-process. Configure per provider:

    [rate_limits.gemini]
    rpm = 300          # requests per minute
    tpm = 2000000      # (estimated) tokens per minute
    concurrent = 16    # requests in flight at once
    window_s = 60      # rpm is counted over this sliding window (seconds, 1-s buckets)
    slot_ttl_s = 10    # a `concurrent` slot whose holder stopped renewing it is free after this

A `concurrent` slot is one entry of a sorted set scored by its expiry, renewed by a heartbeat thread
while the call runs: a worker killed mid-call (SIGKILL, OOM) stops renewing, and its slot is free
``slot_ttl_s`` later — a counter would stay taken until its key expired (an hour), and every worker
would wait on it. A Redis failure while waiting is an ``InfrastructureError``, never a model error:
the step is given back and retried, the item does not fail.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from playlisteval.config import Settings
from playlisteval.errors import InfrastructureError, outage_of
from playlisteval.logs import get_logger, outage
from playlisteval.models.adaptive import AdaptiveLimit, ceiling_of, is_adaptive, outcome_error
from playlisteval.models.request import Usage

log = get_logger(__name__)

_POLL_S = 0.05
DEFAULT_SLOT_TTL_S = 10.0

# The server's clock, so that workers on machines whose clocks disagree still agree on expiry.
_NOW_MS = "local t = redis.call('TIME') local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) "
# KEYS[1] the slot set; ARGV: limit, ttl (ms), token. 1 if the token now holds a slot.
_ACQUIRE = _NOW_MS + """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZSCORE', KEYS[1], ARGV[3]) or redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[1]) then
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
  redis.call('PEXPIRE', KEYS[1], 2 * tonumber(ARGV[2]))
  return 1
end
return 0
"""
# ARGV: ttl (ms), token. 1 if the token still held its slot (now renewed), 0 if it had expired.
_RENEW = _NOW_MS + """
if redis.call('ZADD', KEYS[1], 'XX', 'CH', now + tonumber(ARGV[1]), ARGV[2]) == 1 then
  redis.call('PEXPIRE', KEYS[1], 2 * tonumber(ARGV[1]))
  return 1
end
return redis.call('ZSCORE', KEYS[1], ARGV[2]) and 1 or 0
"""


def is_redis_url(url: str) -> bool:
    return url.startswith(("redis://", "rediss://", "unix://"))


def _redis_error() -> type[Exception]:
    """redis's error class, imported when an exception is being matched (Python evaluates an ``except``
    clause's expression only then): importing the redis package costs ~0.3 s, which every command that
    reads money (status, funnel) paid at start without ever talking to Redis (issue 26)."""
    from redis.exceptions import RedisError

    return RedisError


def make_backend(broker_url: str) -> Any:
    if is_redis_url(broker_url):
        from dramatiq.rate_limits.backends import RedisBackend

        return RedisBackend(url=broker_url)
    # dramatiq's rate limiters load when a runner first limits a call: importing dramatiq costs every
    # command that only reads money (status, funnel) ~15 ms at start (issue 26)
    from dramatiq.rate_limits.backends import StubBackend

    return StubBackend()


class Slots(Protocol):
    """At most ``limit`` holders at once; a holder that stops renewing loses its slot after the ttl."""

    def try_acquire(self, token: str) -> bool: ...
    def renew(self, token: str) -> bool: ...
    def release(self, token: str) -> None: ...


class RedisSlots:
    def __init__(self, client: Any, key: str, limit: int, ttl_s: float) -> None:
        self.client, self.key, self.limit, self.ttl_ms = client, key, limit, max(1, int(ttl_s * 1000))
        self._acquire = client.register_script(_ACQUIRE)
        self._renew = client.register_script(_RENEW)

    def try_acquire(self, token: str) -> bool:
        return bool(self._acquire(keys=[self.key], args=[self.limit, self.ttl_ms, token]))

    def renew(self, token: str) -> bool:
        return bool(self._renew(keys=[self.key], args=[self.ttl_ms, token]))

    def release(self, token: str) -> None:
        self.client.zrem(self.key, token)

    def holders(self) -> int:
        return int(self.client.zcard(self.key))


class LocalSlots:
    """The same in one process (no Redis): holders die with the process, so only the count matters."""

    def __init__(self, limit: int, ttl_s: float) -> None:
        self.limit, self.ttl_s = limit, ttl_s
        self._held: dict[str, float] = {}
        self._lock = threading.Lock()

    def try_acquire(self, token: str) -> bool:
        with self._lock:
            t = time.monotonic()
            self._held = {k: v for k, v in self._held.items() if v > t}
            if token in self._held or len(self._held) < self.limit:
                self._held[token] = t + self.ttl_s
                return True
            return False

    def renew(self, token: str) -> bool:
        with self._lock:
            if token not in self._held:
                return False
            self._held[token] = time.monotonic() + self.ttl_s
            return True

    def release(self, token: str) -> None:
        with self._lock:
            self._held.pop(token, None)


class _Heartbeat:
    """Renews one slot every third of its ttl until stopped."""

    def __init__(self, slots: Slots, token: str, every_s: float) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(slots, token, every_s), daemon=True,
                                        name=f"slot-heartbeat-{token[-8:]}")
        self._thread.start()

    def _run(self, slots: Slots, token: str, every_s: float) -> None:
        while not self._stop.wait(every_s):
            try:
                kept = slots.renew(token)
            except _redis_error() as exc:  # the slot expires on its own if this lasts; the call goes on
                _unreachable(exc, "ratelimit.renew_failed", token=token)
                continue
            outage.reached("broker")
            if not kept:
                log.warning("ratelimit.slot_lost", token=token)  # expired while Redis was unreachable

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


class RateLimits:
    def __init__(self, settings: Settings, backend: Any | None = None, *, owner: str = "") -> None:
        self._limits = settings.rate_limits
        self._settings, self._runner = settings, settings.runner
        self._adaptive: dict[str, Any] = {}
        self._url = settings.broker.url
        self._backend = backend if backend is not None else (
            make_backend(self._url) if self._limits else None
        )
        self._owner = owner or "rl"
        self._windows: dict[str, list[Any]] = {}
        self._slots: dict[str, Slots | None] = {}
        self._client: Any = None
        self._lock = threading.Lock()

    def _redis(self) -> Any:
        if self._client is None:
            import redis

            self._client = redis.Redis.from_url(self._url, socket_timeout=10, socket_connect_timeout=5)
        return self._client

    def slots_for(self, provider: str) -> Slots | None:
        with self._lock:
            if provider not in self._slots:
                cfg = self._limits.get(provider, {})
                slots: Slots | None = None
                if cfg.get("concurrent"):
                    limit, ttl = int(cfg["concurrent"]), float(cfg.get("slot_ttl_s", DEFAULT_SLOT_TTL_S))
                    key = f"playlisteval:{provider}:concurrent:slots"
                    slots = RedisSlots(self._redis(), key, limit, ttl) if is_redis_url(self._url) else (
                        LocalSlots(limit, ttl))
                self._slots[provider] = slots
            return self._slots[provider]

    def _ceiling(self, provider: str) -> int:
        return ceiling_of(self._settings, provider)

    def adaptive_for(self, provider: str) -> Any:
        """The provider's adaptive limit (models/adaptive.py), in Redis when the broker is Redis (shared by
        every worker: models/adaptive_redis.py); None for a local provider or with ``[runner] adaptive =
        false`` (then only the static limits apply)."""
        with self._lock:
            if provider not in self._adaptive:
                limit: Any = None
                if is_adaptive(self._settings, provider):
                    start, ceiling = self._runner.concurrency_start, self._ceiling(provider)
                    if is_redis_url(self._url):
                        from playlisteval.models.adaptive_redis import RedisAdaptive

                        ttl = float(self._limits.get(provider, {}).get("slot_ttl_s", DEFAULT_SLOT_TTL_S))
                        limit = RedisAdaptive(self._redis(), provider, start, ceiling, ttl, self._owner)
                    else:
                        limit = AdaptiveLimit(start, ceiling)
                self._adaptive[provider] = limit
            return self._adaptive[provider]

    def _windows_for(self, provider: str) -> list[Any]:
        with self._lock:
            if provider not in self._windows:
                cfg = self._limits.get(provider, {})
                limiters: list[Any] = []
                if cfg.get("rpm"):
                    from dramatiq.rate_limits import WindowRateLimiter

                    # rpm is enforced over a sliding window of window_s seconds (default 60) holding
                    # rpm x window_s / 60 requests; a shorter window also spreads bursts out
                    window = max(1, int(cfg.get("window_s", 60)))
                    limiters.append(WindowRateLimiter(
                        self._backend, f"playlisteval:{provider}:rpm", limit=max(1, int(cfg["rpm"] * window / 60)),
                        window=window,
                    ))
                self._windows[provider] = limiters
            return self._windows[provider]

    def _tokens_ok(self, provider: str, tokens: int) -> bool:
        tpm = self._limits.get(provider, {}).get("tpm")
        if not tpm:
            return True
        # one window counter per minute, incremented by the estimated tokens of each request
        bucket = f"playlisteval:{provider}:tpm:{int(time.time() // 60)}"
        assert self._backend is not None
        used = self._backend.incr(bucket, tokens, int(tpm) + tokens, 120_000)
        return bool(used)

    def _admit(self, provider: str, tokens: int, token: str) -> Slots | None:
        """Wait until every limit admits one more request; the slot taken, if any."""
        while not self._tokens_ok(provider, tokens):
            time.sleep(_POLL_S * 10)
        slots = self.slots_for(provider)
        while slots is not None and not slots.try_acquire(token):
            time.sleep(_POLL_S)
        try:
            for limiter in self._windows_for(provider):
                while True:
                    with limiter.acquire(raise_on_failure=False) as admitted:
                        if admitted:
                            break
                    time.sleep(_POLL_S)
        except BaseException:
            if slots is not None:
                _quietly_release(slots, token)
            raise
        return slots

    @contextmanager
    def slot(self, provider: str, estimate_tokens: Usage | None = None) -> Iterator[None]:
        """Wait until every limit of ``provider`` admits one more request, hold it for the call; the
        adaptive limit learns from how the call ended (the exception leaving the block, if any)."""
        adaptive = self.adaptive_for(provider)
        if adaptive is None:
            with self._static(provider, estimate_tokens):
                yield
            return
        try:
            ticket = adaptive.acquire()
        except _redis_error() as exc:
            raise InfrastructureError(f"adaptive limit of {provider!r}: Redis unavailable: {exc}") from exc
        beat = _Heartbeat(adaptive, ticket.token, max(0.05, adaptive.ttl_ms / 3000)) if ticket.token else None
        error: BaseException | None = None
        try:
            with self._static(provider, estimate_tokens):
                yield
        except BaseException as exc:
            error = exc
            raise
        finally:
            if beat is not None:
                beat.stop()
            try:
                adaptive.release(ticket, outcome_error(error))
            except _redis_error() as exc:  # its place expires a ttl later; the limit learns from the next call
                _unreachable(exc, "ratelimit.adaptive_release_failed", provider=provider)

    @contextmanager
    def _static(self, provider: str, estimate_tokens: Usage | None = None) -> Iterator[None]:
        """The configured limits (``[rate_limits]``): rpm, tpm and concurrent slots."""
        if not self._limits:
            yield
            return
        tokens = estimate_tokens.input_tokens + estimate_tokens.output_tokens if estimate_tokens else 0
        token = f"{self._owner}/{uuid.uuid4().hex[:12]}"
        try:
            slots = self._admit(provider, tokens, token)
        except _redis_error() as exc:
            raise InfrastructureError(f"rate limits of {provider!r}: Redis unavailable: {exc}") from exc
        if slots is None:
            yield
            return
        ttl_s = float(self._limits.get(provider, {}).get("slot_ttl_s", DEFAULT_SLOT_TTL_S))
        beat = _Heartbeat(slots, token, max(0.05, ttl_s / 3))
        try:
            yield
        finally:
            beat.stop()
            _quietly_release(slots, token)


def _quietly_release(slots: Slots, token: str) -> None:
    try:
        slots.release(token)
    except _redis_error() as exc:  # it expires by itself a ttl later
        _unreachable(exc, "ratelimit.release_failed", token=token)


def _unreachable(exc: Exception, event: str, **fields: object) -> None:
    """Redis failed under a call that goes on: one warning per outage (logs/outage.py), not one per beat."""
    if not outage.failed(outage_of(exc), exc, where=event, **fields):
        log.warning(event, error=str(exc), **fields)
