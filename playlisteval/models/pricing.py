"""What a call costs (SPEC K1): tokens × the price table, or GPU-seconds × the GPU-hour price."""

from __future__ import annotations

from playlisteval.config import Price
from playlisteval.models.request import ImagePart, ModelRequest, TextPart, Usage, VideoPart

# Rough token counts for estimates made before a call (the budget check); actual usage replaces them.
TOKENS_PER_FRAME = 258
ESTIMATED_OUTPUT_TOKENS = 1500


def usd(price: Price, usage: Usage, *, batch: bool = False) -> float:
    cost = (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + usage.thinking_tokens * price.thinking
    ) / 1e6
    if batch and price.batch_discount:
        cost *= 1 - price.batch_discount
    return cost + usage.gpu_seconds / 3600.0 * price.gpu_hour


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
    return Usage(input_tokens=tokens, output_tokens=ESTIMATED_OUTPUT_TOKENS, gpu_seconds=5.0)
