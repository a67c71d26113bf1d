"""The packaged views: each ``NN_name.sql`` file of this package (runner.py says how they are made).

Each file holds one SELECT; it becomes the view ``name``, created in file-name order so a view may use
the views before it. The file's leading ``--`` comment is the view's description. A file without a number
(``funnel.sql``) is a view created after the numbered ones. Files numbered below 10 are the base facts
every other view joins, made tables once, unless the file carries the line ``-- analytics: view``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources

_FILE = re.compile(r"^(?:(\d+)_)?([a-z][a-z0-9_]*)\.sql$")

MATERIALIZED_BELOW = 10  # NN_ prefixes under this are base facts, made tables once
VIEW_MARK = "-- analytics: view"  # ...unless the file says so: a view over base facts, made by each query


@dataclass(frozen=True)
class View:
    name: str
    description: str
    sql: str
    materialized: bool = False


def views() -> list[View]:
    """The packaged views, in creation order."""
    found = []
    for entry in resources.files("playlisteval.analytics").iterdir():
        match = _FILE.match(entry.name)
        if not match:
            continue
        sql = entry.read_text(encoding="utf-8")
        comment = []
        for line in sql.splitlines():
            if not line.startswith("--"):
                break
            comment.append(line[2:].strip())
        number = int(match.group(1)) if match.group(1) else None
        order = (number is None, number or 0, entry.name)
        found.append((order, View(match.group(2), " ".join(comment).strip(), sql,
                                  materialized=number is not None and number < MATERIALIZED_BELOW
                                  and VIEW_MARK not in sql)))
    return [view for _, view in sorted(found, key=lambda pair: pair[0])]


def reading(made: Sequence[View], table: str) -> re.Pattern[str]:
    """The names of ``table`` and of every view of ``made`` that reads it, directly or through another
    such view, as one pattern (what a query must wait for while that table is still being copied)."""
    names = {table}
    for view in made:  # in creation order: a view over one of them is one of them
        if any(re.search(rf"\b{name}\b", view.sql) for name in names):
            names.add(view.name)
    return re.compile(r"\b(" + "|".join(sorted(names)) + r")\b")
