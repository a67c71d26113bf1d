"""Context caching (issue 15): media that several calls send is sent once, cached, and referenced.

A judge's (or a weak judge's) request carries the question's evidence — frames, audio — before its
prompt, and every pair of the question, in both orders, sends the same evidence. With [batch]
context_cache on, the leading media of a request (the parts before its first text part) of at least
[batch] context_cache_min_tokens go into a provider context cache (Gemini: ``client.caches.create``,
living [batch] cache_ttl_s), and the call sends only the rest with the cache's name. The cache is
found again by (provider, model, fingerprint of those parts — files by path, size and modification
time) in the store, so every worker reuses it while a call made now still finds it alive. Online calls
only: a batch may run hours after it is sent, past a cache's life.

Its cost is on the ledger when it is made — role ``context_cache``: its tokens at the input price
(writing them) plus its storage for its whole lifetime (``Price.cache_storage``); the calls that read
it report the cached tokens (usage), which the ledger charges at ``Price.cached_input``. The cache's
cost is not checked against a budget (it is small beside the calls that read it, and made only by one).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlmodel import col, delete, select

from playlisteval.config import Settings
from playlisteval.logs import get_logger
from playlisteval.models import pricing
from playlisteval.models.request import ModelRequest, TextPart, Usage, stable_dump
from playlisteval.models.request_keys import fingerprint
from playlisteval.store import open_store, transaction
from playlisteval.store.tables import ContextCache, ModelCall, now

log = get_logger(__name__)
ROLE = "context_cache"


def media_prefix(request: ModelRequest) -> int:
    """How many leading parts are media (0 when the request starts with text)."""
    for i, part in enumerate(request.parts):
        if isinstance(part, TextPart):
            return i
    return 0  # media only: nothing would be left to ask


def prefix_fingerprint(model: str, head: ModelRequest) -> str:
    parts = []
    for part in head.parts:
        data = part.model_dump()
        if "path" in data:
            data["fingerprint"] = fingerprint(data["path"])
        parts.append(data)
    body = {"model": model, "parts": parts, "settings": stable_dump(head.settings)}
    return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()


class ContextCaches:
    """One provider's caches: found in the store, made through ``create`` when none is valid."""

    def __init__(self, settings: Settings, provider: str) -> None:
        self.settings = settings
        self.provider = provider

    def worth_it(self, head: ModelRequest) -> bool:
        cfg = self.settings.batch
        return cfg.context_cache and pricing.estimate_usage(head).input_tokens >= cfg.context_cache_min_tokens

    def valid(self, model: str, key: str) -> str | None:
        margin = self.settings.providers.file_margin_s
        with transaction(open_store(self.settings)) as s:
            row = s.exec(select(ContextCache).where(ContextCache.provider == self.provider,
                                                    ContextCache.model == model,
                                                    ContextCache.fingerprint == key)).first()
        # a call made now must find it alive: a quarter of its life at most as margin
        if row is None or row.expires_at - min(margin, self.settings.batch.cache_ttl_s / 4) <= time.time():
            return None
        return row.name

    def forget(self, name: str) -> None:
        with transaction(open_store(self.settings)) as s:
            s.exec(delete(ContextCache).where(col(ContextCache.provider) == self.provider,
                                              col(ContextCache.name) == name))

    def reference(self, model: str, head: ModelRequest, request: ModelRequest,
                  create: Callable[[float], tuple[str, int, float | None]]) -> str:
        """The name of a valid cache of ``head``'s parts for ``model``, made by ``create(ttl_s)`` —
        which returns (name, tokens, expiry as a timestamp or None) — when there is none."""
        key = prefix_fingerprint(model, head)
        name = self.valid(model, key)
        if name is not None:
            return name
        ttl = self.settings.batch.cache_ttl_s
        name, tokens, expires = create(ttl)
        tokens = tokens or pricing.estimate_usage(head).input_tokens
        expires_at = expires if expires is not None else time.time() + ttl
        self._record(model, key, name, tokens, expires_at, request)
        log.info("context_cache.made", provider=self.provider, model=model, tokens=tokens, ttl_s=ttl)
        return name

    def _record(self, model: str, key: str, name: str, tokens: int, expires_at: float,
                request: ModelRequest) -> None:
        price = self.settings.price_for(f"{self.provider}/{model}")
        cost = pricing.usd(price, Usage(input_tokens=tokens)) + pricing.storage_usd(
            price, tokens, max(0.0, expires_at - time.time()))
        values: dict[str, Any] = {"name": name, "tokens": tokens, "expires_at": expires_at, "created_at": now()}
        engine = open_store(self.settings)
        try:
            with transaction(engine) as s:
                row = s.exec(select(ContextCache).where(ContextCache.provider == self.provider,
                                                        ContextCache.model == model,
                                                        ContextCache.fingerprint == key)).first()
                if row is None:
                    s.add(ContextCache(provider=self.provider, model=model, fingerprint=key, **values))
                else:
                    for field, value in values.items():
                        setattr(row, field, value)
                    s.add(row)
                s.add(ModelCall(request_hash=f"{ROLE}:{key}", role=ROLE, provider=self.provider, model=model,
                                item_id=request.item_id, run_id=request.run_id, purpose=request.purpose,
                                status="ok", input_tokens=tokens, usd=cost, finished_at=now(),
                                worker="context_cache"))
        except IntegrityError:  # another worker recorded its cache first: both are paid for, on the ledger
            with transaction(engine) as s:
                s.add(ModelCall(request_hash=f"{ROLE}:{key}", role=ROLE, provider=self.provider, model=model,
                                item_id=request.item_id, run_id=request.run_id, purpose=request.purpose,
                                status="ok", input_tokens=tokens, usd=cost, finished_at=now(),
                                worker="context_cache"))
