"""Read a ranking reply ({rankings: [{rank, candidate_index, reasoning}]}) into an order of ratings."""

from __future__ import annotations

from typing import Any


def ranked_ratings(parsed: dict[str, Any] | None, ratings_by_index: list[int], base: int = 1) -> list[int] | None:
    """The candidates' ratings from rank 1 down; None when the ranking is incomplete or inconsistent.

    Candidates are shown numbered from ``base`` (1: "Candidate 1" is ``ratings_by_index[0]``); every
    candidate must appear exactly once.
    """
    if not parsed:
        return None
    entries = sorted(parsed.get("rankings", []), key=lambda e: e.get("rank", 0))
    indices = [e.get("candidate_index") for e in entries]
    if sorted(i for i in indices if isinstance(i, int)) != list(range(base, base + len(ratings_by_index))):
        return None
    return [ratings_by_index[int(i) - base] for i in indices if i is not None]
