"""The report's figures: SVG written directly, handed back as ``data:`` URIs for ``<img>`` tags.

An SVG shown through ``<img>`` cannot run script, so judge names or any other text drawn into a figure
cannot inject anything into the report, whatever they contain (and every text is XML-escaped here).
The figures are plain strings of fixed-precision numbers, so two reports of the same store are
byte-identical. A value given as an ``Interval`` (analytics/intervals.py) is drawn at its estimate
with its interval as an error bar.

Written by hand rather than by matplotlib (issue 13): the two kinds of figure the report needs —
grouped bars and lines over categories, on a 0–100 % axis — cost matplotlib ~0.15–0.3 s each to lay
out and save (and ~0.4 s to import); this takes milliseconds. Text is sized by an estimate of the
viewer's sans-serif font (0.6 em a character), as matplotlib's "svg.fonttype: none" left it to the
viewer too.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Mapping, Sequence
from xml.sax.saxutils import escape

from playlisteval.analytics.intervals import Interval

Value = float | Interval | None  # a share (0–1), a share with its interval, or nothing

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf")
FONT = 9.0  # px: tick labels, axis labels
SMALL = 8.0  # px: legend
CHAR = 0.6  # estimated width of a character, in em
PX_PER_INCH = 72.0  # the figures' sizes are given in inches, as before


def _point(value: Value) -> float | None:
    if isinstance(value, Interval):
        return 100 * value.estimate
    return None if value is None else 100 * value


def _error(value: Value) -> tuple[float, float]:
    """(below, above) the estimate in percent points; 0 for a plain value or one without an interval."""
    if isinstance(value, Interval) and value.low is not None and value.high is not None:
        return 100 * max(value.estimate - value.low, 0.0), 100 * max(value.high - value.estimate, 0.0)
    return 0.0, 0.0


def _n(x: float) -> str:
    return f"{x:.2f}".rstrip("0").rstrip(".")


def _text(x: float, y: float, text: str, *, size: float = FONT, anchor: str = "middle", rotate: float = 0.0,
          baseline: str = "auto", weight: str = "") -> str:
    turn = f' transform="rotate({_n(rotate)} {_n(x)} {_n(y)})"' if rotate else ""
    bold = f' font-weight="{weight}"' if weight else ""
    return (f'<text x="{_n(x)}" y="{_n(y)}" font-size="{_n(size)}" text-anchor="{anchor}" '
            f'dominant-baseline="{baseline}"{bold}{turn}>{escape(text)}</text>')


def _width(text: str, size: float = FONT) -> float:
    return len(text) * CHAR * size


class _Canvas:
    """A figure: a plot area on a 0–103 % axis over categories -0.5 … n − 0.5 (plus a margin), with its
    title, axes, chance line and legend."""

    def __init__(self, width_in: float, height_in: float, n: int, labels: Sequence[str], *, rotate: bool,
                 legend: Sequence[str], ylabel: str, title: str, xlabel: str = "", x_margin: float = 0.0) -> None:
        self.parts: list[str] = []
        self.plot_w = width_in * PX_PER_INCH * 0.78
        self.plot_h = height_in * PX_PER_INCH * 0.72
        longest = max((_width(label) for label in labels), default=0.0)
        below = (longest * math.sin(math.radians(30)) + FONT + 8) if rotate else FONT + 8
        self.left, self.top = 44.0, 22.0
        self.x0, self.x1 = -0.5 - x_margin, n - 0.5 + x_margin
        if rotate:  # room on the left for the first labels, which reach left of their ticks
            slant = math.cos(math.radians(30))
            self.left += max([0.0] + [_width(label) * slant - (self.x(i) - self.left) + 4
                                      for i, label in enumerate(labels[:n])])
        self.bottom = self.top + self.plot_h
        legend_w = (max(_width(name, SMALL) for name in legend) + 34) if legend else 8.0
        self.width = self.left + self.plot_w + legend_w
        self.height = max(self.bottom + below + (FONT + 6 if xlabel else 0) + 4,
                          self.top + len(legend) * (SMALL + 5) + 8)  # a long legend makes the figure taller
        self.legend = legend
        self._axes(n, labels, rotate=rotate, ylabel=ylabel, title=title, xlabel=xlabel, below=below)

    def x(self, value: float) -> float:
        return self.left + (value - self.x0) / (self.x1 - self.x0) * self.plot_w

    def y(self, percent: float) -> float:
        return self.bottom - percent / 103.0 * self.plot_h

    def _axes(self, n: int, labels: Sequence[str], *, rotate: bool, ylabel: str, title: str, xlabel: str,
              below: float) -> None:
        p = self.parts
        for tick in range(0, 101, 20):
            y = self.y(tick)
            p.append(f'<line x1="{_n(self.left - 3.5)}" y1="{_n(y)}" x2="{_n(self.left)}" y2="{_n(y)}" '
                     'stroke="#000" stroke-width="0.8"/>')
            p.append(_text(self.left - 6, y, str(tick), anchor="end", baseline="central"))
        p.append(f'<line x1="{_n(self.left)}" y1="{_n(self.y(50))}" x2="{_n(self.left + self.plot_w)}" '
                 f'y2="{_n(self.y(50))}" stroke="#999" stroke-width="0.8" stroke-dasharray="1,2"/>')
        for i, label in enumerate(labels[:n]):
            x = self.x(i)
            p.append(f'<line x1="{_n(x)}" y1="{_n(self.bottom)}" x2="{_n(x)}" y2="{_n(self.bottom + 3.5)}" '
                     'stroke="#000" stroke-width="0.8"/>')
            if rotate:  # as matplotlib's rotation=30, ha="right": the label ends under its tick
                p.append(_text(x, self.bottom + 12, label, anchor="end", rotate=-30))
            else:
                p.append(_text(x, self.bottom + 6 + FONT, label))
        p.append(_text(12, self.top + self.plot_h / 2, ylabel, rotate=-90, baseline="central"))
        p.append(_text(self.left + self.plot_w / 2, self.top - 8, title, size=FONT * 1.2))
        if xlabel:
            p.append(_text(self.left + self.plot_w / 2, self.bottom + below + FONT, xlabel))

    def error_bar(self, x: float, y: float, error: tuple[float, float], color: str) -> None:
        if error == (0.0, 0.0):
            return
        low, high = self.y(y - error[0]), self.y(y + error[1])
        self.parts.append(f'<path d="M{_n(x)} {_n(low)}V{_n(high)}M{_n(x - 2)} {_n(low)}H{_n(x + 2)}'
                          f'M{_n(x - 2)} {_n(high)}H{_n(x + 2)}" stroke="{color}" stroke-width="0.8" fill="none"/>')

    def finish(self, keys: Sequence[str]) -> str:
        p = self.parts
        p.append(f'<path d="M{_n(self.left)} {_n(self.top)}V{_n(self.bottom)}H{_n(self.left + self.plot_w)}" '
                 'stroke="#000" stroke-width="0.8" fill="none"/>')
        lx = self.left + self.plot_w + 8
        for i, (name, key) in enumerate(zip(self.legend, keys, strict=True)):
            y = self.top + 4 + i * (SMALL + 5)
            p.append(key.format(x=_n(lx), y=_n(y), xm=_n(lx + 8), x2=_n(lx + 16), ym=_n(y - 3)))
            p.append(_text(lx + 22, y, name, size=SMALL, anchor="start", baseline="central"))
        body = "".join(p)
        svg = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{_n(self.width)}" height="{_n(self.height)}" '
               f'viewBox="0 0 {_n(self.width)} {_n(self.height)}" font-family="sans-serif">'
               f'<rect width="100%" height="100%" fill="#fff"/>{body}</svg>')
        return "data:image/svg+xml;base64," + base64.b64encode(svg.encode("utf-8")).decode("ascii")


def grouped_bars(categories: Sequence[str], series: Mapping[str, Sequence[Value]], *, ylabel: str,
                 title: str) -> str:
    """Bars per category, one colour per series; values are shares (0–1) drawn as percent, intervals as
    error bars."""
    names = list(series)
    canvas = _Canvas(max(4.0, 0.9 * len(categories) + 2), 3.2, len(categories), list(categories), rotate=True,
                     legend=names if len(names) > 1 else [], ylabel=ylabel, title=title, x_margin=0.1)
    width = 0.8 / max(len(names), 1)
    for i, name in enumerate(names):
        color = PALETTE[i % len(PALETTE)]
        for c, value in enumerate(series[name]):
            y = _point(value)
            if y is None or math.isnan(y):  # no value (not run, nothing judged) is no bar, not a bar at 0 %
                continue
            middle = c + (i - (len(names) - 1) / 2) * width
            left, right = canvas.x(middle - width / 2), canvas.x(middle + width / 2)
            top, base = canvas.y(max(y, 0.0)), canvas.y(0)
            canvas.parts.append(f'<rect x="{_n(left)}" y="{_n(top)}" width="{_n(right - left)}" '
                                f'height="{_n(base - top)}" fill="{color}"/>')
            canvas.error_bar(canvas.x(middle), y, _error(value), "#404040")
    keys = [f'<rect x="{{x}}" y="{{ym}}" width="12" height="6" fill="{PALETTE[i % len(PALETTE)]}"/>'
            for i in range(len(canvas.legend))]
    return canvas.finish(keys)


def lines(xs: Sequence[str], series: Mapping[str, Sequence[Value]], *, xlabel: str, ylabel: str,
          title: str, dashed: Sequence[str] = ()) -> str:
    """One line per series over categorical x values; values are shares (0–1) drawn as percent,
    intervals as error bars (the series nudged apart so their bars do not overlap). Series named in
    ``dashed`` are drawn dashed (the scope figure's uniform-evidence lines), in the legend too."""
    names = list(series)
    canvas = _Canvas(5.5, 3.2, len(xs), list(xs), rotate=False, legend=names, ylabel=ylabel, title=title,
                     xlabel=xlabel)
    for n, name in enumerate(names):
        color = PALETTE[n % len(PALETTE)]
        nudge = 0.06 * (n - (len(names) - 1) / 2) if len(names) > 1 else 0.0
        points = [(canvas.x(i + nudge), y, _error(v)) for i, v in enumerate(series[name])
                  if (y := _point(v)) is not None and not math.isnan(y)]
        if not points:
            continue
        path = "".join(f"{'M' if k == 0 else 'L'}{_n(px)} {_n(canvas.y(y))}" for k, (px, y, _) in enumerate(points))
        dash = ' stroke-dasharray="4 3"' if name in dashed else ""
        canvas.parts.append(f'<path d="{path}" stroke="{color}" stroke-width="1.5" fill="none"{dash}/>')
        for px, y, error in points:
            canvas.error_bar(px, y, error, color)
            canvas.parts.append(f'<circle cx="{_n(px)}" cy="{_n(canvas.y(y))}" r="3" fill="{color}"/>')
    keys = [f'<path d="M{{x}} {{y}}H{{x2}}" stroke="{PALETTE[i % len(PALETTE)]}" stroke-width="1.5"'
            + (' stroke-dasharray="4 3"' if canvas.legend[i] in dashed else "") + "/>"
            f'<circle cx="{{xm}}" cy="{{y}}" r="3" fill="{PALETTE[i % len(PALETTE)]}"/>'
            for i in range(len(canvas.legend))]
    return canvas.finish(keys)

