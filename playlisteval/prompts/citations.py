"""Parse the gold answer's citations (SPEC B4) and map them onto 30-s chunks (SPEC C1). Text only (the standard
library): below the gates, prompts, models and eval that all read citations.

Accepted forms, in round brackets:
    (1 @ 4:20 - 5:15)                                   the paper's form: clip number, "@", a range
    (clip1 @ 0:30 - 1:10)                               "clip 1", "Clip1", "video 1" are tolerated
    (1 @ 0:30 - 1:10, 2:00 - 2:20, 2 @ 4:00 - 4:40)     several ranges; the clip carries over until it
                                                        changes, and a change repeats "N @"
Times are M:SS (minutes may exceed 59) or H:MM:SS, counted from the start of that clip.

Problems reported (each one makes gate C1 reject): a range that runs from one clip into another
("(1 @ 4:20 - 2 @ 5:15)"), a range without a clip before it, an unreadable piece, an unknown clip,
seconds or minutes past 59, a range that ends before it starts or past the clip's end, a citation in
square brackets or outside any bracket, and unbalanced brackets.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

_TIME = r"\d{1,3}:\d{1,2}(?::\d{1,2})?"
_HEAD = re.compile(r"^\s*(?:clip|video)?\s*(\d+)\s*@\s*(.*)$", re.I | re.S)
_RANGE = re.compile(rf"^\s*({_TIME})\s*[-–—]\s*({_TIME})\s*$")
# what a citation looks like when it is not where it should be (outside brackets, in [ ])
_LOOSE = re.compile(rf"(?:clip|video)?\s*\d+\s*@\s*{_TIME}", re.I)
_PAIRS = {")": "(", "]": "["}


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
    """"4:20" → 260, "1:02:03" → 3723; raises ValueError for seconds (or H:MM minutes) past 59."""
    parts = [int(p) for p in text.split(":")]
    if any(p > 59 for p in parts[1:]):
        raise ValueError(f"{text!r} has a field past 59")
    value = 0
    for p in parts:
        value = value * 60 + p
    return float(value)


def _groups(text: str, problems: list[str]) -> tuple[list[str], str]:
    """Innermost round-bracket groups that contain "@", and the text with every bracket group removed."""
    stack: list[tuple[str, int]] = []
    groups: list[str] = []
    spans: list[tuple[int, int]] = []
    for i, ch in enumerate(text):
        if ch in "([":
            stack.append((ch, i))
        elif ch in ")]":
            if not stack or stack[-1][0] != _PAIRS[ch]:
                problems.append(f"unmatched {ch!r} at character {i}")
                continue
            opener, start = stack.pop()
            inner = text[start + 1:i]
            spans.append((start, i + 1))
            if "@" not in inner or any(c in inner for c in "()[]"):
                continue
            if opener == "[":
                problems.append(f"citation in square brackets: [{inner.strip()}]")
            else:
                groups.append(inner)
    for opener, i in stack:
        problems.append(f"unclosed {opener!r} at character {i}")
    outside = list(text)
    for a, b in spans:
        outside[a:b] = [" "] * (b - a)
    return groups, "".join(outside)


def parse_citations(
    text: str, clips: tuple[int, ...] = (1, 2), clip_lengths: dict[int, float] | None = None,
) -> ParsedCitations:
    """Every citation of ``text`` and every problem with them. ``clip_lengths`` (seconds), when given,
    also rejects ranges past a clip's end (one second of slack for rounding)."""
    out = ParsedCitations()
    groups, outside = _groups(text, out.problems)
    for loose in _LOOSE.finditer(outside):
        out.problems.append(f"citation outside brackets: {loose.group(0).strip()!r}")
    for group in groups:
        where = f"({group.strip()})"
        clip: int | None = None
        for piece in group.split(","):
            head = _HEAD.match(piece)
            if head:
                clip, piece = int(head.group(1)), head.group(2)
            if "@" in piece:
                out.problems.append(f"a range runs from one clip into another in {where}")
                continue
            rng = _RANGE.match(piece)
            if rng is None:
                out.problems.append(f"cannot read {piece.strip()!r} in {where}")
                continue
            if clip is None:
                out.problems.append(f"range {piece.strip()!r} has no clip before it in {where}")
                continue
            if clip not in clips:
                out.problems.append(f"unknown clip {clip} in {where}")
                continue
            try:
                start, end = to_seconds(rng.group(1)), to_seconds(rng.group(2))
            except ValueError as exc:
                out.problems.append(f"bad time in {where}: {exc}")
                continue
            if end <= start:
                out.problems.append(f"range ends before it starts: {piece.strip()!r}")
                continue
            length = (clip_lengths or {}).get(clip)
            if length is not None and end > length + 1:
                out.problems.append(f"range {piece.strip()!r} ends past the end of clip {clip}")
                continue
            out.citations.append(Citation(clip, start, end))
    return out


def chunks_by_clip(
    citations: list[Citation], chunk_s: float, offsets: dict[int, float] | None = None,
) -> dict[int, set[int]]:
    """The chunks each clip's citations touch. Chunks are numbered on the video's own 30-s grid when
    ``offsets`` (each clip's start in its video) are given, else from each clip's start."""
    covered: dict[int, set[int]] = {}
    for c in citations:
        off = (offsets or {}).get(c.clip, 0.0)
        first = int((off + c.start) // chunk_s)
        last = max(int(math.ceil((off + c.end) / chunk_s)) - 1, first)
        covered.setdefault(c.clip, set()).update(range(first, last + 1))
    return covered


# compiled once: an export strips every answer of the benchmark (issue 43)
_CITATION = re.compile(r"\s*[(\[][^()\[\]]*@[^()\[\]]*[)\]]")
_BEFORE_PUNCTUATION = re.compile(r"[ \t]+([.,;:!?])")


def strip_citations(text: str) -> str:
    """The answer without its citation brackets (for text-only judges, SPEC D3 and G4)."""
    stripped = _CITATION.sub("", text) if "@" in text else text  # a citation holds an "@"
    return _BEFORE_PUNCTUATION.sub(r"\1", stripped).strip()


def uniform(text: str) -> str:
    """One shape for every candidate a judge ranks: no citations, single spaces, paragraphs split by
    one blank line, so that the gold cannot be told apart by its layout (SPEC D3)."""
    paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", strip_citations(text)) if p.strip()]
    return "\n\n".join(paragraphs)


def count_paragraphs(text: str) -> int:
    return len([p for p in re.split(r"\n\s*\n", text.strip()) if p.strip()])
