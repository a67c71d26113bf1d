"""The rules on an annotator's answer (SPEC H1), one definition for the app, its browser code and imports.

A word is a run of letters or digits, with inner apostrophes or hyphens ("don't", "left-hand" are one
word each). static/app.js counts with the same pattern, so the browser's counter and the server agree.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"[^\W_]+(?:['\u2019-][^\W_]+)*")
CHOICES = ("A", "B")
MAX_REASON = 4000  # characters of a reason, in the app and in an import


def count_words(text: str) -> int:
    return len(_WORD.findall(text or ""))


def reason_problem(reason: str, min_words: int) -> str | None:
    """Why a reason is not accepted, or None: too few words, or longer than ``MAX_REASON`` characters (a
    0.98-MB reason was once stored; issue 25)."""
    length = len((reason or "").strip())
    if length > MAX_REASON:
        return f"the reason is {length:,} characters long; at most {MAX_REASON:,} are accepted"
    n = count_words(reason)
    if n < min_words:
        return f"the reason has {n} word(s); at least {min_words} are required"
    return None


def choice_problem(choice: str) -> str | None:
    if choice not in CHOICES:
        return f"the choice must be A or B, not {choice!r}"
    return None
