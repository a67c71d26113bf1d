"""Chunk boundaries (SPEC A4): exact ``chunk_s`` pieces by timestamp, never by keyframe-bound cuts."""

from __future__ import annotations


def chunk_spans(duration: float, chunk_s: float, min_last_s: float) -> list[tuple[float, float]]:
    """(start, end) of each chunk of a video of ``duration`` seconds.

    Every chunk is exactly ``chunk_s`` long except the last, kept only when it lasts at least
    ``min_last_s`` (a few seconds of tail carry too little to embed). A video shorter than that is
    still one chunk, so that every indexed video has at least one.
    """
    if chunk_s <= 0:
        raise ValueError("chunk_s must be positive")
    if duration <= 0:
        return []
    spans: list[tuple[float, float]] = []
    index = 0
    while True:
        start = index * chunk_s
        if start >= duration:
            break
        end = min(start + chunk_s, duration)
        # a full chunk that float rounding made a hair short is still a full chunk
        if end - start >= chunk_s - 1e-6 or end - start >= min_last_s:
            spans.append((start, end))
        index += 1
    if not spans:
        spans.append((0.0, duration))
    return spans
