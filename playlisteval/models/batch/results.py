"""Batch answers into the store (issue 15): poll each sent batch whose time has come, store every answer
as it comes — one transaction each: the ledger row at the batch price, the reply in the response cache
under the request's own hash — and end the batch when its provider says it has ended (``settle`` in
models/batch.py releases what it left unanswered to the online path)."""

from __future__ import annotations

from sqlalchemy.engine import Engine
from sqlmodel import col, select

from playlisteval.config import Settings
from playlisteval.errors import ModelError, ProviderNotAvailable, TransientModelError
from playlisteval.models import pricing
from playlisteval.models.batch.api import FINAL, Backends, Polled, Result
from playlisteval.models.batch.lifecycle import _backoff, _note, _requests_of, settle
from playlisteval.models.request import ModelRequest, ModelResponse
from playlisteval.models.runner import Runner
from playlisteval.prompts.schemas import SCHEMAS
from playlisteval.store import transaction
from playlisteval.store.tables import ModelBatch, ModelBatchRequest, ModelCall, ResponseCache


def poll_open(settings: Settings, engine: Engine, backends: Backends, now: float) -> int:
    """Ask every sent batch whose time has come for its state and answers; store the answers; returns
    how many were stored now."""
    with transaction(engine) as s:
        due = s.exec(select(ModelBatch).where(ModelBatch.state == "submitted", ModelBatch.next_poll_at <= now)
                     .order_by(col(ModelBatch.id))).all()
    stored = 0
    for batch in due:
        batch_id = int(batch.id or 0)
        requests = _requests_of(engine, batch_id)  # answers already stored are skipped by store_result
        try:
            polled = backends.get(batch.provider).poll(batch.remote_id, requests)
        except TransientModelError as exc:
            _note(engine, batch_id, str(exc), now + _backoff(settings, batch.polls + 1, exc.retry_after))
            continue
        except ProviderNotAvailable as exc:  # no key or SDK in this process: the batch is not at fault
            _note(engine, batch_id, str(exc), now + settings.batch.poll_max_s)
            continue
        except ModelError as exc:  # the provider no longer knows it, or refuses to say
            settle(settings, engine, batch_id, "failed", str(exc), now)
            continue
        stored += _store_all(settings, engine, batch, polled, requests, now)
        if polled.state in FINAL:
            settle(settings, engine, batch_id, polled.state, polled.detail, now)
        else:
            with transaction(engine) as s:
                row = s.get(ModelBatch, batch_id)
                if row is not None:
                    row.polls += 1
                    row.next_poll_at = now + _backoff(settings, row.polls + 1)
                    row.error = ""
                    s.add(row)
    return stored


def _store_all(settings: Settings, engine: Engine, batch: ModelBatch, polled: Polled,
               requests: dict[str, ModelRequest], now: float) -> int:
    stored = 0
    for result in polled.results:
        request = requests.get(result.key)
        if request is not None and store_result(settings, engine, batch, result, request, now):
            stored += 1
    return stored


def store_result(settings: Settings, engine: Engine, batch: ModelBatch, result: Result, request: ModelRequest,
                 now: float) -> bool:
    """One answer (or one request's failure) in one transaction: the ledger row, the response cache,
    the request's state. False when it was already stored (a poll after a crash sees it again)."""
    spec = f"{batch.provider}/{batch.model}"
    reply = None if result.reply is None else result.reply.without_keys()  # as the runner's online replies
    schema = SCHEMAS[request.response_schema] if request.response_schema else None
    parsed, problem = (None, result.error or "no answer") if reply is None else Runner._parse(reply, schema)
    with transaction(engine) as s:
        row = s.exec(select(ModelBatchRequest).where(ModelBatchRequest.live_hash == result.key,
                                                     ModelBatchRequest.batch_id == batch.id)).first()
        if row is None or row.state != "submitted":
            return False
        call = s.get(ModelCall, row.call_id)
        if call is not None:
            call.finished_at, call.latency_s = now, max(0.0, now - (batch.submitted_at or now))
            if reply is None:
                call.status, call.usd, call.error = "error", 0.0, f"batch: {result.error}"[:1000]
            else:
                u = reply.usage
                call.status = "ok" if problem is None else "malformed"
                call.error = None if problem is None else problem
                call.usd = pricing.usd(settings.price_for(spec), u, batch=True)
                call.input_tokens, call.output_tokens, call.thinking_tokens = (u.input_tokens, u.output_tokens,
                                                                                u.thinking_tokens)
                call.cached_input_tokens, call.gpu_seconds = u.cached_input_tokens, u.gpu_seconds
            s.add(call)
        if reply is not None:
            # exactly what the runner caches online (Runner._store): a usable answer under the request's
            # hash; a malformed one, or any answer a semantic check still has to pass, as the request's
            # first try (``<hash>:try0``), which the runner replays — checked, and repaired (by the next
            # batch) with the same note and the same next request as online
            is_try = ":try" in result.key  # a repair (``<hash>:try<n>``) is cached as that try, whatever it says
            cache_key = result.key if is_try or (problem is None and not row.checked) else f"{result.key}:try0"
            response = ModelResponse(text=reply.text, parsed=parsed, usage=reply.usage,
                                     finish_reason=reply.finish_reason, raw=reply.raw,
                                     malformed=problem is not None, malformed_reason=problem,
                                     thinking=reply.thinking)
            if s.get(ResponseCache, cache_key) is None:
                s.add(ResponseCache(request_hash=cache_key, provider=batch.provider, model=batch.model,
                                    response=response.model_dump(exclude={"call_id", "cached", "usd"})))
        row.state = "done" if problem is None else "failed"
        row.error = "" if problem is None else (problem if reply is not None else result.error)[:1000]
        row.live_hash, row.finished_at = None, now
        s.add(row)
    return True
