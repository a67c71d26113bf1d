"""The one place a model is called (DESIGN 3–6): cache, budget, ledger, retries, rate limits, parsing.

For each request: a cache hit returns the stored answer (ledger row, 0 USD). Otherwise, before every
paid try, one short transaction checks the budget and reserves a ledger row with the estimated cost;
the try's actual usage and cost replace the estimate when it ends. A call that is answered at its first
try takes two store transactions: cache look-up + reservation, then the closed ledger row + the cached
answer (issue 13); the budget check reads a running total (store/spend_totals.py), not the ledger.
Transient errors are retried with exponential backoff and jitter that honours Retry-After; malformed
output is retried with a repair note a bounded number of times, then returned as ``malformed`` for the
caller to reject on. The answer is cached before the caller moves the item, so a crash after the call
costs nothing on resume.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError
from sqlalchemy import func, text
from sqlalchemy.engine import Engine
from sqlmodel import col, select

from playlisteval.config import Settings
from playlisteval.errors import (
    BudgetExceeded,
    InfrastructureError,
    PermanentModelError,
    ProviderDown,
    TransientModelError,
)
from playlisteval.logs import get_logger
from playlisteval.models import ledger, pricing
from playlisteval.models.budget import Spend, budget_usd
from playlisteval.models.failstreak import STREAK
from playlisteval.models.ratelimit import RateLimits
from playlisteval.models.registry import Registry, split_spec
from playlisteval.models.request import (
    ModelRequest,
    ModelResponse,
    ProviderReply,
    TextPart,
    Usage,
    without_keys,
)
from playlisteval.models.request_keys import extract_json, prompt_text, request_hash, with_role_generation
from playlisteval.prompts.schemas import SCHEMAS
from playlisteval.store import identity, kept, spend_totals
from playlisteval.store.engine import read
from playlisteval.store.tables import ModelCall, now

log = get_logger(__name__)

_BUDGET_LOCK = 0x706C6576  # the advisory lock that serializes budget reservations on PostgreSQL
_REQUEST_LOCKS = 0x7065  # the class of the per-request advisory locks (two-key form: its own key space)
_PAID_DONE = ("ok", "malformed", "error")
_PAID_OPEN = ("in_flight", "interrupted")


def spend_of(session: Any, purpose: str, exclude_hash: str | None = None) -> Spend:
    """The purpose's ``Spend``; ``exclude_hash``: the open rows of that request are left out."""
    paid = session.exec(
        select(func.coalesce(func.sum(ModelCall.usd), 0.0)).where(
            ModelCall.purpose == purpose, col(ModelCall.status).in_((*_PAID_DONE, "interrupted"))
        )
    ).one()
    opened = {}
    for status, finished_late in (("in_flight", None), ("interrupted", False)):
        query = select(func.coalesce(func.sum(ModelCall.estimated_usd), 0.0)).where(
            ModelCall.purpose == purpose, ModelCall.status == status)
        if finished_late is False:  # a cut-short call that never finished: its cost is unknown
            query = query.where(col(ModelCall.latency_s) == 0)
        if exclude_hash is not None:
            query = query.where(ModelCall.request_hash != exclude_hash)
        opened[status] = float(session.exec(query).one())
    return Spend(paid=float(paid), reserved=opened["in_flight"], interrupted=opened["interrupted"])


def _spent(session: Any, purpose: str, exclude_hash: str | None = None) -> float:
    """Money spent or committed, as the budget counts it (``Spend.committed``): the purpose's running
    total (one row, kept by triggers in every ledger change's transaction), not a sum over the ledger."""
    return spend_totals.committed(session, purpose, exclude_hash)


class Runner:
    #: set by models/batch.py (``Collector.defer``): called on a cache miss with whether a ``validate`` check
    #: follows; raises ``Deferred`` while the request waits for a batch, returns when it is to be asked
    #: online (a batch's reply to a checked request waits as the request's first try, ``<key>:try0``)
    defer: Callable[[str, str, ModelRequest, bool], None] | None = None

    def __init__(
        self,
        settings: Settings,
        engine: Engine,
        *,
        registry: Registry | None = None,
        rate_limits: RateLimits | None = None,
        sleep: Callable[[float], None] = time.sleep,
        worker: str | None = None,
    ) -> None:
        self.settings = settings
        self.engine = engine
        self.registry = registry or Registry(settings)
        self.sleep = sleep
        self.worker = worker or identity.this_process()  # host:pid:place.nonce (issue 44)
        self.rate_limits = rate_limits or RateLimits(settings, owner=self.worker)
        self._rng = random.Random()

    # -- public ----------------------------------------------------------------------------------
    def call(self, request: ModelRequest, model: str | None = None,
             validate: Callable[[dict[str, Any]], str | None] | None = None) -> ModelResponse:
        """``validate``, when given, checks a schema-valid reply's meaning (e.g. a ranking is a permutation)
        and returns a problem or None: a reply with a problem is repaired and re-asked like malformed JSON."""
        spec = model or self.settings.model_for(request.role)
        provider_name, model_name = split_spec(spec)
        request = with_role_generation(self.settings, request)  # [models] per-role settings, in the hash too
        key = request_hash(spec, request)
        try:
            provider = self.registry.get(provider_name)
        except Exception:  # a cached answer needs no provider
            cached = self._cached(key, spec, request)
            if cached is not None:
                return cached
            raise
        schema = SCHEMAS[request.response_schema] if request.response_schema else None
        price = self.settings.price_for(spec)
        # a malformed try that is repaired is cached under a key of its own (``<key>:try<n>``): after a
        # kill or a budget pause in the middle of repairs, the tries already paid for are replayed
        first: int | None = None  # the first try's ledger row, reserved with the cache look-up
        if self.defer is None:
            opened = self._open(key, spec, request, pricing.usd(price, self._reservation_usage(request)))
            if isinstance(opened, ModelResponse):
                return opened
            tried, first = opened
        else:  # batched roles: the collector decides between the look-up and the reservation
            cached = self._cached(key, spec, request)
            if cached is not None:
                return cached
            self.defer(key, spec, request, validate is not None)
            tried = self._cached_tries(key)
        total = Usage()
        repair_note: str | None = None
        malformed_reason: str | None = None
        transient_tries = 0
        malformed_tries = 0
        while True:
            attempt_request = request if repair_note is None else request.model_copy(
                update={"parts": [*request.parts, TextPart(text=repair_note)]}
            )
            try_key = f"{key}:try{malformed_tries}"
            replay = self._cached(try_key, spec, request) if try_key in tried else None
            if replay is not None:
                reply = ProviderReply(text=replay.text, usage=replay.usage, finish_reason=replay.finish_reason,
                                      raw=replay.raw, tool_calls=replay.tool_calls, thinking=replay.thinking)
                call_id, cost, started = int(replay.call_id or 0), 0.0, time.monotonic()
            else:
                if self.defer is not None and malformed_tries:  # a repair goes by batch too, as its own try
                    self.defer(try_key, spec, attempt_request, True)
                estimate = pricing.usd(price, self._reservation_usage(attempt_request))
                reserved, first = (first, None) if first is not None else (
                    self._reserve(key, spec, request, estimate), None)
                if reserved is None:  # answered meanwhile by the worker that had this step before us
                    answered = self._cached(key, spec, request)
                    if answered is not None:
                        return answered
                    reserved = self._reserve(key, spec, request, estimate, recheck=False)
                assert reserved is not None
                call_id = reserved
                started = time.monotonic()
                counted: tuple[str, int] | None = None  # how the try's failure was counted (models/failstreak.py)
                try:
                    with self.rate_limits.slot(provider_name, estimate_tokens=pricing.estimate_usage(request)):
                        # the ledger's latency is the call's, not its wait for a slot: its intervals are the
                        # calls in flight (`status --watch`, a judge run's summary: issue 43)
                        started = time.monotonic()
                        STREAK.check(provider_name, self.settings.runner.stop_after_same_failures)
                        try:
                            reply = provider.complete(model_name, attempt_request, schema,
                                                      self.settings.runner.timeout_s)
                        except (TransientModelError, PermanentModelError) as exc:
                            counted = STREAK.record(provider_name, exc)  # before the slot frees (issue 43)
                            raise
                except TransientModelError as exc:
                    self._finish(call_id, "error", Usage(), 0.0, started, error=str(exc))
                    STREAK.failed(provider_name, exc, self.settings.runner.stop_after_same_failures, counted)
                    transient_tries += 1
                    if transient_tries >= self.settings.runner.max_attempts:
                        raise
                    self.sleep(self._backoff(transient_tries, exc.retry_after))
                    continue
                except (PermanentModelError, BudgetExceeded) as exc:  # BudgetExceeded: a provider's QuotaExhausted
                    self._finish(call_id, "error", Usage(), 0.0, started, error=str(exc))
                    if isinstance(exc, PermanentModelError):
                        STREAK.failed(provider_name, exc, self.settings.runner.stop_after_same_failures, counted)
                    raise
                except ProviderDown as exc:  # not sent: the provider failed alike while this try waited
                    self._finish(call_id, "error", Usage(), 0.0, started, error=f"not sent: {exc}")
                    raise
                except InfrastructureError as exc:  # Redis failed before the request was sent: no model error
                    self._finish(call_id, "error", Usage(), 0.0, started, error=f"not sent: {exc}")
                    raise
                except Exception as exc:  # a provider bug is permanent for this call, and on the ledger
                    self._finish(call_id, "error", Usage(), 0.0, started, error=f"{type(exc).__name__}: {exc}")
                    raise PermanentModelError(f"{spec}: {type(exc).__name__}: {exc}") from exc
                cost = pricing.usd(price, reply.usage)
                STREAK.ok(provider_name)
                # a key quoted in a normal reply (a gateway's notice, issue 44) is hidden here, once, before
                # the reply is parsed, cached, returned and so stored by any caller (judgments, answers)
                reply = reply.without_keys()
            total = _add(total, reply.usage)
            parsed, problem = self._parse(reply, schema)
            if problem is None and validate is not None and parsed is not None:
                problem = validate(parsed)
            closing: tuple[str, Usage, float, float, str | None] | None
            if problem is None:
                closing = None if replay is not None else ("ok", reply.usage, cost, started, None)
                return self._store(key, spec, reply, parsed, total, call_id, None, closing)
            malformed_tries += 1
            malformed_reason = problem
            closing = None if replay is not None else ("malformed", reply.usage, cost, started, problem)
            if malformed_tries > self.settings.build.malformed_retries:
                return self._store(key, spec, reply, None, total, call_id, malformed_reason, closing)
            if replay is None:
                self._store(try_key, spec, reply, None, reply.usage, call_id, problem, closing)
            repair_note = (
                "Your previous reply could not be used: "
                f"{problem[:300]}. Reply again with only the JSON object the schema asks for."
            )

    # -- steps -----------------------------------------------------------------------------------
    def _reservation_usage(self, request: ModelRequest) -> Usage:
        """What a call is reserved at before the budget lets it go: the input estimate, and the largest of
        the flat output guess, the role's expected output (``[estimate] output_tokens``, the same figures
        `cost estimate` uses) and the request's own output cap. A reservation below what a call costs
        lets concurrent calls pass the cap together (the fault suite saw $0.43 spent of $0.40)."""
        usage = pricing.estimate_usage(request)
        expected = self.settings.estimate.output_tokens.get(request.role, 0)
        output = max(usage.output_tokens, expected, request.settings.max_output_tokens or 0)
        return usage.model_copy(update={"output_tokens": output})

    def _open(self, key: str, spec: str, request: ModelRequest,
              estimate: float) -> ModelResponse | tuple[set[str], int | None]:
        """The cache look-up and the first try's reservation in one transaction: the cached answer, or
        (the repaired tries stored earlier, the reserved ledger row; None when try 0 is to be replayed)."""
        with kept.begin(self.engine) as s:  # a connection: no ORM session needed
            _lock_request(s, key)
            answer, tried = ledger.lookup(s, key)
            hit = self._hit_in(s, key, spec, request, answer) if answer is not None else None
            if hit is not None:
                return hit
            if f"{key}:try0" in tried:
                return tried, None
            return tried, self._reserve_in(s, key, spec, request, estimate)

    def _cached_tries(self, key: str) -> set[str]:
        """The cache keys of ``key``'s repaired tries that an earlier, interrupted call stored."""
        with read(self.engine) as s:
            return _tries_in(s.connection(), key)

    def _cached(self, key: str, spec: str, request: ModelRequest) -> ModelResponse | None:
        with kept.begin(self.engine) as s:
            return self._hit_in(s, key, spec, request)

    def _hit_in(self, s: Any, key: str, spec: str, request: ModelRequest,
                hit: dict[str, Any] | None = None) -> ModelResponse | None:
        """The cached answer to ``key`` (``hit``: already read) with its ledger row (0 USD) added, or None
        (in the caller's transaction)."""
        hit = hit if hit is not None else ledger.cached_response(s, key)
        if hit is None:
            return None
        provider, model = split_spec(spec)
        call_id = ledger.add_call(
            s, request_hash=key, role=request.role, provider=provider, model=model, item_id=request.item_id,
            run_id=request.run_id, purpose=request.purpose, status="cached", cache_hit=True, worker=self.worker,
            finished_at=now())
        response = ModelResponse.model_validate(without_keys(hit))  # a row cached before issue 44 too
        response.cached, response.call_id, response.usd = True, call_id, 0.0
        log.debug("model.cache_hit", role=request.role, spec=spec)
        return response

    def _reserve(self, key: str, spec: str, request: ModelRequest, estimate: float, recheck: bool = True) -> int | None:
        """A ledger row for one try, within the budget; None if the answer was cached since we looked (a
        step taken over from a worker that was judged dead but finished its call: not asked twice)."""
        with kept.begin(self.engine) as s:
            _lock_request(s, key)
            if recheck and ledger.is_cached(s, key):
                return None
            return self._reserve_in(s, key, spec, request, estimate)

    def _reserve_in(self, s: Any, key: str, spec: str, request: ModelRequest, estimate: float) -> int:
        """Check the budget and reserve the try's ledger row (in the caller's transaction)."""
        provider, model = split_spec(spec)
        budget = budget_usd(s, self.settings, request.purpose)  # build, select and eval: each its own
        if budget > 0:
            if ledger.dialect(s) == "postgresql":
                # SQLite serializes this transaction (BEGIN IMMEDIATE); PostgreSQL's read committed
                # would let two workers read the same spend and both reserve the last dollars
                s.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _BUDGET_LOCK})
            # an open row for this very request is the one being replaced: not counted twice
            spent = _spent(s, request.purpose, exclude_hash=key)
            if spent + estimate > budget:
                raise BudgetExceeded(spent, estimate, budget)
        ledger.mark_interrupted(s, key)  # an in-flight row of this request: its worker died mid-call
        call_id = ledger.add_call(
            s, request_hash=key, role=request.role, provider=provider, model=model, item_id=request.item_id,
            run_id=request.run_id, purpose=request.purpose, status="in_flight", estimated_usd=estimate,
            worker=self.worker)
        ledger.keep_prompt(s, key, request.role, prompt_text(request))  # once per request, for `show ITEM`
        return call_id

    def _finish(
        self, call_id: int, status: str, usage: Usage, cost: float, started: float, error: str | None = None
    ) -> None:
        with kept.begin(self.engine) as s:
            ledger.finish(s, call_id, status, usage, cost, started, error)

    @staticmethod  # models/batch.py parses a batched reply with it: a problem's words become the repair note
    def _parse(reply: ProviderReply, schema: Any) -> tuple[dict[str, Any] | None, str | None]:
        if schema is None:
            return None, None
        try:
            data = extract_json(reply.answer)  # never an object from the thinking (models/reasoning.py)
            return schema.model_validate(data).model_dump(), None
        except (ValueError, ValidationError) as exc:
            snippet = reply.text.strip().replace("\n", " ")[:80]
            return None, f"{type(exc).__name__}: {str(exc)[:400]} (reply began: {snippet!r})"

    def _store(
        self, key: str, spec: str, reply: ProviderReply, parsed: dict[str, Any] | None, usage: Usage,
        call_id: int, malformed_reason: str | None, finish: tuple[str, Usage, float, float, str | None] | None = None,
    ) -> ModelResponse:
        response = ModelResponse(
            text=reply.text, parsed=parsed, usage=usage, finish_reason=reply.finish_reason, raw=reply.raw,
            malformed=malformed_reason is not None, malformed_reason=malformed_reason, call_id=call_id,
            tool_calls=reply.tool_calls, thinking=reply.thinking,
        )
        provider, model = split_spec(spec)
        with kept.begin(self.engine) as s:
            _lock_request(s, key)
            # the ledger row closes with the cache row: a kill between the two would leave an answer paid for
            # and not cached, and paid again
            usd = ledger.finish(s, call_id, *finish) if finish is not None else ledger.usd_of(s, call_id)
            ledger.keep_response(s, key, provider, model, response.model_dump(exclude={"call_id", "cached", "usd"}))
            response.usd = float(usd) if usd is not None else 0.0
        return response

    def _backoff(self, tries: int, retry_after: float | None) -> float:
        cfg = self.settings.runner
        wait = min(cfg.backoff_max_s, cfg.backoff_base_s * 2 ** (tries - 1))
        wait = wait / 2 + self._rng.uniform(0, wait / 2)  # jitter: workers that failed together spread out
        if retry_after is not None:
            wait = max(wait, min(retry_after, cfg.backoff_max_s * 10))
        return wait


def _lock_request(s: Any, key: str) -> None:
    """On PostgreSQL, a transaction lock per request (its repaired tries included): a look-up and the
    reservation that follows it, and the storing of an answer, never interleave, as they cannot on SQLite
    (BEGIN IMMEDIATE). Without it, read committed would let a worker judged dead store its answer between
    the new holder's look-up and its reservation, and the request would be paid twice."""
    if ledger.dialect(s) == "postgresql":
        s.execute(text("SELECT pg_advisory_xact_lock(:c, hashtext(:k))"),
                  {"c": _REQUEST_LOCKS, "k": key.split(":try", 1)[0]})


def _add(a: Usage, b: Usage) -> Usage:
    return Usage(
        input_tokens=a.input_tokens + b.input_tokens,
        cached_input_tokens=a.cached_input_tokens + b.cached_input_tokens,
        output_tokens=a.output_tokens + b.output_tokens,
        thinking_tokens=a.thinking_tokens + b.thinking_tokens,
        gpu_seconds=a.gpu_seconds + b.gpu_seconds,
        cpu_seconds=a.cpu_seconds + b.cpu_seconds,
    )


def _tries_in(s: Any, key: str) -> set[str]:
    return ledger.keys_between(s, f"{key}:try", f"{key}:tryz")
