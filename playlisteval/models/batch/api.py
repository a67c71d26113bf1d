"""What a provider's batch API must offer the batch lifecycle (issue 15), and which providers have one.

A backend is as thin as a provider (DESIGN 6): it turns stored requests into its API's batch input,
sends a batch under a client-side ``marker`` the API keeps (OpenAI: batch metadata and the input file's
name; Gemini: the batch's display name; sim: a file name), finds a batch by that marker, and reads a
batch's state and whatever answers it has. It never touches the store: ``models/batch.py`` does.

Errors are the runner's: TransientModelError (429 on submit, 5xx, timeouts: sent again later, after the
marker was looked up), PermanentModelError (the batch can never be sent: its requests go online),
QuotaExhausted (stop and pause).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from playlisteval.config import Settings
from playlisteval.models.registry import Registry
from playlisteval.models.request import ModelRequest, ProviderReply

#: a batch's state as the lifecycle sees it; "running" is the only one that is not final
RUNNING, COMPLETED, FAILED, EXPIRED, CANCELLED = "running", "completed", "failed", "expired", "cancelled"
FINAL = (COMPLETED, FAILED, EXPIRED, CANCELLED)


@dataclass(frozen=True)
class Encoded:
    """One request as the provider's batch input: ``size`` bytes counted against the batch's limit."""

    key: str  # the request hash: the request's id inside the batch (custom_id / metadata)
    payload: Any
    size: int


@dataclass(frozen=True)
class Result:
    key: str
    reply: ProviderReply | None = None
    error: str = ""  # why this request has no answer (it goes back to the online path)


@dataclass
class Polled:
    state: str  # RUNNING or one of FINAL
    results: list[Result] = field(default_factory=list)  # answers and per-request errors known so far
    detail: str = ""  # the provider's word on a failed / expired batch


class BatchBackend(Protocol):
    name: str

    def limits(self) -> tuple[int, int]:
        """(requests, bytes) one batch may hold."""
        ...

    def encode(self, model: str, key: str, request: ModelRequest) -> Encoded: ...

    def find(self, marker: str) -> str | None:
        """The remote id of a batch sent with ``marker``, or None when there is none."""
        ...

    def submit(self, model: str, marker: str, batch: list[Encoded]) -> str:
        """Send one batch; return its remote id."""
        ...

    def poll(self, remote_id: str, requests: dict[str, ModelRequest]) -> Polled: ...


_BACKENDS = {"openai": ("playlisteval.models.batch.openai", "OpenAIBatch"),
             # DashScope speaks OpenAI's Batch API (files with purpose "batch", /batches, a 24 h window)
             "qwen": ("playlisteval.models.batch.openai", "OpenAIBatch"),
             "gemini": ("playlisteval.models.batch.gemini", "GeminiBatch"),
             "sim": ("playlisteval.world.sim.batch", "SimBatch")}


def has_batch_api(provider: str) -> bool:
    return provider in _BACKENDS


class Backends:
    """One backend per provider per process, over the registry's provider instances (their clients)."""

    def __init__(self, settings: Settings, registry: Registry | None = None) -> None:
        self.settings = settings
        self.registry = registry or Registry(settings)
        self._made: dict[str, BatchBackend] = {}

    def register(self, backend: BatchBackend) -> None:
        self._made[backend.name] = backend

    def get(self, provider: str) -> BatchBackend:
        if provider not in self._made:
            import importlib

            module, cls = _BACKENDS[provider]
            made: BatchBackend = getattr(importlib.import_module(module), cls)(
                self.settings, self.registry.get(provider))
            made.name = provider  # one class may serve several providers (OpenAI's protocol: openai, qwen)
            self._made[provider] = made
        return self._made[provider]
