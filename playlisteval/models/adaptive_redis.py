"""The adaptive limit of models/adaptive.py kept in Redis, for worker processes that share a provider.

With a Redis broker every `playlisteval worker` calls the same provider: one process's refusals must slow
them all, and the calls in flight are everyone's. So the limit's state (limit, epoch, refused level and
when, highest level answered, pause until) is one Redis hash per provider, changed only by the two Lua
scripts below, atomically, on Redis's clock; the calls in flight are a sorted set of tokens scored by
expiry, renewed while the call runs, as ``[rate_limits] concurrent``'s slots are (ratelimit.py): a worker
killed mid-call frees its place a ttl later. The arithmetic is the same as ``AdaptiveLimit``'s.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from playlisteval.models.adaptive import FORGET_S, MAX_PAUSE_S, PACE_S, PROBE, Ticket, is_throttled

_NOW_MS = "local t = redis.call('TIME') local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) "
_STATE = """
local st = redis.call('HMGET', KEYS[2], 'limit', 'epoch', 'refused_at', 'refused_when', 'answered_at',
                      'paused_until', 'probe_after')
local start, ceiling = tonumber(ARGV[1]), tonumber(ARGV[2])
local limit = tonumber(st[1]) or math.min(start, ceiling)
local epoch = tonumber(st[2]) or 0
local refused_at = tonumber(st[3])
local refused_when = tonumber(st[4]) or 0
local answered_at = tonumber(st[5]) or math.floor(limit)
local paused = tonumber(st[6]) or 0
local probe_after = tonumber(st[7]) or 0
"""
_SAVE = """
redis.call('HSET', KEYS[2], 'limit', tostring(limit), 'epoch', epoch, 'refused_when', refused_when,
           'answered_at', answered_at, 'paused_until', paused, 'probe_after', probe_after)
if refused_at then redis.call('HSET', KEYS[2], 'refused_at', refused_at)
else redis.call('HDEL', KEYS[2], 'refused_at') end
redis.call('PEXPIRE', KEYS[2], 3600000)
"""
# ARGV: start, ceiling, ttl (ms), token, pace (ms). {1, epoch, level, 0} when admitted, else {0, 0, 0, wait ms}
# (wait 0: until a call ends)
_ACQUIRE = _NOW_MS + _STATE + """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if paused > now then return {0, 0, 0, paused - now} end
local n = redis.call('ZCARD', KEYS[1])
if n >= math.max(1, math.floor(math.min(limit, ceiling))) then return {0, 0, 0, 0} end
if n >= answered_at and probe_after > now then return {0, 0, 0, probe_after - now} end
local ttl = tonumber(ARGV[3])
redis.call('ZADD', KEYS[1], now + ttl, ARGV[4])
redis.call('PEXPIRE', KEYS[1], 2 * ttl)
if n + 1 > answered_at then
  probe_after = now + tonumber(ARGV[5])
  redis.call('HSET', KEYS[2], 'probe_after', probe_after)
end
return {1, epoch, n + 1, 0}
"""
# ARGV: start, ceiling, token, outcome (0 answered, 1 refused, 2 other), retry-after (ms), the ticket's epoch
# and level, PROBE, FORGET (ms). Returns the limit.
_RELEASE = _NOW_MS + _STATE + """
local level = redis.call('ZCARD', KEYS[1])
redis.call('ZREM', KEYS[1], ARGV[3])
local outcome, t_epoch, t_level = tonumber(ARGV[4]), tonumber(ARGV[6]), tonumber(ARGV[7])
if outcome == 0 then
  answered_at = math.max(answered_at, t_level)
  if refused_at and now - refused_when > tonumber(ARGV[9]) then refused_at = nil end
  if (not refused_at) or limit + 1 < refused_at then limit = limit + 1
  else limit = limit + 1 / (tonumber(ARGV[8]) * limit) end
  limit = math.min(limit, ceiling)
elseif outcome == 1 then
  local retry = tonumber(ARGV[5])
  if retry > 0 then paused = math.max(paused, now + retry) end
  if t_epoch == epoch then
    local lvl = math.min(level, t_level)
    epoch = epoch + 1
    refused_at, refused_when = lvl, now
    limit = math.max(1, math.min(limit, lvl) / 2)
    answered_at = math.min(answered_at, lvl - 1)
  end
end
""" + _SAVE + "return tostring(limit)"
_RENEW = _NOW_MS + """
if redis.call('ZADD', KEYS[1], 'XX', 'CH', now + tonumber(ARGV[1]), ARGV[2]) == 1 then return 1 end
return redis.call('ZSCORE', KEYS[1], ARGV[2]) and 1 or 0
"""
_POLL_S = 0.05


class RedisAdaptive:
    """One provider's adaptive limit shared by every process on this Redis (see the module's docstring)."""

    def __init__(self, client: Any, provider: str, start: int, ceiling: int, ttl_s: float, owner: str = "") -> None:
        self.client, self.start, self.ceiling = client, max(1, start), max(1, ceiling)
        self.ttl_ms, self.owner = max(1, int(ttl_s * 1000)), owner or "rl"
        self.keys = [f"playlisteval:{provider}:adaptive:slots", f"playlisteval:{provider}:adaptive:state"]
        self._acquire = client.register_script(_ACQUIRE)
        self._release = client.register_script(_RELEASE)
        self._renew = client.register_script(_RENEW)

    def acquire(self) -> Ticket:
        token = f"{self.owner}/{uuid.uuid4().hex[:12]}"
        while True:
            ok, epoch, level, wait_ms = self._acquire(keys=self.keys, args=[
                self.start, self.ceiling, self.ttl_ms, token, int(PACE_S * 1000)])
            if int(ok):
                return Ticket(int(epoch), int(level), token)
            time.sleep(min(max(int(wait_ms) / 1000, _POLL_S), 1.0))

    def release(self, ticket: Ticket, error: BaseException | None = None) -> None:
        outcome = 0 if error is None else 1 if is_throttled(error) else 2
        retry = getattr(error, "retry_after", None) if outcome == 1 else None
        self._release(keys=self.keys, args=[
            self.start, self.ceiling, ticket.token, outcome, int(min(float(retry or 0), MAX_PAUSE_S) * 1000),
            ticket.epoch, ticket.level, PROBE, int(FORGET_S * 1000)])

    def renew(self, token: str) -> bool:
        return bool(self._renew(keys=self.keys[:1], args=[self.ttl_ms, token]))

    def allowed(self) -> int:
        raw = self.client.hget(self.keys[1], "limit")
        limit = float(raw) if raw is not None else float(min(self.start, self.ceiling))
        return max(1, int(limit))

    def holders(self) -> int:
        return int(self.client.zcard(self.keys[0]))
