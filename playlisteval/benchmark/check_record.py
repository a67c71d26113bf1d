"""The last `check` of each benchmark, kept in the store so the report and the dataset card can say whether
its videos were still there and unchanged, and when that was seen (issue 41 item 2).

Why kept: `check` re-reads every video (minutes on a real collection); the report and `export` must not
do that again, and must not stay silent about it either — a benchmark whose evidence is gone or changed
no longer tests what it did. What is kept is the summary (counts, the pairs affected, the domains, the
time), never the video paths (a card is published; the paths name the user's folders). One entry per
benchmark in the ``kv`` table (``check:<benchmark id>``, JSON): a later check replaces it. A benchmark never
checked says "not checked", never a clean bill.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Engine

from playlisteval.store.engine import read_core, transaction

NOT_CHECKED = "not checked: `playlisteval check` re-reads its videos and records what it finds"
COUNTS = ("videos", "ok", "missing", "changed", "unverifiable")


def _key(benchmark_id: int) -> str:
    return f"check:{int(benchmark_id)}"


def record(engine: Engine, benchmark_id: int, got: dict[str, Any], at: float | None = None) -> dict[str, Any]:
    """Keep ``check_benchmark``'s result (benchmark/health.py) as the benchmark's last check; returns what was kept."""
    kept: dict[str, Any] = {k: int(got[k]) for k in COUNTS}
    kept.update(checked_at=time.time() if at is None else at, affected_pairs=sorted(got["affected_pairs"]),
                affected_domains=sorted(got["affected_domains"]))
    from playlisteval.store.tables import KeyValue  # the ORM only where a check is written (`check`)

    with transaction(engine) as s:
        s.merge(KeyValue(key=_key(benchmark_id), value=json.dumps(kept)))
    return kept


def last(engine: Engine, benchmark_id: int) -> dict[str, Any] | None:
    """The benchmark's last check as recorded, or None when it was never checked."""
    with read_core(engine) as c:  # Core, no table classes: the report reads this at each page (issue 26)
        value = c.execute(text("SELECT value FROM kv WHERE key = :k"), {"k": _key(benchmark_id)}).scalar()
    return None if value is None else dict(json.loads(value))


def when(kept: dict[str, Any]) -> str:
    return datetime.fromtimestamp(float(kept["checked_at"]), UTC).strftime("%Y-%m-%d %H:%M UTC")


def said(kept: dict[str, Any] | None) -> str:
    """One sentence: what the last check found and when, or that there was none."""
    if kept is None:
        return NOT_CHECKED
    pairs = len(kept["affected_pairs"])
    verdict = "every video as indexed" if kept["ok"] == kept["videos"] else "PROBLEMS"
    return (f"checked {when(kept)}: {verdict} — {kept['ok']} of {kept['videos']} video(s) as indexed, "
            f"{kept['missing']} missing, {kept['changed']} changed, {kept['unverifiable']} unverifiable; "
            f"{pairs} pair(s) affected" + (f" (domains: {', '.join(kept['affected_domains'])})" if pairs else ""))


def card_section(engine: Engine, benchmark_id: int) -> str:
    """The dataset card's section: the last check's finding and date (the videos, not the rows: a check is a
    fact about the collection now, so a frozen version's card gets today's)."""
    kept = last(engine, benchmark_id)
    return f"## Videos checked\n\n{said(kept)[0].upper()}{said(kept)[1:]}.\n"
