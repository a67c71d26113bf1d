"""Loggers that load structlog with the first line worth writing (issue 26).

Importing structlog (its console renderer, rich's tracebacks, asyncio) is ~0.15 s on this project's
2-core machine, a third of what `status` may take in all; `status`, `funnel`, `show` and an unchanged
`leaderboard` write no line at the default level. So every module's ``log = get_logger(__name__)`` is a
small stand-in: a call below the level the CLI set (``configure``) returns without loading anything; any
other use loads structlog, applies the pending configuration, and goes to structlog's own logger.

Where structlog is already loaded (a test process, a worker that bound context variables) nothing is
deferred or skipped: the stand-in only forwards, so structlog's configuration decides, as before.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

from playlisteval.logs.handlers import configure_stdlib, level_of

#: the levels of the methods a filtering structlog logger drops below its level (structlog's names)
_METHOD_LEVELS = {"debug": 10, "info": 20, "warning": 30, "warn": 30, "error": 40, "exception": 40,
                  "critical": 50, "fatal": 50}

_lock = threading.Lock()
_pending: int | None = None  # the verbosity configure() was given while structlog was not loaded yet


def configure(verbosity: int = 0) -> None:
    """The standard library's handler now; structlog's setup now if it is loaded, else with its first use."""
    global _pending
    configure_stdlib(verbosity)
    with _lock:
        if "structlog" not in sys.modules:
            _pending = verbosity
            return
        _pending = None
        from playlisteval.logs.setup import configure_structlog

        configure_structlog(verbosity)


def _structlog_logger(name: str) -> Any:
    """structlog's logger for ``name``, the pending setup applied first. Under the lock until it is done:
    a thread that logs meanwhile must not reach an unconfigured structlog, whose default prints every
    level to stdout (seen once as a debug line inside `eval retrieve --json`)."""
    global _pending
    with _lock:
        if _pending is not None:
            from playlisteval.logs.setup import configure_structlog

            configure_structlog(_pending)
            _pending = None
    import structlog

    return structlog.get_logger(name)


def _skip(*_args: Any, **_kw: Any) -> None:
    return None


class LazyLogger:
    """``get_logger``'s stand-in (see the module's doc)."""

    __slots__ = ("_name", "_real")

    def __init__(self, name: str) -> None:
        self._name = name
        self._real: Any = None

    def __getattr__(self, attr: str) -> Any:
        if self._real is None:
            pending = _pending
            method_level = _METHOD_LEVELS.get(attr)
            if pending is not None and method_level is not None and method_level < level_of(pending) \
                    and "structlog" not in sys.modules:
                return _skip  # below the level set and nothing loaded: what the filtering logger would do
            # structlog's own lazy proxy: it follows later configure() calls (cache_logger_on_first_use off)
            self._real = _structlog_logger(self._name)
        return getattr(self._real, attr)


def get_logger(name: str) -> Any:
    """The logger for module ``name`` (use as structlog's: ``log.info("event", key=value)``)."""
    return LazyLogger(name)
