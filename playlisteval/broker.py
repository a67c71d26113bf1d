"""The message broker: in-process (dramatiq's StubBroker with worker threads in this process) by
default, Redis for many worker processes and machines. Only item ids travel through it (DESIGN 1)."""

from __future__ import annotations

from typing import Any

from dramatiq import Broker, Message
from dramatiq.brokers.stub import StubBroker

from playlisteval.config import Settings
from playlisteval.errors import ConfigError

# Few worker processes mean few Redis calls, so dramatiq's default maintenance roll (1 in 1,000 per
# million calls) would leave a SIGKILLed worker's messages unacked for minutes: roll far more often.
MAINTENANCE_CHANCE = 100_000
HEARTBEAT_TIMEOUT_MS = 60_000


def is_redis(url: str) -> bool:
    return url.startswith(("redis://", "rediss://", "unix://"))


def make_broker(settings: Settings) -> Broker:
    url = settings.broker.url
    if url in ("memory://", "stub://", ""):
        return StubBroker()
    if is_redis(url):
        from dramatiq.brokers.redis import RedisBroker

        return RedisBroker(url=url, maintenance_chance=MAINTENANCE_CHANCE,
                           heartbeat_timeout=HEARTBEAT_TIMEOUT_MS)
    raise ConfigError(f"broker url {url!r}: use 'memory://' or 'redis://host:port/db'")


def queued_ids(broker: Broker, queue: str) -> set[int] | None:
    """The first argument (an item or video id) of every message the broker holds for ``queue`` — waiting,
    delayed for a retry, or delivered and not yet acknowledged — or None when the broker cannot tell.

    Read from the Redis broker's message hashes (``<ns>:<queue>.msgs`` and its delay queue's): a
    message lives there from enqueue until it is acknowledged, and is gone after Redis lost it."""
    client: Any = getattr(broker, "client", None)
    namespace = getattr(broker, "namespace", None)
    if client is None or namespace is None:
        return None
    ids: set[int] = set()
    for name in (queue, f"{queue}.DQ"):
        for _, data in client.hscan_iter(f"{namespace}:{name}.msgs", count=1000):
            try:
                args = Message.decode(data).args
                ids.add(int(args[0]))
            except Exception:  # noqa: BLE001  (a message of another kind: not ours to count)
                continue
    return ids
