"""Texts embedded while the frames are read (index/embed_ahead.py, issue 43): the chunk vectors are the ones
embedding everything at the end gives, no text is embedded twice, and a failed job costs nothing but time."""

from __future__ import annotations

import numpy as np
import pytest

from playlisteval.index.embed_ahead import EmbedAhead
from playlisteval.index.embedders import HashingEmbedder, embed_chunks
from playlisteval.index.rows import ChunkInput


class Counting(HashingEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def embed_texts(self, texts: list[str]) -> np.ndarray:
        self.seen.extend(texts)
        return super().embed_texts(texts)


CHUNKS = [ChunkInput("the glacier left a moraine", ["Slide 1: ice", "00:00:05"], []),
          ChunkInput("sediment settles in layers", ["Slide 1: ice", "00:00:35"], []),
          ChunkInput("", [], [])]


def test_vectors_made_ahead_are_the_vectors_made_at_the_end() -> None:
    embedder = Counting()
    ahead = EmbedAhead(embedder)
    try:
        ahead.submit(lambda: [c.transcript for c in CHUNKS])
        for chunk in CHUNKS:
            ahead.submit(lambda lines=chunk.ocr_lines: list(lines))
        known = ahead.known()
    finally:
        ahead.close()
    assert sorted(known) == sorted({"the glacier left a moraine", "sediment settles in layers", "Slide 1: ice",
                                    "00:00:05", "00:00:35"})
    before = len(embedder.seen)
    got = embed_chunks(embedder, CHUNKS, 1.0, known)
    assert len(embedder.seen) == before  # nothing embedded again
    np.testing.assert_array_equal(got, embed_chunks(HashingEmbedder(), CHUNKS, 1.0))
    assert not np.any(got[2])  # a chunk with nothing to embed keeps its zero row


def test_a_failed_job_leaves_its_texts_to_the_end() -> None:
    embedder = Counting()
    ahead = EmbedAhead(embedder)

    def broken() -> list[str]:
        raise RuntimeError("speech recognition failed")

    try:
        ahead.submit(broken)
        ahead.submit(lambda: ["Slide 1: ice"])
        known = ahead.known()
    finally:
        ahead.close()
    assert list(known) == ["Slide 1: ice"]
    before = len(embedder.seen)
    got = embed_chunks(embedder, CHUNKS[:1], 1.0, known)
    assert embedder.seen[before:] == ["the glacier left a moraine", "00:00:05"]  # what was not known
    np.testing.assert_array_equal(got, embed_chunks(HashingEmbedder(), CHUNKS[:1], 1.0))


@pytest.mark.parametrize("weight", [0.0, 2.0])
def test_known_vectors_follow_the_ocr_weight(weight: float) -> None:
    known = {"Slide 1: ice": HashingEmbedder().embed_texts(["Slide 1: ice"])[0]}
    np.testing.assert_array_equal(embed_chunks(HashingEmbedder(), CHUNKS[:1], weight, known),
                                  embed_chunks(HashingEmbedder(), CHUNKS[:1], weight))
