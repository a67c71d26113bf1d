"""A scatter plot as SVG (paper Fig. 7: each judge's accuracy here against its published score).

Written like analytics/plots.py — SVG by hand, every text XML-escaped, fixed-precision numbers, a ``data:``
URI for an ``<img>`` tag (an SVG in an image cannot run script, whatever a judge's name holds) — but over
two numeric axes, each fitted to its data with a margin, with the least-squares line when there is one.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from xml.sax.saxutils import escape

FONT = 9.0


def _n(x: float) -> str:
    return f"{x:.2f}".rstrip("0").rstrip(".")


def _text(x: float, y: float, text: str, *, anchor: str = "middle", size: float = FONT, rotate: float = 0.0) -> str:
    turn = f' transform="rotate({_n(rotate)} {_n(x)} {_n(y)})"' if rotate else ""
    return (f'<text x="{_n(x)}" y="{_n(y)}" font-size="{_n(size)}" text-anchor="{anchor}"{turn}>'
            f"{escape(text)}</text>")


def _range(values: Sequence[float]) -> tuple[float, float]:
    lo, hi = min(values), max(values)
    pad = (hi - lo) * 0.1 or max(abs(hi) * 0.1, 1.0)
    return lo - pad, hi + pad


def scatter(points: Sequence[tuple[str, float, float]], *, xlabel: str, ylabel: str, title: str) -> str:
    """(label, x, y) points; the dotted line is the least-squares fit of y on x."""
    width, height, left, top, plot_w, plot_h = 420.0, 300.0, 52.0, 26.0, 330.0, 220.0
    xs, ys = [p[1] for p in points], [p[2] for p in points]
    (x0, x1), (y0, y1) = _range(xs), _range(ys)

    def px(x: float) -> float:
        return left + (x - x0) / (x1 - x0) * plot_w

    def py(y: float) -> float:
        return top + plot_h - (y - y0) / (y1 - y0) * plot_h

    parts = [f'<path d="M{_n(left)} {_n(top)}V{_n(top + plot_h)}H{_n(left + plot_w)}" stroke="#000" '
             'stroke-width="0.8" fill="none"/>', _text(left + plot_w / 2, top - 10, title, size=FONT * 1.2),
             _text(left + plot_w / 2, top + plot_h + 30, xlabel), _text(14, top + plot_h / 2, ylabel, rotate=-90)]
    for k in range(5):
        tx, ty = x0 + (x1 - x0) * (k + 0.5) / 5, y0 + (y1 - y0) * (k + 0.5) / 5
        parts.append(_text(px(tx), top + plot_h + 14, f"{tx:.3g}"))
        parts.append(_text(left - 5, py(ty) + 3, f"{ty:.3g}", anchor="end"))
    if len(points) >= 2 and max(xs) > min(xs):
        mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
        slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)
        a, b = min(xs), max(xs)
        parts.append(f'<path d="M{_n(px(a))} {_n(py(my + slope * (a - mx)))}L{_n(px(b))} '
                     f'{_n(py(my + slope * (b - mx)))}" stroke="#999" stroke-width="1" stroke-dasharray="2,2"/>')
    for label, x, y in points:
        parts.append(f'<circle cx="{_n(px(x))}" cy="{_n(py(y))}" r="3.5" fill="#1f77b4"/>')
        parts.append(_text(px(x) + 5, py(y) - 5, label, anchor="start", size=FONT - 1))
    svg = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{_n(width)}" height="{_n(height)}" '
           f'viewBox="0 0 {_n(width)} {_n(height)}" font-family="sans-serif">'
           f'<rect width="100%" height="100%" fill="#fff"/>{"".join(parts)}</svg>')
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode("utf-8")).decode("ascii")
