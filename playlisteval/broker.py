"""The message broker: in-process (dramatiq's StubBroker with worker threads in this process) by
default, Redis for many worker processes and machines. Only item ids travel through it (DESIGN 1)."""

from __future__ import annotations

from dramatiq import Broker
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
