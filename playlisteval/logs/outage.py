"""One warning per outage, not a traceback per attempt (issue 44).

A 30-s PostgreSQL restart left 566 tracebacks in three workers' logs: every lease beat, sweep, step and
dramatiq retry that met the dead store wrote its own. The behaviour was right (leases lapse, messages are
retried, the sweeper sends what was lost); only the noise buried it. Every site that meets an unreachable
store or broker reports here instead, and this process's state, keyed by what is down (``store``,
``broker``), writes one warning when the outage starts::

    store unreachable: <the driver's first line>; retrying

and one info line when a site next gets through::

    store reachable again after 5.3 s, 41 attempts

Each attempt (with its traceback) is a debug line: seen at -vv only. The sites classify the error
themselves (``playlisteval.errors.outage_of``): this module sits below them all and imports nothing of
theirs.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

from playlisteval.logs.handlers import configured_level
from playlisteval.logs.lazy import get_logger

log = get_logger(__name__)


@dataclass
class _Outage:
    since: float  # time.monotonic() of the first failure
    attempts: int = 0


_lock = threading.Lock()
_down: dict[str, _Outage] = {}  # what is down → since when, how many attempts met it


def first_line(error: BaseException | str) -> str:
    """The driver's own words: the innermost cause's first line (SQLAlchemy's wrapper adds its SQL, its
    parameters and a link on further lines)."""
    if isinstance(error, BaseException):
        inner = error
        for _ in range(8):  # a chain of causes is short; a cycle must not hang a logging call
            if inner.__cause__ is None:
                break
            inner = inner.__cause__
        orig = getattr(inner, "orig", None)  # sqlalchemy.exc.DBAPIError → the driver's exception
        text = str(orig if orig is not None else inner) or type(inner).__name__
    else:
        text = error
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[0] if lines else "(no message)"


def failed(what: str | None, error: BaseException | str, *, where: str, **fields: object) -> bool:
    """Note that ``where`` could not reach ``what`` (None: the error is not an outage; nothing is noted).
    The first failure of an outage is a warning; each one is a debug line with its traceback. Whether it
    was noted: a caller logs an error that is no outage its own way."""
    if what is None:
        return False
    with _lock:
        outage = _down.get(what)
        first = outage is None
        if outage is None:
            outage = _down[what] = _Outage(time.monotonic())
        outage.attempts += 1
        attempt = outage.attempts
    if first:
        log.warning(f"{what} unreachable: {first_line(error)}; retrying", where=where)
    if configured_level() <= logging.DEBUG:  # rendering a traceback is slow: only when it will be shown
        detail = {"exc_info": error} if isinstance(error, BaseException) else {"error": error}
        log.debug("outage.attempt", what=what, where=where, attempt=attempt, **fields, **detail)
    return True


def reached(*what: str) -> None:
    """A site got through to each of ``what``: an outage of it, if any, is over (one info line)."""
    for name in what:
        with _lock:
            outage = _down.pop(name, None)
        if outage is not None:
            took = time.monotonic() - outage.since
            log.info(f"{name} reachable again after {took:.1f} s, {outage.attempts} attempts")


def is_down(what: str | None = None) -> bool:
    """Whether ``what`` (None: anything) is down as far as this process knows."""
    with _lock:
        return bool(_down) if what is None else what in _down


def forget() -> None:
    """Every outage forgotten (tests; a process that starts over)."""
    with _lock:
        _down.clear()
