"""`eval judge --samples N --temperature T` (issue 21): the stability of one judge's N samples, computed
from the verdicts the store now holds and printed beside the runs.

Why a module: the command only loops over the samples; what they say together is the report's own
figure (analytics/trust.py ``sample_stability`` over analytics/stability.py), read through the same
analytics views, so the terminal, ``--json`` and the report's trust section show the same numbers.
"""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text

from playlisteval.commands.support import console
from playlisteval.config import Settings


def sample_stability(settings: Settings, benchmark_id: int, judge: str, runs: list[int]) -> dict[str, Any]:
    """Expected and consensus accuracy and consistency of ``runs`` (one judge's samples), with intervals
    by the configured bootstrap unit; ``simulated`` when the store holds anything the sim made."""
    from playlisteval.analytics import Analytics, trust, trust_data
    from playlisteval.analytics.rates import Bootstrap, is_simulated
    from playlisteval.store import open_store

    engine = open_store(settings)
    with Analytics(engine, settings) as an:
        obs = trust_data.load(an, {"id": benchmark_id})
    return {**trust.sample_stability(obs, judge, runs, Bootstrap.of(settings)), "simulated": is_simulated(engine)}


def _cell(d: dict[str, Any] | None) -> str:
    if not d or d.get("estimate") is None:
        return "—" + (f" ({d['note']})" if d and d.get("note") else "")
    ci = "" if d.get("low") is None else f" [{100 * d['low']:.1f}, {100 * d['high']:.1f}]"
    return f"{100 * d['estimate']:.1f}{ci}"


def print_stability(fig: dict[str, Any]) -> None:
    """The figures as a table (rates in %, intervals in brackets)."""
    title = (f"Stability of {fig['judge']} over {fig['samples']} samples at temperature {fig['temperature']}"
             + (" (SIMULATED)" if fig.get("simulated") else ""))
    if fig.get("note"):
        console.print(Text(f"{title}: {fig['note']}"))
        return
    table = Table("Figure", "% [CI]", "Method", title=title,
                  caption=f"{fig['pairs']} pairs, {fig['clusters']} clusters, {fig['resamples']} resamples; "
                          f"{fig['no_verdicts']} no-verdict(s)")
    for key, label in (("expected_accuracy", "expected accuracy"), ("consensus_accuracy", "consensus accuracy"),
                       ("consistency", "consistency (all samples agree)"), ("consensus_gain", "consensus − expected")):
        table.add_row(label, Text(_cell(fig.get(key))), Text(str((fig.get(key) or {}).get("method", ""))))
    console.print(table)
