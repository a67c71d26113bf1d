"""`leaderboard`'s output computed once per state of the store (analytics/board_cache.py and, before
DuckDB starts, analytics/board_file.py; issue 26).

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


def shown() -> list[Any]:
    """How the console renders: part of every kept board's key (a wider terminal or a pipe gets its own)."""
    return [console.width, console.color_system, console.is_terminal, console.legacy_windows]


def print_kept(an: Any, settings: Any, asked: list[Any], make: Callable[[], None], *, kind: str) -> str:
    """Print what ``make`` prints, from the kept copy when the store has not changed since; return the
    text printed."""
    from playlisteval.analytics import board_cache

    cache_key = board_cache.key(an, settings, [*asked, *shown()])
    text = board_cache.load(an, kind, cache_key)
    if text is not None:
        sys.stdout.write(text)
        sys.stdout.flush()
        return text
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
    return text


def file_key(settings: Any, asked: list[Any]) -> str | None:
    """The key of a board in the file beside the analytics file (analytics/board_file.py), for the
    store's files as they are now; None for a store without such files."""
    from playlisteval.analytics import board_file

    return board_file.key(settings, [*asked, *shown()])


def print_from_file(settings: Any, asked: list[Any], *, kind: str) -> bool:
    """Print the board kept in the file when the store's files are as they were then; True if printed."""
    from playlisteval.analytics import board_file

    text = board_file.load(settings, kind, file_key(settings, asked))
    if text is None:
        return False
    sys.stdout.write(text)
    sys.stdout.flush()
    return True


def keep_in_file(settings: Any, asked: list[Any], board_key: str | None, text: str, *, kind: str) -> None:
    from playlisteval.analytics import board_file

    board_file.save(settings, kind, board_key, text, [*asked, *shown()])
