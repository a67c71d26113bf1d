"""Cut texts into encoder batches of similar token length (issue 43, deliverable 2).

A batch is padded to its longest input, so every row costs as much as the longest one. Sorting by
length and cutting fixed batches of 32 left batches that straddle a jump: 25 three-token OCR lines in
one batch with a 112-token transcript cost 112 tokens each. Here a batch closes when the next input
is much longer than the batch's first (``max_ratio``, with ``slack`` tokens of tolerance for short
inputs, where a few pad tokens cost nothing), when it would hold more than ``token_budget`` padded
tokens, or at ``max_rows`` rows. Each input is still encoded alone in its row (padding is masked), so
the vectors do not depend on how the batches are cut.
"""

from __future__ import annotations

from collections.abc import Sequence

MAX_ROWS = 32
TOKEN_BUDGET = 4096  # padded tokens a batch: 32 rows of 128; past this a bigger GEMM gains nothing
MAX_RATIO, SLACK = 1.25, 8


def length_batches(lengths: Sequence[int], max_rows: int = MAX_ROWS, token_budget: int = TOKEN_BUDGET,
                   max_ratio: float = MAX_RATIO, slack: int = SLACK) -> list[list[int]]:
    """Positions into ``lengths``, grouped: shortest first, every position exactly once."""
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    batches: list[list[int]] = []
    batch: list[int] = []
    for i in order:
        if batch:
            shortest, longest = lengths[batch[0]], lengths[i]  # sorted: the new one is the longest
            if (len(batch) >= max_rows or (len(batch) + 1) * longest > token_budget
                    or longest > shortest * max_ratio + slack):
                batches.append(batch)
                batch = []
        batch.append(i)
    if batch:
        batches.append(batch)
    return batches


def padded_tokens(lengths: Sequence[int], batches: list[list[int]]) -> int:
    """Tokens the encoder runs over, padding included: what a way of batching costs."""
    return sum(len(b) * max(lengths[i] for i in b) for b in batches if b)
