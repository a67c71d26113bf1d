"""structlog setup: human-readable lines on stderr; JSON lines with PLAYLISTEVAL_LOG_JSON=1.

Loggers look up ``sys.stderr`` at each write instead of keeping the stream they started with, so a
replaced or closed stderr (pytest's capture, a daemonised worker) never breaks logging later on.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

import structlog


def _current_stderr_logger(*_args: Any) -> structlog.PrintLogger:
    return structlog.PrintLogger(file=sys.stderr)


class _CurrentStderrHandler(logging.StreamHandler):
    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, _value: Any) -> None:  # StreamHandler.__init__ assigns it; ignore
        pass


def configure(verbosity: int = 0) -> None:
    level = logging.WARNING - 10 * min(verbosity, 2)
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer() if os.environ.get("PLAYLISTEVAL_LOG_JSON")
        else structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    )
    structlog.configure(
        processors=[structlog.processors.add_log_level, structlog.processors.TimeStamper(fmt="iso"), renderer],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=_current_stderr_logger,
        cache_logger_on_first_use=False,
    )
    root = logging.getLogger()
    if not any(isinstance(h, _CurrentStderrHandler) for h in root.handlers):
        root.addHandler(_CurrentStderrHandler())
    root.setLevel(max(level, logging.WARNING))
    logging.getLogger("dramatiq").setLevel(max(level, logging.WARNING))
