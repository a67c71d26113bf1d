"""Verdict health of judge runs (issue 40): how a run's replies ended, read from the view ``verdict_health``.

A reply without a verdict scores 0.5 (SPEC G4), so a judge that never answers reads as a 50 % judge, and
one that always says A reads as the share of pairs whose better answer sits on A. The view counts, per
run, the replies without a verdict (of them refusals and ties), the verdicts per letter, and flags a run
over ``[analytics] max_no_verdict_share`` / ``max_one_letter_share``. This module hands those rows to the
commands (`eval judge`, `eval runs`), which show them beside accuracy and warn; the leaderboard, sweeps,
report and viewer read the same columns from the views (run_status, judge_sweeps, leaderboard).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from playlisteval.logs import get_logger

if TYPE_CHECKING:
    from playlisteval.analytics.rates import RunIntervals
    from playlisteval.analytics.runner import Analytics
    from playlisteval.config import Settings

log = get_logger(__name__)


@dataclass(frozen=True)
class Health:
    """One run's row of ``verdict_health`` (shares None where there is nothing to divide)."""

    run_id: int
    judged: int
    no_verdict: int  # replies without [[A]] / [[B]], refusals and ties included: each scored 0.5
    refusals: int
    ties: int
    verdicts_a: int
    verdicts_b: int
    no_verdict_share: float | None
    refusal_share: float | None
    tie_share: float | None
    a_share: float | None  # of the verdicts
    one_letter_share: float | None  # of the verdicts, the commoner letter's
    letter: str | None  # that letter
    letter_better: int  # pairs with that letter's verdict… whose better answer sits on it
    no_verdict_flagged: bool
    one_letter_flagged: bool
    flagged: bool
    health: str  # '' or 'unhealthy: 44/44 no verdict (over 20 %)'
    verdicts_mix: str  # '2/44 no verdict (1 refusal) · A 52 %'

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


FIELDS = tuple(Health.__dataclass_fields__)


def run_health(an: Analytics, run_ids: Sequence[int] | None = None) -> dict[int, Health]:
    """The runs' verdict health (every run when ``run_ids`` is None)."""
    columns = ", ".join(FIELDS)
    if run_ids is None:
        rows = an.rows(f"SELECT {columns} FROM verdict_health ORDER BY run_id")
    elif not run_ids:
        return {}
    else:
        marks = ", ".join("?" for _ in run_ids)
        rows = an.rows(f"SELECT {columns} FROM verdict_health WHERE run_id IN ({marks}) ORDER BY run_id",
                       [int(r) for r in run_ids])
    found = {int(r["run_id"]): Health(**r) for r in rows}
    flagged = [run for run, h in found.items() if h.flagged]
    if flagged:  # what the tables show, in the log too: a script reading logs sees it
        log.info("verdict_health.flagged", runs=flagged)
    return found


def health_of(settings: Settings, run_ids: Sequence[int] | None = None) -> dict[int, Health]:
    """``run_health`` in its own analytics session (the project's analytics file, kept up to date)."""
    from playlisteval.analytics.runner import Analytics
    from playlisteval.store import open_store

    with Analytics(open_store(settings), settings) as an:
        return run_health(an, run_ids)


def judge_run_checks(settings: Settings, run_ids: Sequence[int]) -> tuple[dict[int, RunIntervals],
                                                                          dict[int, Health]]:
    """What `eval judge` prints beside each run's accuracy: its intervals (rates.judge_run) and its
    verdict health, from one analytics session (the views are made once, not twice)."""
    from playlisteval.analytics.rates import Bootstrap, judge_run
    from playlisteval.analytics.runner import Analytics
    from playlisteval.store import open_store

    boot = Bootstrap.of(settings)
    with Analytics(open_store(settings), settings) as an:
        return {run_id: judge_run(an, run_id, boot) for run_id in run_ids}, run_health(an, run_ids)


def flagged_runs(an: Analytics, bench: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The runs of the benchmark (every one when None) flagged unhealthy, main runs first (run_status)."""
    where, params = ("benchmark_id = ?", [int(bench["id"])]) if bench else ("true", [])
    return an.rows(f"SELECT * FROM run_status WHERE {where} AND flagged "
                   "ORDER BY NOT main, judge, evidence, scope, swapped, run_id", params)


def flagged_said(rows: Sequence[dict[str, Any]]) -> str:
    """The flagged runs in a sentence for a page's notes ('' when none)."""
    if not rows:
        return ""
    said = "; ".join(f"run {r['run_id']} {r['judge']} ({r['evidence']}, {r['scope']}"
                     + (", swapped" if r["swapped"] else "") + ("" if r["main"] else ", sweep") + f"): {r['health']}"
                     for r in rows)
    return f" Flagged unhealthy (their accuracy is not a measurement of judging): {said}."


def rule(settings: Settings | None) -> str:
    """The flag's rule in a sentence, with the configured shares (a table's note)."""
    from playlisteval.config import AnalyticsSettings

    a = settings.analytics if settings is not None else AnalyticsSettings()
    return (f"Verdicts: replies without a verdict (scored 0.5; refusals and ties among them) and the share of "
            f"verdicts that are A; a run with more than {100 * a.max_no_verdict_share:g} % no verdict, or more "
            f"than {100 * a.max_one_letter_share:g} % of its verdicts one letter, is flagged unhealthy: its "
            f"accuracy is not a measurement of judging ([analytics] max_no_verdict_share, max_one_letter_share)")


def consequence(h: Health) -> str:
    """What the flag means for the run's accuracy, in the words of a warning."""
    parts = []
    if h.no_verdict_flagged:
        parts.append("its accuracy is mostly the 0.5 each reply without a verdict scores, not a measurement")
    if h.one_letter_flagged:
        parts.append(f"its accuracy mostly says how many better answers sit on {h.letter}")
    return "; ".join(parts)
