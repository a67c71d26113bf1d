"""Playlist order repaired by the episode numbers in titles (SPEC A3).

File names sort "Episode 10" before "Episode 2", and uploaded playlists are sometimes out of order.
Titles that carry an episode number are re-sorted by it *within the slots they occupy*; titles without
a number (a trailer, a bonus) keep their place, so a playlist is never reshuffled on a guess.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")

# Season+episode first ("S02E05", "2x05"), then a keyword and a number ("Episode 4", "Ep.4", "Part 3",
# "Lecture 12", "#7"), then a leading number ("03 - Title"). Letters around are not word boundaries
# in file names ("lecture_04"), hence the explicit look-arounds.
_SEASON_EPISODE = re.compile(
    r"(?<![a-z0-9])s(\d{1,3})[ ._-]?e(\d{1,4})(?![0-9])|(?<![0-9])(\d{1,2})x(\d{1,3})(?![0-9])"
)
_KEYWORD = re.compile(
    r"(?<![a-z])(?:episode|episodio|ep|part|pt|lecture|lesson|chapter|session|class|week|day|no|number)"
    r"[ ._-]*\.?[ ._-]*#?[ ._-]*(\d{1,4})(?![0-9])"
)
_SEASON = re.compile(r"(?<![a-z])(?:season|series)[ ._-]*(\d{1,3})(?![0-9])")
_HASH = re.compile(r"#\s*(\d{1,4})(?![0-9])")
_LEADING = re.compile(r"^\s*(\d{1,3})(?=[ ._)\]-])")


def episode_number(title: str) -> tuple[int, int] | None:
    """(season, episode) found in a title, season 0 when none is given; None when there is no number."""
    lowered = title.lower()
    match = _SEASON_EPISODE.search(lowered)
    if match:
        first = 1 if match.group(1) else 3  # "S02E05" fills groups 1-2, "2x05" groups 3-4
        return int(match.group(first)), int(match.group(first + 1))
    season_match = _SEASON.search(lowered)
    season = int(season_match.group(1)) if season_match else 0
    rest = lowered[season_match.end():] if season_match else lowered  # "Season 2 Episode 3": skip the 2
    for pattern in (_KEYWORD, _HASH, _LEADING):
        match = pattern.search(rest)
        if match:
            return season, int(match.group(1))
    return None


def episode_order(items: Sequence[T], titles: Sequence[str]) -> list[T]:
    """``items`` (in their given order) with the numbered ones re-sorted by (season, episode).

    The sort is stable, so equal numbers keep their given order; when the numbered titles are already
    in order nothing moves.
    """
    if len(items) != len(titles):
        raise ValueError("one title per item")
    numbers = [episode_number(t) for t in titles]
    slots = [i for i, n in enumerate(numbers) if n is not None]
    if len(slots) < 2:
        return list(items)
    ordered = sorted(slots, key=lambda i: numbers[i])  # type: ignore[arg-type, return-value]
    out = list(items)
    for slot, source in zip(slots, ordered, strict=True):
        out[slot] = items[source]
    return out
