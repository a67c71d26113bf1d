"""What a provider is: a thin translator from ModelRequest to one SDK call and back (DESIGN 6).

A provider raises TransientModelError (with ``retry_after`` when the server said) for 429/5xx/
timeouts, PermanentModelError for anything not worth retrying, and ProviderNotAvailable when its
SDK or key is missing. It never retries, caches, rate-limits or records cost: the runner does.
"""

from __future__ import annotations

from typing import Protocol

from pydantic import BaseModel

from playlisteval.models.request import ModelRequest, ProviderReply


class Provider(Protocol):
    name: str

    def complete(
        self, model: str, request: ModelRequest, schema: type[BaseModel] | None, timeout: float
    ) -> ProviderReply:
        """Run one request against ``model`` and return its raw reply."""
        ...
