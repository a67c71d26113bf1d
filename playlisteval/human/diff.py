"""Word-level differences between the two answers of a task (SPEC H3).

Each answer becomes a list of pieces: unchanged text, or a change numbered 0, 1, 2 … shared by both
sides, so "next difference" can show change k on the left and on the right together. Words only one
side has still get a piece on the other side: an empty one that marks where they would stand. Words are
compared exactly (punctuation attached), whitespace is kept as written, so the rendered text reads as
the original. Pieces are plain text: the template escapes them.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

_TOKEN = re.compile(r"\s*\S+")


@dataclass(frozen=True)
class Piece:
    text: str
    change: int | None = None  # the difference this piece belongs to; None: the same on both sides


@dataclass(frozen=True)
class WordDiff:
    a: list[Piece]
    b: list[Piece]
    changes: int

    def changed_words(self) -> tuple[int, int]:
        """Words inside changes, on side A and side B."""
        return (sum(len(p.text.split()) for p in self.a if p.change is not None),
                sum(len(p.text.split()) for p in self.b if p.change is not None))


def _tokens(text: str) -> list[str]:
    tokens = _TOKEN.findall(text)
    tail = text[len("".join(tokens)):]
    if tail and tokens:  # trailing whitespace belongs to the last token
        tokens[-1] += tail
    return tokens


def _emit(out: list[Piece], tokens: list[str], change: int | None) -> None:
    if not tokens:
        out.append(Piece("", change))
        return
    text = "".join(tokens)
    if change is None:
        out.append(Piece(text))
        return
    # leading whitespace (a space, a paragraph break) stays outside the highlight
    stripped = text.lstrip()
    if len(stripped) < len(text):
        out.append(Piece(text[: len(text) - len(stripped)]))
    trailing = stripped[len(stripped.rstrip()):]
    out.append(Piece(stripped.rstrip(), change))
    if trailing:
        out.append(Piece(trailing))


def word_diff(a: str, b: str) -> WordDiff:
    ta, tb = _tokens(a), _tokens(b)
    words_a, words_b = [t.strip() for t in ta], [t.strip() for t in tb]
    matcher = difflib.SequenceMatcher(a=words_a, b=words_b, autojunk=False)
    # a text of whitespace only has no token: keep its whitespace as it is
    pa: list[Piece] = [Piece(a)] if not ta and a else []
    pb: list[Piece] = [Piece(b)] if not tb and b else []
    change = 0
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            _emit(pa, ta[i1:i2], None)
            _emit(pb, tb[j1:j2], None)
            continue
        _emit(pa, ta[i1:i2], change)
        _emit(pb, tb[j1:j2], change)
        change += 1
    return WordDiff(_merge(pa), _merge(pb), change)


def _merge(pieces: list[Piece]) -> list[Piece]:
    """Adjacent unchanged pieces as one (fewer elements in the page)."""
    out: list[Piece] = []
    for piece in pieces:
        if out and piece.change is None and out[-1].change is None:
            out[-1] = Piece(out[-1].text + piece.text)
        elif piece.change is not None or piece.text:
            out.append(piece)
    return out
