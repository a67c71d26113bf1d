"""structlog setup: human-readable lines on stderr; JSON lines with PLAYLISTEVAL_LOG_JSON=1.

Loggers look up ``sys.stderr`` at each write instead of keeping the stream they started with, so a
replaced or closed stderr (pytest's capture, a daemonised worker) never breaks logging later on. A command
runs this only once a line is worth writing (lazy.py); the standard library's half is handlers.py.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import structlog

from playlisteval.logs.handlers import configure_stdlib, level_of
from playlisteval.logs.redaction import redact, redact_any


def _current_stderr_logger(*_args: Any) -> structlog.PrintLogger:
    return structlog.PrintLogger(file=sys.stderr)


def redact_event(_logger: Any, _name: str, event: Any) -> Any:
    """structlog processor: every field of a line (and, placed after the renderer, the rendered line with
    its traceback) redacted: no API key reaches a log (issue 25)."""
    return redact(event) if isinstance(event, str) else redact_any(event)


def configure_structlog(verbosity: int) -> None:
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer() if os.environ.get("PLAYLISTEVAL_LOG_JSON")
        else structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    )
    structlog.configure(
        # contextvars first: an actor's lines carry its message's context (actors/tasks.py, LogContext)
        processors=[structlog.contextvars.merge_contextvars, structlog.processors.add_log_level,
                    structlog.processors.TimeStamper(fmt="iso"), redact_event, renderer, redact_event],
        wrapper_class=structlog.make_filtering_bound_logger(level_of(verbosity)),
        logger_factory=_current_stderr_logger,
        cache_logger_on_first_use=False,
    )


def configure(verbosity: int = 0) -> None:
    """Both halves at once (the standard library's and structlog's)."""
    configure_stdlib(verbosity)
    configure_structlog(verbosity)
