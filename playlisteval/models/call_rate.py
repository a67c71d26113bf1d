"""Calls in flight, calls/s and 429s, read from the ledger (issue 43): a judge run's summary and
`status --watch`.

The ledger is what every worker process writes, so these figures cover them all (an in-process count
would see one). Each paid try is a row whose interval, ``[finished_at - latency_s, finished_at]``, is the
time it was sent and unanswered (the runner starts the clock once the rate limits admitted it); a
refused try (429/503) is an error row whose text says so. Cache hits are not calls.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import func
from sqlalchemy.engine import Engine
from sqlmodel import col, select

from playlisteval.models.adaptive import THROTTLED_TEXT
from playlisteval.store.engine import read
from playlisteval.store.tables import ModelCall, now

_TRIES = ("ok", "malformed", "error", "interrupted")
RECENT_ROWS = 20_000  # `status --watch` reads at most this many of the newest rows (an id range, not a scan)


@dataclass(frozen=True)
class CallRate:
    tries: int = 0  # paid tries that ended (answered, malformed, failed)
    refused: int = 0  # of which the provider refused (429/503)
    span_s: float = 0.0  # the first try's send to the last one's end
    busy_s: float = 0.0  # the tries' time in flight, summed
    peak: int = 0  # most tries in flight at once
    open: int = 0  # rows still in flight (sent, or reserved and waiting for the rate limits)

    @property
    def per_s(self) -> float:
        return self.tries / self.span_s if self.span_s > 0 else 0.0

    @property
    def mean_in_flight(self) -> float:
        return self.busy_s / self.span_s if self.span_s > 0 else 0.0

    @property
    def refused_share(self) -> float:
        return self.refused / self.tries if self.tries else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "per_s": round(self.per_s, 3), "mean_in_flight": round(self.mean_in_flight, 2),
                "refused_share": round(self.refused_share, 4)}

    def line(self) -> str:
        """One line for a person: '120 calls, 7.9/s, 15.2 in flight on average (peak 16), 3 429s (2.5 %)'."""
        if not self.tries:
            return "no calls"
        return (f"{self.tries} call(s), {self.per_s:.1f}/s, {self.mean_in_flight:.1f} in flight on average "
                f"(peak {self.peak}), {self.refused} refused 429/503 ({100 * self.refused_share:.1f} %)")


def rate_of(rows: list[tuple[str, str | None, float, float]], window: tuple[float, float] | None = None,
            open_rows: int = 0) -> CallRate:
    """The figures of ``rows`` (status, error, latency_s, finished_at); ``window`` (start, end): only the
    time inside it counts (the last seconds, for `status --watch`)."""
    edges: list[tuple[float, int]] = []
    busy, first, last, refused = 0.0, float("inf"), float("-inf"), 0
    for status, error, latency, finished in rows:
        start = finished - max(0.0, latency)
        if window is not None:
            start, finished = max(start, window[0]), min(finished, window[1])
            if finished < start:
                continue
        busy += finished - start
        first, last = min(first, start), max(last, finished)
        edges += [(start, 1), (finished, -1)]
        refused += int(status == "error" and bool(error) and bool(THROTTLED_TEXT.search(error or "")))
    peak = level = 0
    for _, step in sorted(edges, key=lambda e: (e[0], e[1])):  # an end before a start at the same instant
        level += step
        peak = max(peak, level)
    tries = len(edges) // 2
    span = (window[1] - window[0]) if window is not None else (last - first if tries else 0.0)
    return CallRate(tries=tries, refused=refused, span_s=max(0.0, span), busy_s=busy, peak=peak, open=open_rows)


_COLUMNS = (col(ModelCall.status), col(ModelCall.error), col(ModelCall.latency_s), col(ModelCall.finished_at))


def of_run(engine: Engine, run_id: int, purpose: str, since: float = 0.0) -> CallRate:
    """A run's tries that ended since ``since`` (one pass of it), and its rows still open."""
    with read(engine) as s:
        found = s.exec(select(*_COLUMNS).where(
            ModelCall.run_id == run_id, ModelCall.purpose == purpose, col(ModelCall.status).in_(_TRIES),
            ModelCall.created_at >= since, col(ModelCall.finished_at).is_not(None))).all()
        open_rows = s.exec(select(func.count()).select_from(ModelCall).where(
            ModelCall.status == "in_flight", ModelCall.run_id == run_id, ModelCall.purpose == purpose)).one()
    return rate_of([(st, err, float(lat), float(fin or 0.0)) for st, err, lat, fin in found], open_rows=int(open_rows))


def recent(engine: Engine, window_s: float = 10.0, at: float | None = None) -> CallRate:
    """Every purpose's tries over the last ``window_s`` seconds, and the rows in flight now."""
    end = now() if at is None else at
    with read(engine) as s:
        top = s.exec(select(func.max(col(ModelCall.id)))).one() or 0
        found = s.exec(select(*_COLUMNS).where(
            col(ModelCall.id) > top - RECENT_ROWS, col(ModelCall.status).in_(_TRIES),
            col(ModelCall.finished_at) >= end - window_s)).all()
        open_rows = s.exec(select(func.count()).select_from(ModelCall).where(ModelCall.status == "in_flight")).one()
    return rate_of([(st, err, float(lat), float(fin or 0.0)) for st, err, lat, fin in found], (end - window_s, end),
                   int(open_rows))
