"""The judgments failure attribution classifies (attribution.py): each run's judgments that are not a win,
in pair order, as columns with their pair's item, answer set and ratings.

Two readers give the same columns. ``from_store`` reads the store in one query (`eval attribute RUN`, and
any caller holding only an engine), evidence records included. ``from_analytics`` reads the analytics
file's copy of the judgments (the report: the rows every other section counts), as NumPy columns rather
than a driver's tuples — at 1M judgments the store's 300k losses cost ~0.6 CPU-s as tuples (issue 43).
That copy leaves the bulky evidence records out (runner.HEAVY_COLUMNS), so they are read from the store,
by judgment id, for only the rows that need one: a wrong verdict (its category reads what was served) and
the examples shown. A judgment the copy holds that the store no longer has (dropped meanwhile) is an
error, never a judgment without evidence.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import text
from sqlalchemy.engine import Engine

from playlisteval.store.engine import read_core

if TYPE_CHECKING:
    from playlisteval.analytics.runner import Analytics

IDS_PER_READ = 500  # evidence read by id in IN lists of this many (SQLite's old variable limit is 999)
# Plain SQL over the store's tables rather than its SQLModel classes: importing those (store.tables) was
# ~0.25 CPU-s of a cold report, spent only here (issue 43). The evidence comes as the driver reads it (text
# on SQLite, decoded JSON on PostgreSQL), as the classes' column typed as a string gave it.
_LOSSES = ("SELECT j.run_id, j.pair_id, j.outcome, j.score, j.verdict, j.evidence, p.item_id, p.set_id, "
           "p.better_rating, p.worse_rating FROM judgment AS j JOIN pair AS p ON p.id = j.pair_id "
           "WHERE j.run_id IN ({runs}) AND j.score < 1.0 ORDER BY j.run_id, j.pair_id")
_EVIDENCE = "SELECT id, evidence FROM judgment WHERE id IN ({ids})"


@dataclass
class Losses:
    """One run's judgments that are not a win, in pair order. ``records(positions)``: the evidence
    records, as read (text, or what the driver decoded), of the rows at those positions."""

    pair: list[int]
    item: NDArray[np.int64]
    set_id: list[int]
    outcome: list[str | None]
    score: NDArray[np.float64]
    verdict: list[str | None]
    better: list[int]
    worse: list[int]
    records: Callable[[list[int]], list[Any]]

    def __len__(self) -> int:
        return len(self.pair)


def _empty() -> Losses:
    return Losses([], np.zeros(0, np.int64), [], [], np.zeros(0, np.float64), [], [], [], lambda _: [])


def from_store(s: Any, run_ids: Sequence[int]) -> dict[int, Losses]:
    """Every judgment of ``run_ids`` that is not a win, by run: one query for all runs, on the driver's own
    cursor (SQLAlchemy's rows cost more than the query at 200k losses), evidence as read (decoded only where
    a category or an example reads it: decoding every record was most of the report's attribution)."""
    if not run_ids:
        return {}
    connection = s.connection() if callable(s.connection) else s  # a Session's connection, or a Core one
    # run ids are integers, written as literals: a driver's own placeholders differ (qmark, pyformat)
    sql = _LOSSES.format(runs=", ".join(str(int(r)) for r in run_ids))
    cursor = connection.connection.driver_connection.cursor()
    try:
        cursor.execute(sql)
        rows = cursor.fetchall()
    finally:
        cursor.close()
    by_run: dict[int, list[tuple[Any, ...]]] = {int(r): [] for r in run_ids}
    for row in rows:
        by_run[row[0]].append(row)
    return {r: _columns(found) for r, found in by_run.items()}


def _columns(rows: list[tuple[Any, ...]]) -> Losses:
    if not rows:
        return _empty()
    columns = (list(c) for c in zip(*rows, strict=True))  # transposed in C
    _run, pair, outcome, score, verdict, evidence, item, set_id, better, worse = columns
    return Losses(pair, np.array(item, dtype=np.int64), set_id, outcome, np.array(score, dtype=np.float64),
                  verdict, better, worse, lambda positions: [evidence[i] for i in positions])


def from_analytics(an: Analytics, engine: Engine, run_ids: Sequence[int]) -> dict[int, Losses]:
    """``from_store``'s columns from the analytics file's judgments; evidence from the store by id."""
    if not run_ids:
        return {}
    runs = ", ".join(str(int(r)) for r in run_ids)
    got = an.arrays("SELECT j.id, j.run_id, j.pair_id, j.outcome, j.score, j.verdict, p.item_id, p.set_id, "
                    "p.better_rating, p.worse_rating FROM judgment AS j JOIN pair AS p ON p.id = j.pair_id "
                    f"WHERE j.run_id IN ({runs}) AND j.score < 1.0 ORDER BY j.run_id, j.pair_id")
    run = np.asarray(got["run_id"], dtype=np.int64)
    ids = np.asarray(got["id"], dtype=np.int64)
    item = np.asarray(got["item_id"], dtype=np.int64)
    score = np.asarray(got["score"], dtype=np.float64)
    # object columns with NULLs come masked: tolist() gives None where NULL, as the store's driver does
    pair, set_id, outcome, verdict, better, worse = (got[c].tolist() for c in (
        "pair_id", "set_id", "outcome", "verdict", "better_rating", "worse_rating"))
    out: dict[int, Losses] = {}
    for r in run_ids:
        lo, hi = int(np.searchsorted(run, int(r), "left")), int(np.searchsorted(run, int(r), "right"))
        out[int(r)] = Losses(pair[lo:hi], item[lo:hi], set_id[lo:hi], outcome[lo:hi], score[lo:hi],
                             verdict[lo:hi], better[lo:hi], worse[lo:hi], _store_records(engine, ids[lo:hi]))
    return out


def _store_records(engine: Engine, ids: NDArray[np.int64]) -> Callable[[list[int]], list[Any]]:
    def records(positions: list[int]) -> list[Any]:
        wanted = sorted({int(ids[i]) for i in positions})
        found: dict[int, Any] = {}
        if wanted:
            with read_core(engine) as s:
                for start in range(0, len(wanted), IDS_PER_READ):
                    part = wanted[start:start + IDS_PER_READ]
                    rows = s.execute(text(_EVIDENCE.format(ids=", ".join(str(i) for i in part)))).all()
                    found.update((int(i), evidence) for i, evidence in rows)
        if missing := [i for i in wanted if i not in found]:
            raise LookupError(f"judgment {missing[0]} is in the analytics copy but no longer in the store (dropped "
                              "while the report ran?): run the report again")
        return [found[int(ids[i])] for i in positions]

    return records
