"""Rows of a view turned into display tables (chosen columns, headers and number formats) and report sections.

Cells come back as plain strings; the HTML template escapes them (model output is untrusted) and the
terminal prints them as text, never as markup.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any


def _bounds(low: float | None, high: float | None, pattern: str) -> str:
    if low is None or high is None:
        return "[—]"  # one unit resampled: no interval (not a zero-width one)
    return f"[{pattern.format(100 * low)}, {pattern.format(100 * high)}]"


def fmt(value: Any, kind: str) -> str:
    """One cell: pct (share → percent), pts (share difference → points), ci / cipts (an interval of
    analytics.intervals: "62.5 [51.0, 73.2]", "+12.5 [-3.0, +27.9]"), p (a p-value), usd, int, hours,
    num, text."""
    if value is None:
        return "—"
    if kind == "ci":  # † : the interval's caution (a rate near 0 / 100 % from few clusters, small_sample)
        mark = " †" if getattr(value, "caution", None) else ""
        return f"{100 * value.estimate:.1f} {_bounds(value.low, value.high, '{:.1f}')}{mark}"
    if kind == "cipts":
        return f"{100 * value.estimate:+.1f} {_bounds(value.low, value.high, '{:+.1f}')}"
    if kind == "p":
        p = value.p_value if hasattr(value, "p_value") else value
        if p is None:
            return "—"
        holm = getattr(value, "p_holm", None)
        return _p(p) + ("" if holm is None else f" (Holm {_p(holm)})")
    if kind == "pct":
        return f"{100 * float(value):.1f}"
    if kind == "pct2":
        return f"{100 * float(value):.2f}"
    if kind == "pts":
        return f"{100 * float(value):+.1f}"
    if kind == "usd":
        return f"{float(value):,.2f}"
    if kind == "usd3":
        return f"{float(value):,.3f}"
    if kind == "int":
        return f"{int(value):,}"
    if kind == "hours":
        return f"{float(value):.2f}"
    if kind == "num":
        return f"{float(value):.1f}"
    if kind == "bool":
        return "yes" if value else "no"
    return str(value)


def _p(p: float) -> str:
    return "<0.001" if p < 0.001 else f"{p:.3f}"


@dataclass(frozen=True)
class Col:
    key: str
    header: str
    kind: str = "text"


@dataclass
class DisplayTable:
    headers: list[str]
    rows: list[list[str]] = field(default_factory=list)
    numeric: list[bool] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.rows)


@dataclass
class Section:
    """One section of the report: tables, figures (alt text, data URI) and, for the hardest pairs, examples."""

    id: str
    title: str
    note: str = ""
    tables: list[tuple[str, DisplayTable]] = field(default_factory=list)
    figures: list[tuple[str, str]] = field(default_factory=list)
    examples: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class Deferred:
    """A section still being computed elsewhere (a forked child, analytics/forked.py): ``finish()`` waits
    for it and lays it out; ``cancel()`` ends the work when the section is no longer wanted."""

    finish: Callable[[], Section]
    cancel: Callable[[], None]


#: the leaderboard's overall table (rate_sections.py), which the CLI also reads back from a kept page
LEADERBOARD_COLS = [Col("judge_shown", "Judge"), Col("retrieved_ci", "Retrieved % [CI]", "ci"),
                    Col("uniform_ci", "Uniform % [CI]", "ci"), Col("difference_ci", "Δ pts [CI]", "cipts"),
                    Col("difference_ci", "p (Δ)", "p"), Col("n_retrieved", "Pairs", "int"),
                    Col("no_verdict_retrieved", "No verdict", "int"), Col("errors_retrieved", "Errors", "int"),
                    Col("status", "Status"),
                    # issue 40: how the replies ended, and the flag of a run over [analytics] max_*_share
                    Col("verdicts_retrieved", "Verdicts (retrieved)"), Col("health", "Verdict health")]

def display(rows: Sequence[dict[str, Any]], columns: Sequence[Col]) -> DisplayTable:
    return DisplayTable(
        headers=[c.header for c in columns],
        rows=[[fmt(row.get(c.key), c.kind) for c in columns] for row in rows],
        numeric=[c.kind != "text" for c in columns],
    )


def generic(rows: Sequence[dict[str, Any]]) -> DisplayTable:
    """Every column of a view we know nothing about (a view another part of the tool adds)."""
    if not rows:
        return DisplayTable(headers=[])
    keys = list(rows[0])
    kinds = ["num" if isinstance(rows[0][k], float) else "int" if isinstance(rows[0][k], int) and
             not isinstance(rows[0][k], bool) else "text" for k in keys]
    return display(rows, [Col(k, k, kind) for k, kind in zip(keys, kinds, strict=True)])


def pivot(rows: Sequence[dict[str, Any]], row_key: str, col_key: str, value_key: str, *, kind: str,
          col_order: Sequence[str] | None = None, row_header: str = "") -> DisplayTable:
    """A row_key × col_key table of value_key (e.g. judge × domain accuracy)."""
    cols = list(col_order) if col_order else sorted({str(r[col_key]) for r in rows})
    seen: dict[str, dict[str, Any]] = {}
    for r in rows:
        seen.setdefault(str(r[row_key]), {})[str(r[col_key])] = r[value_key]
    table = DisplayTable(headers=[row_header or row_key, *cols], numeric=[False] + [True] * len(cols))
    for name, values in seen.items():
        table.rows.append([name, *(fmt(values.get(c), kind) for c in cols)])
    return table


def interval_label(seed: int, resamples: int, level: float, unit: str) -> str:
    """How every interval and p-value of a page was computed (rates.Bootstrap's ``label``; here, without
    NumPy, so that a report whose sections are kept can say it, issue 26)."""
    return (f"{round(100 * level)} % intervals over {unit}s (K {unit}s): rates of counts by the beta-binomial "
            f"profile likelihood (t on Satterthwaite's df, K − 1 below 10 {unit}s), other rates by Wilson's score "
            f"interval with the clusters' design effect, differences by a cluster-robust (CR2) t on K − 1 df; "
            f"each p is its "
            f"interval's own test (paired differences also checked by an exact sign-flip test over {unit}s, "
            f"seed {seed} where it must draw {resamples}); † a rate near 0 or 100 % from fewer than 100 {unit}s: "
            f"its interval may be too narrow if the errors sit in a few {unit}s")


def settings_interval_label(settings: Any) -> str:
    """``interval_label`` of the project's settings ([project] seed, [analytics] bootstrap_*, confidence)."""
    a = settings.analytics
    return interval_label(settings.project.seed, a.bootstrap_resamples, a.confidence, a.bootstrap_unit)
