"""Logging (setup.py: structlog, human-readable lines on stderr, JSON with PLAYLISTEVAL_LOG_JSON=1) and the one
redaction of secrets every log line, error text and printed message passes (redaction.py).

The package imports only the standard library: the CLI redacts its streams (redaction.py) for a bare `--help`,
and a command's loggers (``get_logger``, lazy.py) load structlog with the first line worth writing, so a
command that writes none never pays for it (issue 26); the standard library's handler is set at once
(handlers.py).

May import: the standard library and structlog only (the bottom layer: every package may import it).
"""

from __future__ import annotations

from typing import Any

from playlisteval.logs.handlers import quiet_third_party_bars
from playlisteval.logs.lazy import configure, get_logger


def __getattr__(name: str) -> Any:
    if name == "redact_event":
        from playlisteval.logs import setup

        return setup.redact_event
    raise AttributeError(f"module 'playlisteval.logs' has no attribute {name!r}")


__all__ = ["configure", "get_logger", "quiet_third_party_bars", "redact_event"]
