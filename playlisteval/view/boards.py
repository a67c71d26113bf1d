"""The viewer's summary pages, computed by the analytics' own functions (issue 22: the same numbers as
`leaderboard`, `eval runs` and the report): the leaderboard with its intervals (rate_sections.leaderboard),
the runs (view run_status, main or sweep by the analytics' own rule) each with its accuracy interval
(rates.judge_run), and the sweeps (rate_sections.sweeps).

A page opens the analytics once (the project's analytics file, brought up to date incrementally; a
store another process holds is read directly) and closes it again, so the viewer never holds the file.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import Engine

from playlisteval.analytics import Analytics, rate_sections, rates, verdict_health
from playlisteval.analytics.intervals import Interval
from playlisteval.analytics.rates import Bootstrap, shown_name
from playlisteval.analytics.tabular import Section, fmt
from playlisteval.config import Settings


def _bench(benchmark: dict[str, Any] | None) -> dict[str, Any] | None:
    """The analytics' benchmark key: its id and name."""
    return {"id": benchmark["id"], "name": benchmark["name"]} if benchmark else None


def leaderboard(engine: Engine, settings: Settings, benchmark: dict[str, Any] | None) -> dict[str, Any]:
    """The report's leaderboard section (overall, per domain, judge − judge), as display tables."""
    boot = Bootstrap.of(settings)
    with Analytics(engine, settings) as an:
        bench = _bench(benchmark)
        section: Section = rate_sections.leaderboard(an, bench, boot)
        unfinished = [r for r in an.rows("SELECT * FROM run_status WHERE benchmark_id = ? AND main AND "
                                         "state <> 'finished' ORDER BY run_id", [bench["id"]])] if bench else []
        # issue 40: runs whose replies are mostly no verdict (or one letter), named above the tables
        unhealthy = [r for r in verdict_health.flagged_runs(an, bench) if r["main"]] if bench else []
    return {"section": section, "label": boot.label, "unfinished": unfinished, "unhealthy": unhealthy}


def _ci(value: Interval | None) -> str:
    return fmt(value, "ci")


def runs(engine: Engine, settings: Settings, benchmark: dict[str, Any] | None) -> dict[str, Any]:
    """Every judge run of the benchmark (main or sweep, state, counts, accuracy with its interval) and the
    sweeps table beside each judge's main run."""
    boot = Bootstrap.of(settings)
    with Analytics(engine, settings) as an:
        bench = _bench(benchmark)
        where, params = ("benchmark_id = ?", [bench["id"]]) if bench else ("true", [])
        rows = an.rows(f"SELECT * FROM run_status WHERE {where} ORDER BY run_id", params)
        for r in rows:
            overall, _by_domain = rates.judge_run(an, int(r["run_id"]), boot)
            r["accuracy"] = _ci(overall)
            r["judge_shown"] = shown_name(str(r["judge"]))
        sweeps = rate_sections.sweeps(an, bench, boot)
    return {"runs": rows, "sweeps": sweeps, "label": boot.label, "rule": verdict_health.rule(settings)}
