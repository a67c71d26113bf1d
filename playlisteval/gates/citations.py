"""Parse the gold answer's citations (SPEC B4) and map them onto 30-s chunks (SPEC C1).

Accepted forms, at the end of a sentence:
    (clip1 @ 0:30 - 1:10)
    (clip1 @ 0:30 - 1:10, 2:00 - 2:20, clip2 @ 4:00 - 4:40)     the clip carries over until it changes
Times are M:S or H:MM:SS from the start of that clip. "clip 1", "Clip1" and "video1" are tolerated.
Anything inside a bracket with an "@" that does not parse is reported as a problem, as is an
unbalanced bracket, a range that ends before it starts, and an unknown clip id.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

_CLIP = re.compile(r"^\s*(?:clip|video)?\s*(\d+)\s*@\s*(.*)$", re.I)
_TIME = r"\d{1,2}(?::\d{1,2}){1,2}"
_RANGE = re.compile(rf"^\s*({_TIME})\s*[-–—]\s*({_TIME})\s*$")


@dataclass(frozen=True)
class Citation:
    clip: int
    start: float  # seconds from the clip's start
    end: float


@dataclass
class ParsedCitations:
    citations: list[Citation] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def to_seconds(text: str) -> float:
    value = 0.0
    for part in text.split(":"):
        value = value * 60 + int(part)
    return value


def _brackets(text: str, problems: list[str]) -> list[str]:
    groups, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            if depth == 0:
                start = i + 1
            depth += 1
        elif ch == ")":
            if depth == 0:
                problems.append(f"unmatched ')' at character {i}")
                continue
            depth -= 1
            if depth == 0:
                groups.append(text[start:i])
    if depth:
        problems.append("unclosed '(' in the answer")
    return [g for g in groups if "@" in g]


def parse_citations(text: str, clips: tuple[int, ...] = (1, 2)) -> ParsedCitations:
    out = ParsedCitations()
    for group in _brackets(text, out.problems):
        clip: int | None = None
        for piece in group.split(","):
            m = _CLIP.match(piece)
            if m:
                clip, piece = int(m.group(1)), m.group(2)
            r = _RANGE.match(piece)
            if clip is None or r is None:
                out.problems.append(f"cannot read citation {piece.strip()!r} in ({group.strip()})")
                continue
            if clip not in clips:
                out.problems.append(f"unknown clip {clip} in ({group.strip()})")
                continue
            start, end = to_seconds(r.group(1)), to_seconds(r.group(2))
            if end <= start:
                out.problems.append(f"range ends before it starts: {piece.strip()!r}")
                continue
            out.citations.append(Citation(clip, start, end))
    return out


def chunks_by_clip(citations: list[Citation], chunk_s: float) -> dict[int, set[int]]:
    """The 30-s chunks (numbered from each clip's start) that the citations touch."""
    covered: dict[int, set[int]] = {}
    for c in citations:
        first, last = int(c.start // chunk_s), max(int(math.ceil(c.end / chunk_s)) - 1, int(c.start // chunk_s))
        covered.setdefault(c.clip, set()).update(range(first, last + 1))
    return covered


def strip_citations(text: str) -> str:
    """The answer without its citation brackets (for text-only judges, SPEC D3 and G4)."""
    stripped = re.sub(r"\s*\([^()]*@[^()]*\)", "", text)
    return re.sub(r"[ \t]+([.,;:])", r"\1", stripped).strip()


def count_paragraphs(text: str) -> int:
    return len([p for p in re.split(r"\n\s*\n", text.strip()) if p.strip()])
