"""The crash-safe batch lifecycle (issue 15): requests whose answer can wait go to a provider's batch API.

How a request travels, each step one short transaction in the store (the source of truth):

1. **queued** — the runner's ``defer`` hook (``Collector.defer``) meets a request of a batched role that is
   not in the response cache: it records the request (its hash made *live*: unique, so a request is in
   at most one live batch) and raises ``Deferred``; the caller skips it for now.
2. **written** — ``write_batches`` gathers queued requests per model into batches within the provider's
   limits and writes each batch row (``state = pending``, a fresh client-side ``marker``) with one ledger
   row per request reserved at the batch price — the budget is checked here — *before* anything is sent.
3. **sent** — ``send_pending`` counts a send, then sends. A batch that may have been sent before (a crash
   between send and record, a timeout) is first looked up by its marker at the provider and adopted:
   the same requests are never sent twice. A 429 leaves it pending, tried again after a backoff.
4. **answered** — ``poll_open`` (models/batch_results.py) asks each sent batch for its state (backoff
   between polls) and stores every answer as it comes, one transaction each: the ledger row finished at
   the batch price, the reply in the response cache under the request's own hash — so the runner later
   answers that request from the cache exactly as it would an online answer. A malformed reply, or one
   the caller's semantic check must pass, waits as the request's first try (``<hash>:try0``): the
   runner replays, checks and repairs it as it does online. A request the batch failed and whatever an
   expired or failed batch left unanswered are released to the online path.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterable

from sqlalchemy import update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select

from playlisteval.config import Settings
from playlisteval.errors import BudgetExceeded, ModelError, ProviderNotAvailable, TransientModelError
from playlisteval.logs import get_logger
from playlisteval.models import pricing
from playlisteval.models.batch.api import Backends, Encoded, has_batch_api
from playlisteval.models.batch.listing import LIVE
from playlisteval.models.budget import budget_usd
from playlisteval.models.registry import split_spec
from playlisteval.models.request import ModelRequest
from playlisteval.models.runner import _spent
from playlisteval.store import transaction
from playlisteval.store.tables import ModelBatch, ModelBatchRequest, ModelCall

log = get_logger(__name__)


class Deferred(Exception):
    """Not an error: the request waits for a batch. The caller skips it and asks again later."""

    def __init__(self, key: str) -> None:
        super().__init__(f"request {key[:12]} waits for a batch")
        self.key = key


class Collector:
    """The runner's ``defer`` hook for the roles that go by batch (``runner.defer = collector.defer``)."""

    def __init__(self, settings: Settings, engine: Engine, roles: Iterable[str]) -> None:
        self.settings, self.engine = settings, engine
        self.roles = frozenset(roles)
        self.deferred = 0

    def wants(self, spec: str, request: ModelRequest) -> bool:
        """A batched role, on a provider with a batch API, at a batch price (else waiting buys nothing)."""
        return (request.role in self.roles and has_batch_api(split_spec(spec)[0])
                and pricing.batchable(self.settings.price_for(spec)))

    def defer(self, key: str, spec: str, request: ModelRequest, checked: bool = False) -> None:
        """Raise Deferred while ``request`` is (now) queued or in a live batch; return when it goes to the
        runner's online path: not a batched role, or a batch has settled it — its reply then waits in the
        cache as the first try when it was malformed or ``checked`` (a semantic check the runner runs)."""
        if not self.wants(spec, request):
            return
        try:
            with transaction(self.engine) as s:
                rows = s.exec(select(ModelBatchRequest).where(ModelBatchRequest.request_hash == key)).all()
                if not any(r.live_hash for r in rows):
                    if rows:
                        return  # a batch settled it without an answer in the cache: ask online
                    s.add(ModelBatchRequest(request_hash=key, live_hash=key, spec=spec, role=request.role,
                                            purpose=request.purpose, request=request.model_dump(mode="json"),
                                            checked=checked))
        except IntegrityError:
            pass  # another worker queued it at the same moment: it is live either way
        self.deferred += 1
        raise Deferred(key)


def _ledger_row(key: str, spec: str, request: ModelRequest, estimate: float, batch_id: int) -> ModelCall:
    provider, model = split_spec(spec)
    return ModelCall(request_hash=key, role=request.role, provider=provider, model=model, item_id=request.item_id,
                     run_id=request.run_id, purpose=request.purpose, status="in_flight", estimated_usd=estimate,
                     batch_id=batch_id, worker=f"batch:{batch_id}")


def _chunks(encoded: list[Encoded], max_requests: int, max_bytes: int) -> list[list[Encoded]]:
    out: list[list[Encoded]] = []
    size = 0
    for e in encoded:
        if not out or len(out[-1]) >= max_requests or (out[-1] and size + e.size > max_bytes):
            out.append([])
            size = 0
        out[-1].append(e)
        size += e.size
    return out


def write_batches(settings: Settings, engine: Engine, backends: Backends, now: float) -> dict[int, list[Encoded]]:
    """Queued requests → batch rows (pending) with their ledger rows reserved; returns the encoded requests
    of each new batch, ready to send. Raises BudgetExceeded when a batch would pass its purpose's budget
    (the requests stay queued)."""
    with transaction(engine) as s:
        queued = s.exec(select(ModelBatchRequest).where(ModelBatchRequest.state == "queued",
                                                        ModelBatchRequest.batch_id == 0)
                        .order_by(col(ModelBatchRequest.id))).all()
    by_spec: dict[str, list[ModelBatchRequest]] = defaultdict(list)
    for row in queued:
        by_spec[row.spec].append(row)
    cfg = settings.batch
    written: dict[int, list[Encoded]] = {}
    for spec, rows in by_spec.items():
        provider, model = split_spec(spec)
        backend = backends.get(provider)
        requests = {r.request_hash: ModelRequest.model_validate(r.request) for r in rows}
        encoded = [backend.encode(model, key, req) for key, req in requests.items()]  # may upload media
        max_n, max_bytes = backend.limits()
        price = settings.price_for(spec)
        for chunk in _chunks(encoded, min(max_n, cfg.max_requests), min(max_bytes, int(cfg.max_mb * 1e6))):
            with transaction(engine) as s:
                batch = ModelBatch(marker=f"playlisteval-{uuid.uuid4().hex}", provider=provider, model=model,
                                   next_poll_at=now)
                s.add(batch)
                s.flush()
                batch_id = int(batch.id or 0)
                taken: list[Encoded] = []
                spent: dict[str, float] = {}
                for e in chunk:
                    request = requests[e.key]
                    claimed = s.execute(update(ModelBatchRequest).where(
                        col(ModelBatchRequest.live_hash) == e.key, col(ModelBatchRequest.state) == "queued",
                        col(ModelBatchRequest.batch_id) == 0).values(batch_id=batch_id))
                    if not getattr(claimed, "rowcount", 0):
                        continue  # another process took it into its own batch
                    estimate = pricing.usd(price, pricing.estimate_usage(request), batch=True)
                    budget = budget_usd(s, settings, request.purpose)
                    if budget > 0:
                        spent.setdefault(request.purpose, _spent(s, request.purpose))
                        if spent[request.purpose] + estimate > budget:
                            raise BudgetExceeded(spent[request.purpose], estimate, budget)
                        spent[request.purpose] += estimate
                    call = _ledger_row(e.key, spec, request, estimate, batch_id)
                    s.add(call)
                    s.flush()
                    s.execute(update(ModelBatchRequest).where(col(ModelBatchRequest.live_hash) == e.key)
                              .values(call_id=int(call.id or 0)))
                    batch.estimated_usd += estimate
                    taken.append(e)
                batch.requests = len(taken)
                if not taken:
                    s.delete(batch)
                    continue
                s.add(batch)
            written[batch_id] = taken
            log.info("batch.written", batch=batch_id, spec=spec, requests=len(taken))
    return written


def _backoff(settings: Settings, tries: int, retry_after: float | None = None) -> float:
    cfg = settings.batch
    wait = min(cfg.poll_max_s, cfg.poll_s * 2 ** max(0, tries - 1))
    return max(wait, retry_after or 0.0)


def _requests_of(engine: Engine, batch_id: int, state: str | None = None) -> dict[str, ModelRequest]:
    """A batch's requests in the order they were sent (all of them, or those in ``state``)."""
    query = select(ModelBatchRequest).where(ModelBatchRequest.batch_id == batch_id)
    if state is not None:
        query = query.where(ModelBatchRequest.state == state)
    with transaction(engine) as s:
        rows = s.exec(query.order_by(col(ModelBatchRequest.id))).all()
    return {r.request_hash: ModelRequest.model_validate(r.request) for r in rows}


def send_pending(settings: Settings, engine: Engine, backends: Backends, now: float,
                 encoded: dict[int, list[Encoded]] | None = None) -> int:
    """Send every pending batch whose time has come; returns how many reached their provider."""
    with transaction(engine) as s:
        pending = s.exec(select(ModelBatch).where(ModelBatch.state == "pending", ModelBatch.next_poll_at <= now)
                         .order_by(col(ModelBatch.id))).all()
    sent = 0
    for batch in pending:
        batch_id = int(batch.id or 0)
        backend = backends.get(batch.provider)
        with transaction(engine) as s:  # counted before sending: a later look will ask the provider first
            row = s.get(ModelBatch, batch_id)
            if row is None or row.state != "pending":
                continue
            tries = row.polls
            row.polls += 1
            s.add(row)
        try:
            remote = backend.find(batch.marker) if tries else None
            if remote is None:
                payload = (encoded or {}).get(batch_id)
                if payload is None:
                    requests = _requests_of(engine, batch_id, "queued")
                    payload = [backend.encode(batch.model, k, r) for k, r in requests.items()]
                remote = backend.submit(batch.model, batch.marker, payload)
            else:
                log.info("batch.adopted", batch=batch_id, remote=remote)
        except TransientModelError as exc:
            _note(engine, batch_id, str(exc), now + _backoff(settings, tries + 1, exc.retry_after))
            continue
        except ProviderNotAvailable as exc:  # no key or SDK in this process: another run will send it
            _note(engine, batch_id, str(exc), now + settings.batch.poll_max_s)
            continue
        except BudgetExceeded as exc:  # the provider's quota: nothing more goes out now
            _note(engine, batch_id, str(exc), now + settings.batch.poll_max_s)
            raise
        except ModelError as exc:
            settle(settings, engine, batch_id, "failed", f"not accepted: {exc}", now)
            continue
        with transaction(engine) as s:
            row = s.get(ModelBatch, batch_id)
            if row is None:
                continue
            row.state, row.remote_id, row.submitted_at, row.error = "submitted", remote, now, ""
            row.polls, row.next_poll_at = 0, now + settings.batch.poll_s
            s.add(row)
            s.execute(update(ModelBatchRequest).where(col(ModelBatchRequest.batch_id) == batch_id,
                                                      col(ModelBatchRequest.state) == "queued")
                      .values(state="submitted"))
        sent += 1
        log.info("batch.sent", batch=batch_id, remote=remote, requests=batch.requests)
    return sent


def _note(engine: Engine, batch_id: int, error: str, next_at: float) -> None:
    with transaction(engine) as s:
        row = s.get(ModelBatch, batch_id)
        if row is not None:
            row.error, row.next_poll_at = error[:500], next_at
            s.add(row)


def settle(settings: Settings, engine: Engine, batch_id: int, state: str, detail: str, now: float) -> int:
    """End a batch in ``state``: every request it left unanswered is released to the online path (its
    reserved ledger row closed as an unpaid error). Returns how many were released."""
    with transaction(engine) as s:
        batch = s.get(ModelBatch, batch_id)
        if batch is None:
            return 0
        rows = s.exec(select(ModelBatchRequest).where(ModelBatchRequest.batch_id == batch_id,
                                                      col(ModelBatchRequest.state).in_(LIVE))).all()
        why = f"batch {state}" + (f": {detail}" if detail else "")
        for row in rows:
            row.state = "expired" if state == "expired" else "failed"
            row.error, row.live_hash, row.finished_at = why[:1000], None, now
            s.add(row)
            call = s.get(ModelCall, row.call_id)
            if call is not None and call.status == "in_flight":
                call.status, call.usd, call.error, call.finished_at = "error", 0.0, why[:1000], now
                s.add(call)
        batch.state, batch.error, batch.finished_at = state, detail[:500], now
        s.add(batch)
    if rows:
        log.warning("batch.released", batch=batch_id, state=state, requests=len(rows), detail=detail[:200])
    return len(rows)
