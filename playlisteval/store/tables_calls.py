"""The store's tables of model calls: the ledger, the response cache, prompts, uploaded files, batches,
context caches and the spend totals (DESIGN "Data model"; re-exported by store/tables.py).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, Column, UniqueConstraint
from sqlmodel import Field

from playlisteval.store.table_base import StoreTable, now


class ModelCall(StoreTable, table=True):
    """The ledger: one row per model call, cache hits (0 USD) and failures included (SPEC K1)."""

    __tablename__ = "model_call"
    id: int | None = Field(default=None, primary_key=True)
    request_hash: str = Field(index=True)
    role: str = Field(index=True)
    provider: str
    model: str
    item_id: int | None = Field(default=None, index=True)
    run_id: int | None = None
    purpose: str = "build"  # build / eval / index
    status: str = Field(default="in_flight", index=True)  # in_flight / ok / cached / malformed / error / interrupted
    cache_hit: bool = False
    input_tokens: int = 0
    output_tokens: int = 0
    thinking_tokens: int = 0
    gpu_seconds: float = 0.0
    estimated_usd: float = 0.0
    usd: float = 0.0
    latency_s: float = 0.0
    # 0801 (issue 15): input tokens read from a provider's cache; the batch that answered the call (0: online)
    cached_input_tokens: int = 0
    batch_id: int = 0
    error: str | None = None
    worker: str | None = None
    created_at: float = Field(default_factory=now)
    finished_at: float | None = None


class ResponseCache(StoreTable, table=True):
    __tablename__ = "response_cache"
    request_hash: str = Field(primary_key=True)
    provider: str
    model: str
    response: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False))
    created_at: float = Field(default_factory=now)


class ModelPrompt(StoreTable, table=True):
    """What a request asked, once per request hash: its text parts, its media named (`show ITEM`)."""

    __tablename__ = "model_prompt"
    request_hash: str = Field(primary_key=True)
    role: str = ""
    text: str = ""
    created_at: float = Field(default_factory=now)


class RemoteFile(StoreTable, table=True):
    """Uploaded media (e.g. Gemini Files API) reused while it is valid."""

    __tablename__ = "remote_file"
    __table_args__ = (UniqueConstraint("provider", "fingerprint"),)
    id: int | None = Field(default=None, primary_key=True)
    provider: str
    fingerprint: str
    remote_name: str
    uri: str = ""
    expires_at: float | None = None


class ModelBatch(StoreTable, table=True):
    """One provider batch (issue 15), written before it is sent: its ``marker`` is the client-side
    idempotency key the provider stores with it (OpenAI metadata, Gemini display name), so a batch whose
    sending was interrupted is looked up by marker and adopted, never sent twice.

    state: pending (written, maybe sent) → submitted (remote id known) → completed / failed / expired /
    cancelled (its requests all settled)."""

    __tablename__ = "model_batch"
    id: int | None = Field(default=None, primary_key=True)
    marker: str = Field(unique=True)
    provider: str
    model: str
    state: str = Field(default="pending", index=True)
    remote_id: str = ""
    input_ref: str = ""  # the uploaded input file (OpenAI), reused if sending is retried
    requests: int = 0
    estimated_usd: float = 0.0
    polls: int = 0
    next_poll_at: float = 0.0
    error: str = ""
    created_at: float = Field(default_factory=now)
    submitted_at: float | None = None
    finished_at: float | None = None


class ContextCache(StoreTable, table=True):
    """A provider's context cache (issue 15): media sent once and read by later calls, until it expires."""

    __tablename__ = "context_cache"
    __table_args__ = (UniqueConstraint("provider", "model", "fingerprint"),)
    id: int | None = Field(default=None, primary_key=True)
    provider: str
    model: str
    fingerprint: str  # of the cached parts (media files by path, size and modification time)
    name: str  # the provider's name for it (Gemini: cachedContents/…)
    tokens: int = 0
    expires_at: float = 0.0
    created_at: float = Field(default_factory=now)


class ModelBatchRequest(StoreTable, table=True):
    """A request waiting for, or answered by, a batch. ``live_hash`` is the request hash while the request
    is queued or in a batch and NULL after, and it is unique: a request is in at most one live batch.

    state: queued → submitted → done (answer in the response cache and the ledger) / failed / expired
    (asked online by whoever needs it next)."""

    __tablename__ = "model_batch_request"
    id: int | None = Field(default=None, primary_key=True)
    request_hash: str = Field(index=True)
    live_hash: str | None = Field(default=None, unique=True)
    spec: str
    role: str = ""
    purpose: str = "build"
    request: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False))
    batch_id: int = Field(default=0, index=True)
    state: str = Field(default="queued", index=True)
    call_id: int = 0  # the ledger row reserved when the batch was written
    error: str = ""
    created_at: float = Field(default_factory=now)
    finished_at: float | None = None
    checked: bool = False  # 0802: the caller checks the reply's meaning (``validate``): its answer waits as try 0


class SpendTotal(StoreTable, table=True):
    """The ledger's money per purpose, kept by triggers on ``model_call`` (store/spend_totals.py, 0540) in
    the transaction of every ledger change: a budget check reads one row instead of summing the ledger.
    The columns are ``models.budget.Spend``'s: paid, reserved (in flight), interrupted (cut short, cost unknown)."""

    __tablename__ = "spend_total"
    purpose: str = Field(primary_key=True)
    paid: float = 0.0
    reserved: float = 0.0
    interrupted: float = 0.0
