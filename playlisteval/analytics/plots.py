"""The report's figures: matplotlib drawn to SVG, handed back as ``data:`` URIs for ``<img>`` tags.

An SVG shown through ``<img>`` cannot run script, so judge names or any other text drawn into a figure
cannot inject anything into the report, whatever they contain. The figures are deterministic (fixed
hash salt, no date) so two reports of the same store are byte-identical. A value given as an
``Interval`` (analytics/intervals.py) is drawn at its estimate with its interval as an error bar.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")  # no display, ever

from matplotlib.axes import Axes  # noqa: E402  (after the backend is chosen)
from matplotlib.figure import Figure  # noqa: E402

from playlisteval.analytics.intervals import Interval  # noqa: E402

Value = float | Interval | None  # a share (0–1), a share with its interval, or nothing

# svg.fonttype "none": text stays text (XML-escaped by matplotlib) instead of every glyph drawn as a path —
# half the time of a figure and a third smaller; the viewer's sans-serif font draws it
_STYLE: Any = {"svg.hashsalt": "playlisteval", "svg.fonttype": "none", "font.size": 9, "axes.spines.top": False,
          "axes.spines.right": False}


def _uri(fig: Figure) -> str:
    buffer = io.BytesIO()
    with matplotlib.rc_context(_STYLE):
        fig.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    return "data:image/svg+xml;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _percent_axis(ax: Axes, label: str) -> None:
    ax.set_ylim(0, 103)  # room above 100 for a marker at 100
    ax.set_yticks(range(0, 101, 20))
    ax.set_ylabel(label)
    ax.axhline(50, color="0.6", linewidth=0.8, linestyle=":")  # chance for a pairwise choice


def _point(value: Value) -> float | None:
    if isinstance(value, Interval):
        return 100 * value.estimate
    return None if value is None else 100 * value


def _error(value: Value) -> tuple[float, float]:
    """(below, above) the estimate in percent points; 0 for a plain value or one without an interval."""
    if isinstance(value, Interval) and value.low is not None and value.high is not None:
        return 100 * max(value.estimate - value.low, 0.0), 100 * max(value.high - value.estimate, 0.0)
    return 0.0, 0.0


def grouped_bars(categories: Sequence[str], series: Mapping[str, Sequence[Value]], *, ylabel: str,
                 title: str) -> str:
    """Bars per category, one colour per series; values are shares (0–1) drawn as percent, intervals as
    error bars."""
    with matplotlib.rc_context(_STYLE):
        fig = Figure(figsize=(max(4.0, 0.9 * len(categories) + 2), 3.2))
        ax = fig.subplots()
        width = 0.8 / max(len(series), 1)
        for i, (name, values) in enumerate(series.items()):
            xs = [c + (i - (len(series) - 1) / 2) * width for c in range(len(categories))]
            # no value (not run, nothing judged) is no bar: NaN draws nothing, where 0.0 would read as 0 %
            ys = [p if (p := _point(v)) is not None else float("nan") for v in values]
            errors = [_error(v) for v in values]
            ax.bar(xs, ys, width=width, label=name, yerr=[[e[0] for e in errors], [e[1] for e in errors]],
                   error_kw={"elinewidth": 0.8, "capsize": 2, "ecolor": "0.25"})
        ax.set_xticks(range(len(categories)), list(categories), rotation=30, ha="right")
        _percent_axis(ax, ylabel)
        ax.set_title(title)
        if len(series) > 1:
            ax.legend(frameon=False, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        return _uri(fig)


def lines(xs: Sequence[str], series: Mapping[str, Sequence[Value]], *, xlabel: str, ylabel: str,
          title: str) -> str:
    """One line per series over categorical x values; values are shares (0–1) drawn as percent,
    intervals as error bars (the series nudged apart so their bars do not overlap)."""
    with matplotlib.rc_context(_STYLE):
        fig = Figure(figsize=(5.5, 3.2))
        ax = fig.subplots()
        for n, (name, values) in enumerate(series.items()):
            nudge = 0.06 * (n - (len(series) - 1) / 2) if len(series) > 1 else 0.0
            points = [(i + nudge, y, _error(v)) for i, v in enumerate(values) if (y := _point(v)) is not None]
            if points:
                ax.errorbar([p[0] for p in points], [p[1] for p in points],
                            yerr=[[p[2][0] for p in points], [p[2][1] for p in points]], marker="o", label=name,
                            capsize=2, elinewidth=0.8, clip_on=False)
        ax.set_xticks(range(len(xs)), list(xs))
        ax.set_xlim(-0.5, len(xs) - 0.5)  # a single x value stays a point, not a spread of nudged series
        ax.set_xlabel(xlabel)
        _percent_axis(ax, ylabel)
        ax.set_title(title)
        # beside the axes: with a panel of judges a legend inside would cover the lines
        ax.legend(frameon=False, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        return _uri(fig)
