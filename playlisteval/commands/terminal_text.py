"""Model text made safe for a terminal (issue 25): its control characters taken out before it is printed.

A reply is untrusted text: an ESC sequence in it could recolour, move the cursor, rewrite what was shown
above, set the window's title or hide a line; a bidirectional override could show the text in another
order than it is. `show` prints replies, prompts and errors, so every string of what it prints passes
``plain``: newlines and tabs stay, every other control (C0, DEL, C1) and format character is removed.
JSON output needs none of this (json.dumps writes them as ``\\u001b`` escapes).
"""

from __future__ import annotations

import re
from typing import Any

_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]")


def plain(text: str) -> str:
    """``text`` without terminal controls (newline and tab kept)."""
    return _CONTROLS.sub("", text)


def plain_all(value: Any) -> Any:
    """Every string of a nested dict / list (a story, a listing) through ``plain``."""
    if isinstance(value, str):
        return plain(value)
    if isinstance(value, dict):
        return {k: plain_all(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain_all(v) for v in value]
    if isinstance(value, tuple):
        return tuple(plain_all(v) for v in value)
    return value
