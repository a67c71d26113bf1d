"""`leaderboard`'s output computed once per state of the store (analytics/board_cache.py, issue 26).

The board is printed through the shared console (a table) or as one JSON line; both are captured as
they are made and kept, and an unchanged store prints the kept text. The key holds how the console
renders (width, colour system, a terminal or not), so a wider terminal or a pipe gets its own text.
"""

from __future__ import annotations

import contextlib
import io
import sys
from collections.abc import Callable
from typing import Any

from playlisteval.commands.support import console


def print_kept(an: Any, settings: Any, asked: list[Any], make: Callable[[], None], *, kind: str) -> bool:
    """Print what ``make`` prints, from the kept copy when the store has not changed since; True when
    the kept copy was printed."""
    from playlisteval.analytics import board_cache

    shown = [console.width, console.color_system, console.is_terminal, console.legacy_windows]
    cache_key = board_cache.key(an, settings, [*asked, *shown])
    text = board_cache.load(an, kind, cache_key)
    if text is not None:
        sys.stdout.write(text)
        sys.stdout.flush()
        return True
    if kind == "json":  # one line through click.echo: standard output taken for the call
        plain = io.StringIO()
        with contextlib.redirect_stdout(plain):
            make()
        text = plain.getvalue()
    else:  # the console's tables, rendered as this console renders them (its file left as it is)
        with console.capture() as captured:
            make()
        text = captured.get()
    board_cache.save(an, kind, cache_key, text)
    sys.stdout.write(text)
    sys.stdout.flush()
    return False
