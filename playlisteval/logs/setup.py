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

from playlisteval.logs.redaction import redact, redact_any


def _current_stderr_logger(*_args: Any) -> structlog.PrintLogger:
    return structlog.PrintLogger(file=sys.stderr)


class _CurrentStderrHandler(logging.StreamHandler):
    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, _value: Any) -> None:  # StreamHandler.__init__ assigns it; ignore
        pass

    def format(self, record: logging.LogRecord) -> str:
        """dramatiq's, redis's and the SDKs' lines redacted like ours (an SDK may log a request URL)."""
        return redact(super().format(record))


def redact_event(_logger: Any, _name: str, event: Any) -> Any:
    """structlog processor: every field of a line (and, placed after the renderer, the rendered line with
    its traceback) redacted: no API key reaches a log (issue 25)."""
    return redact(event) if isinstance(event, str) else redact_any(event)


def quiet_third_party_bars(verbosity: int) -> None:
    """Third-party progress bars (transformers' "Loading weights", huggingface_hub downloads, tqdm in the
    libraries we call) stay off unless -v: they would leak into piped output and mix with our own bars.
    Set before those libraries are imported (they read it at import); an explicit setting is kept."""
    if verbosity > 0:
        return
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TQDM_DISABLE", "1")
    if "transformers" in sys.modules:  # already imported (a long-lived process): turn its bars off too
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()


def configure(verbosity: int = 0) -> None:
    quiet_third_party_bars(verbosity)
    level = logging.WARNING - 10 * min(verbosity, 2)
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer() if os.environ.get("PLAYLISTEVAL_LOG_JSON")
        else structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    )
    structlog.configure(
        # contextvars first: an actor's lines carry its message's context (actors/tasks.py, LogContext)
        processors=[structlog.contextvars.merge_contextvars, structlog.processors.add_log_level,
                    structlog.processors.TimeStamper(fmt="iso"), redact_event, renderer, redact_event],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=_current_stderr_logger,
        cache_logger_on_first_use=False,
    )
    root = logging.getLogger()
    if not any(isinstance(h, _CurrentStderrHandler) for h in root.handlers):
        root.addHandler(_CurrentStderrHandler())
    root.setLevel(max(level, logging.WARNING))
    logging.getLogger("dramatiq").setLevel(max(level, logging.WARNING))
