"""Per-provider rate limits enforced across every worker process (DESIGN 6).

With a Redis broker the limits live in Redis (dramatiq's rate limiters on its Redis backend), so all
workers on all machines share them; otherwise they are in-process. Configure per provider:

    [rate_limits.gemini]
    rpm = 300          # requests per minute
    tpm = 2000000      # (estimated) tokens per minute
    concurrent = 16    # requests in flight at once
    window_s = 60      # rpm is counted over this sliding window (seconds, 1-s buckets)
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from dramatiq.rate_limits import ConcurrentRateLimiter, WindowRateLimiter
from dramatiq.rate_limits.backends import StubBackend

from playlisteval.config import Settings
from playlisteval.models.request import Usage

_POLL_S = 0.05


def make_backend(broker_url: str) -> Any:
    if broker_url.startswith(("redis://", "rediss://", "unix://")):
        from dramatiq.rate_limits.backends import RedisBackend

        return RedisBackend(url=broker_url)
    return StubBackend()


class RateLimits:
    def __init__(self, settings: Settings, backend: Any | None = None) -> None:
        self._limits = settings.rate_limits
        self._backend = backend if backend is not None else (
            make_backend(settings.broker.url) if self._limits else None
        )
        self._limiters: dict[str, list[Any]] = {}

    def _for(self, provider: str) -> list[Any]:
        if provider not in self._limiters:
            cfg = self._limits.get(provider, {})
            limiters: list[Any] = []
            if cfg.get("concurrent"):
                limiters.append(ConcurrentRateLimiter(
                    self._backend, f"playlisteval:{provider}:concurrent", limit=int(cfg["concurrent"]),
                    ttl=3_600_000,
                ))
            if cfg.get("rpm"):
                # rpm is enforced over a sliding window of window_s seconds (default 60) holding
                # rpm x window_s / 60 requests; a shorter window also spreads bursts out
                window = max(1, int(cfg.get("window_s", 60)))
                limiters.append(WindowRateLimiter(
                    self._backend, f"playlisteval:{provider}:rpm", limit=max(1, int(cfg["rpm"] * window / 60)),
                    window=window,
                ))
            self._limiters[provider] = limiters
        return self._limiters[provider]

    def _tokens_ok(self, provider: str, tokens: int) -> bool:
        tpm = self._limits.get(provider, {}).get("tpm")
        if not tpm:
            return True
        # one window counter per minute, incremented by the estimated tokens of each request
        bucket = f"playlisteval:{provider}:tpm:{int(time.time() // 60)}"
        assert self._backend is not None
        used = self._backend.incr(bucket, tokens, int(tpm) + tokens, 120_000)
        return bool(used)

    @contextmanager
    def slot(self, provider: str, estimate_tokens: Usage | None = None) -> Iterator[None]:
        """Wait until every limit of ``provider`` admits one more request, hold it for the call."""
        limiters = self._for(provider) if self._limits else []
        tokens = estimate_tokens.input_tokens + estimate_tokens.output_tokens if estimate_tokens else 0
        while self._limits and not self._tokens_ok(provider, tokens):
            time.sleep(_POLL_S * 10)
        with ExitStack() as stack:
            for limiter in limiters:
                while True:
                    cm = limiter.acquire(raise_on_failure=False)
                    if stack.enter_context(cm):
                        break
                    time.sleep(_POLL_S)
            yield
