"""Logging (setup.py: structlog, human-readable lines on stderr, JSON with PLAYLISTEVAL_LOG_JSON=1) and the one
redaction of secrets every log line, error text and printed message passes (redaction.py).

The package itself imports nothing: the CLI redacts its streams (redaction.py, standard library only) for a bare
`--help` without paying for structlog, which setup.py loads when a command runs.

May import: the standard library and structlog only (the bottom layer: every package may import it).
"""

from __future__ import annotations

from typing import Any

_SETUP = ("configure", "quiet_third_party_bars", "redact_event")


def __getattr__(name: str) -> Any:
    if name in _SETUP:
        from playlisteval.logs import setup

        return getattr(setup, name)
    raise AttributeError(f"module 'playlisteval.logs' has no attribute {name!r}")


__all__ = list(_SETUP)
