"""Shortcut-audit judges (issue 6): judges that need no model and look at nothing a real judge should
rely on. A sound benchmark keeps each of them near 50 %:

- ``shortcut/random``: a seeded coin per pair;
- ``shortcut/always-a``: always Model A (the sides are drawn at random, SPEC G5);
- ``shortcut/longer-answer``: the answer with more words (citations stripped), ties by the coin;
- ``shortcut/transcript-overlap``: the answer sharing more of its content words with the served
  transcript (SPEC D: the wrong answers differ only in what is seen), ties by the coin.
"""

from __future__ import annotations

import random
import re

from playlisteval.errors import ConfigError

PREFIX = "shortcut/"
NAMES = ("random", "always-a", "longer-answer", "transcript-overlap")
_WORD = re.compile(r"[a-z]+")
_STOP = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "has", "have", "in", "is", "it", "its", "of",
    "on", "or", "that", "the", "this", "to", "was", "were", "which", "with", "while", "their", "there", "these",
    "those", "into", "than", "then", "them", "they", "what", "when", "where", "who", "will", "would", "about",
    "over", "under", "between", "both", "each", "more", "most", "other", "some", "such", "only", "also", "very",
})


def is_shortcut(spec: str) -> bool:
    return spec.startswith(PREFIX)


def shortcut_name(spec: str) -> str:
    name = spec[len(PREFIX):]
    if name not in NAMES:
        raise ConfigError(f"unknown shortcut judge {spec!r}; known: {', '.join(PREFIX + n for n in NAMES)}")
    return name


def needs_transcript(spec: str) -> bool:
    return shortcut_name(spec) == "transcript-overlap"


def _coin(seed: int, pair_id: int, salt: str) -> str:
    return "A" if random.Random(f"{seed}:shortcut:{salt}:{pair_id}").random() < 0.5 else "B"


def content_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) > 2 and w not in _STOP}


def overlap(answer: str, transcript: str) -> float:
    """Share of the answer's distinct content words that the transcript also uses."""
    words = content_words(answer)
    return len(words & content_words(transcript)) / len(words) if words else 0.0


def judge(spec: str, seed: int, pair_id: int, answer_a: str, answer_b: str, transcript: str = "",
          salt: str = "") -> tuple[str, str]:
    """(verdict, the reason as the judgment's raw text); ``salt`` gives each run its own coins (the
    swapped pass of the random judge must not simply repeat the forward one's letters)."""
    name = shortcut_name(spec)
    coin = _coin(seed, pair_id, salt)
    if name == "random":
        return coin, f"[shortcut] coin: {coin}"
    if name == "always-a":
        return "A", "[shortcut] always A"
    if name == "longer-answer":
        la, lb = len(answer_a.split()), len(answer_b.split())
        pick = coin if la == lb else ("A" if la > lb else "B")
        return pick, f"[shortcut] words A={la} B={lb}"
    oa, ob = overlap(answer_a, transcript), overlap(answer_b, transcript)
    pick = coin if abs(oa - ob) < 1e-12 else ("A" if oa > ob else "B")
    return pick, f"[shortcut] transcript overlap A={oa:.4f} B={ob:.4f}"
