"""structlog setup: human-readable lines on stderr; JSON lines with PLAYLISTEVAL_LOG_JSON=1."""

from __future__ import annotations

import logging
import os
import sys

import structlog


def configure(verbosity: int = 0) -> None:
    level = logging.WARNING - 10 * min(verbosity, 2)
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer() if os.environ.get("PLAYLISTEVAL_LOG_JSON")
        else structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    )
    structlog.configure(
        processors=[structlog.processors.add_log_level, structlog.processors.TimeStamper(fmt="iso"), renderer],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )
    logging.basicConfig(level=max(level, logging.WARNING), stream=sys.stderr)
    logging.getLogger("dramatiq").setLevel(max(level, logging.WARNING))
