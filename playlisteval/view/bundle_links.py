"""The static bundle's links (issue 41, deliverable 4): every ``href``/``src`` the templates write as a live
viewer path (``/pairs/7?benchmark=b``, ``/frame/3/12.500``) becomes a link relative to the page's own file
(``../pairs/7.html``, ``../frames/3/12.500.jpg``), so the folder works from any static server, under any
path, and opened from disk; a link to what the bundle does not hold (an item's story, a clip, a filtered
list) loses its ``href`` and stays as text rather than pointing at nothing.

Why rewrite the rendered page instead of a second set of templates: the live viewer and the bundle then
show the same cards, tables and notes by construction. The rewrite only touches attributes the templates
themselves wrote: a model's text is escaped by the templates (``"`` → ``&#34;``), so it can never contain
the ``href="/`` this matches.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlsplit

_ATTR = re.compile(r'\s(href|src)="(/[^"]*)"')
_T3 = re.compile(r"\d+\.\d{3}")
PAGES = {"/": "index.html", "/leaderboard": "leaderboard.html", "/runs": "runs.html", "/funnel": "funnel.html",
         "/pairs": "pairs.html", "/static/view.css": "static/view.css"}
_LIST_KEYS = {"benchmark", "page", "size"}  # a /pairs link with any other key is a filtered list: not bundled


@dataclass
class Site:
    """What the bundle holds: its benchmark, the pairs with a card, the judge-against-judge pages; and the
    frames its pages link to, collected while rewriting (the writer then puts each one in place)."""

    benchmark: str
    evidence: str
    pairs: set[int] = field(default_factory=set)
    versus: dict[tuple[str, str], str] = field(default_factory=dict)  # (judge A, judge B) → file
    frames: dict[tuple[int, str], str] = field(default_factory=dict)  # (video id, "12.500") → first page linking it
    page: str = ""  # the page being rewritten

    def target(self, url: str) -> str | None:
        """The bundle file (relative to its root) a live viewer URL stands for; None when not bundled."""
        parts = urlsplit(url)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        if query.get("benchmark", self.benchmark) != self.benchmark:
            return None
        path = parts.path
        if path == "/versus":
            if query.get("evidence", self.evidence) != self.evidence:
                return None
            if "a" in query or "b" in query:
                return self.versus.get((query.get("a", ""), query.get("b", "")))
            return "versus.html"
        if path == "/pairs" and set(query) - _LIST_KEYS:
            return None
        if path in PAGES:
            return PAGES[path]
        pieces = path.strip("/").split("/")
        if len(pieces) == 2 and pieces[0] == "pairs" and pieces[1].isdigit() and int(pieces[1]) in self.pairs:
            return f"pairs/{int(pieces[1])}.html"
        if len(pieces) == 3 and pieces[0] == "frame" and pieces[1].isdigit() and _T3.fullmatch(pieces[2]):
            self.frames.setdefault((int(pieces[1]), pieces[2]), self.page)
            return frame_file(int(pieces[1]), pieces[2])
        return None


def frame_file(video_id: int, t3: str) -> str:
    return f"frames/{video_id}/{t3}.jpg"


def relative(page: str, depth: int, site: Site, *, name: str = "") -> str:
    """``page`` (rendered HTML of the file ``name``, ``depth`` folders below the bundle's root) with its live
    links made relative, and those to what the bundle lacks removed."""
    up = "../" * depth
    site.page = name

    def swap(match: re.Match[str]) -> str:
        found = site.target(html.unescape(match.group(2)))
        if found is None:
            return ""
        return f' {match.group(1)}="{html.escape(up + found, quote=True)}"'

    return _ATTR.sub(swap, page)
