"""What a call costs (SPEC K1): tokens × the price table, or GPU-seconds × the GPU-hour price.

Three discounts are applied here and nowhere else (issue 15):
- input tokens a provider read from a cache (``Usage.cached_input_tokens``: Gemini's context cache and
  implicit hits, OpenAI's prompt caching as its usage reports it) cost ``Price.cached_input`` instead of
  ``Price.input``; a model with no cached-input price pays the full input price for them;
- a call answered through a batch API costs ``1 − batch_discount`` of its token price, except its cached
  input, which keeps the cached-input price (no provider promises both discounts at once: counting
  only one keeps the ledger from under-charging);
- a context cache's storage costs ``cache_storage`` per 1M tokens per hour it lives (``storage_usd``).
GPU time is never discounted: local models have no batch price.
"""

from __future__ import annotations

from playlisteval.config import Price
from playlisteval.models.request import ImagePart, ModelRequest, TextPart, Usage, VideoPart

# Rough token counts for estimates made before a call (the budget check); actual usage replaces them.
TOKENS_PER_FRAME = 258
ESTIMATED_OUTPUT_TOKENS = 1500


def _cached_usd(price: Price, usage: Usage) -> tuple[float, int]:
    """What the cached input costs, and how many input tokens were cached."""
    cached = max(0, min(usage.cached_input_tokens, usage.input_tokens))
    rate = price.input if price.cached_input is None else price.cached_input
    return cached * rate / 1e6, cached


def token_usd(price: Price, usage: Usage, *, batch: bool = False) -> float:
    """The token price of ``usage``: cached input at its own price, the rest discounted in a batch."""
    cached_cost, cached = _cached_usd(price, usage)
    fresh = ((usage.input_tokens - cached) * price.input + usage.output_tokens * price.output
             + usage.thinking_tokens * price.thinking) / 1e6
    if batch and price.batch_discount:
        fresh *= 1 - price.batch_discount
    return fresh + cached_cost


def usd(price: Price, usage: Usage, *, batch: bool = False) -> float:
    return (token_usd(price, usage, batch=batch) + usage.gpu_seconds / 3600.0 * price.gpu_hour
            + usage.cpu_seconds / 3600.0 * price.cpu_hour)


def storage_usd(price: Price, tokens: int, seconds: float) -> float:
    """What keeping ``tokens`` in a context cache for ``seconds`` costs."""
    return tokens / 1e6 * price.cache_storage * max(0.0, seconds) / 3600.0


def batchable(price: Price) -> bool:
    """Whether the price table gives this model a batch price."""
    return price.batch_discount > 0


def estimate_usage(request: ModelRequest) -> Usage:
    tokens = 0
    for part in request.parts:
        if isinstance(part, TextPart):
            tokens += len(part.text) // 4 + 1
        elif isinstance(part, VideoPart):
            tokens += int(max(part.end - part.start, 0) * part.fps * TOKENS_PER_FRAME)
        elif isinstance(part, ImagePart):
            tokens += TOKENS_PER_FRAME
        else:
            tokens += 500
    # cpu_seconds: a text call on a CPU model (llama) reads ~40 and writes ~12 tokens a second on one core
    return Usage(input_tokens=tokens, output_tokens=ESTIMATED_OUTPUT_TOKENS, gpu_seconds=5.0,
                 cpu_seconds=tokens / 40 + ESTIMATED_OUTPUT_TOKENS / 12)
