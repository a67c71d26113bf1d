"""dramatiq's own lines during a store or broker outage, folded into one warning per outage (issue 44).

dramatiq logs every message whose actor raised as "Failed to process message … with unhandled exception"
with a traceback, and every consumer that lost Redis as a critical "connection error" (again every 3 s;
its retries and restarts are info lines, below the level dramatiq's loggers are set to). During an outage
that is a traceback per attempt per thread: a 30-s PostgreSQL restart left 566 of them.

This filter sits on the root logger's handlers (dramatiq's consumer loggers are named per queue, so no
fixed logger would catch them all). It hands each such line whose error is an outage to logs/outage.py,
which writes one warning when the outage starts, and drops the line unless the process logs at debug
(-vv), where every attempt's traceback stays visible. Lines about other errors (a bug in an actor) are
left as they are. Nothing changes in what dramatiq does: only its lines.
"""

from __future__ import annotations

import logging

from playlisteval.errors import outage_of
from playlisteval.logs import outage
from playlisteval.logs.handlers import configured_level

#: dramatiq's lines about a lost broker connection that carry the error as an argument, not as exc_info
_CONNECTION_LINES = ("Consumer encountered a connection error", "Failed to post_process_message",
                     "Failed to requeue messages")


class DramatiqOutageFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if not record.name.startswith("dramatiq"):
            return True
        verbose = configured_level() <= logging.DEBUG
        template = record.msg if isinstance(record.msg, str) else ""
        error = record.exc_info[1] if record.exc_info and record.exc_info[1] is not None else None
        if error is None and template.startswith(_CONNECTION_LINES):
            error = next((a for a in (record.args or ()) if isinstance(a, BaseException)), None)
            if error is None:  # "Failed to requeue messages": the error is the traceback being handled
                return True
            noted = outage.failed(outage_of(error) or "broker", error, where=_where(record))
            return verbose or not noted
        if error is not None:
            noted = outage.failed(outage_of(error), error, where=_where(record))
            return verbose or not noted
        return True


def _where(record: logging.LogRecord) -> str:
    """dramatiq's thread that met it: "dramatiq WorkerThread", "dramatiq ConsumerThread(build)"."""
    return "dramatiq " + record.name.removeprefix("dramatiq.worker.").removeprefix("dramatiq.")


def quiet_dramatiq_outages() -> None:
    """Put the filter on the root logger's handlers (once each); a handler added later has none."""
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, DramatiqOutageFilter) for f in handler.filters):
            handler.addFilter(DramatiqOutageFilter())
