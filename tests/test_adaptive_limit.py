"""Issue 43, deliverable 5: calls at the provider's capacity. The adaptive limit's logic on a fake clock
(grows while answered, halves once per overshoot, probes the refused level rarely, honours Retry-After,
a configured limit is its ceiling), then the real runner and openai SDK against a real local HTTP server
that takes at most N calls at once (bench/capacity_server.py)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.capacity_server import CapacityServer
from playlisteval.errors import PermanentModelError, TransientModelError
from playlisteval.eval.parallel import map_ordered
from playlisteval.models.adaptive import FORGET_S, PACE_S, PROBE, AdaptiveLimit, call_threads, is_throttled
from playlisteval.models.ratelimit import RateLimits
from playlisteval.models.request import ModelRequest, TextPart
from playlisteval.models.runner import Runner
from playlisteval.store import open_store
from tests.helpers import project

REFUSED = TransientModelError("openai: Error code: 429 - too many requests", retry_after=None)


class Clock:
    """Time that passes one pacing interval per reading: calls above the answered level go without sleeping."""

    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        self.t += PACE_S
        return self.t


def _answered(limit: AdaptiveLimit, n: int) -> None:
    for _ in range(n):
        limit.release(limit.acquire())


def test_the_limit_grows_while_answered_and_halves_once_per_overshoot() -> None:
    limit = AdaptiveLimit(start=4, ceiling=32, clock=Clock())
    assert limit.allowed() == 4
    _answered(limit, 6)
    assert limit.allowed() == 10  # one more per answered call: doubling per round trip
    held = [limit.acquire() for _ in range(10)]
    assert limit.in_flight == 10 and held[-1].level == 10
    limit.release(held.pop(), REFUSED)  # the tenth of ten in flight was refused: the provider takes < 10
    assert limit.allowed() == 5 and limit.refused_at == 10
    for ticket in held[-3:]:  # refusals of calls sent before the halving: the same overshoot, not halved again
        limit.release(ticket, REFUSED)
    assert limit.allowed() == 5 and limit.counts.throttled == 4
    for ticket in held[:-3]:
        limit.release(ticket)
    # back up quickly to just below the refused level, then one step per PROBE × limit answers
    assert limit.allowed() == 9
    probed = 0
    while limit.allowed() == 9:
        _answered(limit, 1)
        probed += 1
    assert PROBE * 9 - 2 <= probed <= PROBE * 10 and limit.allowed() == 10


def test_the_refused_level_fades_and_the_ceiling_holds() -> None:
    clock = Clock()
    limit = AdaptiveLimit(start=3, ceiling=6, clock=clock)
    tickets = [limit.acquire() for _ in range(3)]
    limit.release(tickets.pop(), REFUSED)
    assert limit.refused_at == 3 and limit.allowed() == 1
    for ticket in tickets:
        limit.release(ticket)
    _answered(limit, 8)
    assert limit.allowed() == 2  # held below the refused level: one step per PROBE x limit answers
    clock.t += FORGET_S  # long after the refusal the provider may take more: fast growth again
    _answered(limit, 20)
    assert limit.refused_at is None and limit.allowed() == 6  # never above the ceiling


def test_calls_above_the_answered_level_are_paced() -> None:
    limit = AdaptiveLimit(start=2, ceiling=8)
    _answered(limit, 6)
    assert limit.allowed() == 8 and limit.answered_at == 2
    started = time.monotonic()
    held = [limit.acquire() for _ in range(6)]  # three at once (the first probe), three more paced
    assert time.monotonic() - started >= 2.9 * PACE_S and [t.level for t in held] == [1, 2, 3, 4, 5, 6]


def test_retry_after_holds_new_calls_until_it_has_passed() -> None:
    limit = AdaptiveLimit(start=4, ceiling=8)
    limit.release(limit.acquire(), TransientModelError("openai: Error code: 503 - overloaded", retry_after=0.3))
    started = time.monotonic()
    limit.release(limit.acquire())
    assert time.monotonic() - started >= 0.28


def test_a_waiting_call_goes_when_a_slot_frees() -> None:
    limit = AdaptiveLimit(start=1, ceiling=1)
    first = limit.acquire()
    went = threading.Event()
    threading.Thread(target=lambda: (limit.acquire(), went.set()), daemon=True).start()
    assert not went.wait(0.2)  # one in flight at most
    limit.release(first)
    assert went.wait(2)


def test_only_the_provider_saying_too_much_shrinks_the_limit() -> None:
    assert is_throttled(REFUSED)
    assert is_throttled(TransientModelError("gemini: 503 UNAVAILABLE"))
    assert is_throttled(TransientModelError("x: busy", retry_after=2.0))
    assert not is_throttled(TransientModelError("openai: timed out"))
    assert not is_throttled(TransientModelError("openai: Error code: 500 - upstream"))
    assert not is_throttled(PermanentModelError("openai: Error code: 429"))  # a quota: permanent
    limit = AdaptiveLimit(start=4, ceiling=8, clock=Clock())
    limit.release(limit.acquire(), TransientModelError("openai: timed out"))
    assert limit.allowed() == 4 and limit.counts.throttled == 0


def test_a_configured_concurrent_limit_is_the_ceiling(tmp_path: Path) -> None:
    settings = project(tmp_path)
    settings.rate_limits = {"openai": {"concurrent": 6}}
    limits = RateLimits(settings)
    assert limits.adaptive_for("openai").ceiling == 6  # type: ignore[union-attr]
    assert limits.adaptive_for("gemini").ceiling == settings.runner.concurrency_max  # type: ignore[union-attr]
    assert limits.adaptive_for("sim") is None  # local: its own threads decide
    assert call_threads(settings, "openai/x") == 6 and call_threads(settings, "shortcut/random") == 1
    settings.runner.adaptive = False
    assert RateLimits(settings).adaptive_for("openai") is None and call_threads(settings, "openai/x") == 1


# -- against a real server of known capacity ---------------------------------------------------------------


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("OPENAI_API_KEY", "test-capacity-key")
    yield


def _ask_all(tmp_path: Path, server: CapacityServer, calls: int) -> tuple[list[str], float]:
    """``calls`` distinct requests through one runner, on as many threads as the provider's ceiling."""
    settings = project(tmp_path, runner__backoff_base_s=0.05, runner__max_attempts=8)
    settings.providers.openai_base_url = server.url
    runner = Runner(settings, open_store(settings))
    requests = [ModelRequest(role="G", parts=[TextPart(text=f"question {i}")], purpose="eval", item_id=i)
                for i in range(calls)]
    started = time.monotonic()
    replies = map_ordered(lambda r: runner.call(r, model="openai/capacity").text, requests,
                          call_threads(settings, "openai/capacity"))
    return replies, time.monotonic() - started


def test_calls_stay_within_a_small_servers_capacity(tmp_path: Path, key: None) -> None:
    with CapacityServer(capacity=4, latency_s=0.2) as server:
        replies, _ = _ask_all(tmp_path, server, 40)
        served = server.served()
    assert len(replies) == 40 and all("[[A]]" in r for r in replies)  # every refused call retried, answered
    assert served.answered == 40
    assert served.refused_share <= 0.10, served
    assert served.peak == 4


def test_calls_grow_past_the_old_fixed_four_when_the_server_takes_more(tmp_path: Path, key: None) -> None:
    with CapacityServer(capacity=12, latency_s=0.2) as server:
        replies, took = _ask_all(tmp_path, server, 60)
        served = server.served()
    assert served.answered == 60 and len(replies) == 60
    assert served.peak > 4, served  # the old [broker]/[eval] 4 threads would have stopped at 4
    assert served.refused_share <= 0.10, served
    assert took < 3 * server.min_time_s(60) + 1.0  # 4 at a time would take 15 waves (3 s); 12: 5 waves (1 s)


def test_the_ledgers_intervals_give_calls_in_flight_rate_and_429s() -> None:
    from playlisteval.models.call_rate import rate_of

    rows = [("ok", None, 2.0, 102.0), ("ok", None, 2.0, 102.5), ("ok", None, 1.0, 103.0),
            ("error", "openai: Error code: 429 - at most 2 at once", 0.01, 101.01),
            ("error", "openai: Error code: 500 - upstream", 0.5, 103.0)]
    rate = rate_of(rows, open_rows=3)
    assert (rate.tries, rate.refused, rate.peak, rate.open) == (5, 1, 3, 3)
    assert rate.span_s == pytest.approx(3.0) and rate.per_s == pytest.approx(5 / 3)
    assert "1 refused 429/503" in rate.line()
    window = rate_of(rows, (102.0, 104.0))  # the last seconds only: what ended before them is left out
    assert window.tries == 4 and window.span_s == pytest.approx(2.0)


def test_workers_on_one_redis_share_the_limit_and_the_calls_in_flight(redis_url: str) -> None:
    import redis

    from playlisteval.models.adaptive_redis import RedisAdaptive

    client = redis.Redis.from_url(redis_url)
    one, two = (RedisAdaptive(client, "openai", start=4, ceiling=8, ttl_s=5, owner=w) for w in ("w1", "w2"))
    held = [one.acquire() for _ in range(2)] + [two.acquire() for _ in range(2)]
    assert one.holders() == 4 and [t.level for t in held] == [1, 2, 3, 4]
    blocked = threading.Event()
    threading.Thread(target=lambda: (two.acquire(), blocked.set()), daemon=True).start()
    assert not blocked.wait(0.3)  # four in flight across both workers: the fifth waits
    two.release(held.pop(), REFUSED)  # a refusal seen by one worker halves the limit of both
    assert one.allowed() == 2
    for ticket in held:
        one.release(ticket)
    assert blocked.wait(2) and one.holders() == 1
    assert one.allowed() == 3  # back up quickly below the refused level (4), learnt from either worker
