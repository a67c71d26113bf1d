"""The agentic judge's tool calls as `show ITEM` and `eval judge --json` list them (issue 20).

They are stored with each judgment (``judgment.evidence.agent``, eval/agent.py); this module only reads
them back, per run or per item, so the commands need neither the runner nor the media stack.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from sqlalchemy import JSON, Integer, String, text
from sqlalchemy.engine import Engine

from playlisteval.store.engine import transaction


def _entry(pair_id: int, evidence: dict[str, Any], verdict: str | None, outcome: str) -> dict[str, Any]:
    agent = evidence.get("agent") or {}
    return {"pair_id": pair_id, "verdict": verdict, "outcome": outcome, "steps": agent.get("steps", 0),
            "tokens": agent.get("tokens", 0), "stopped": agent.get("stopped", ""),
            "tool_calls": agent.get("tool_calls", [])}


def run_tool_calls(engine: Engine, run_id: int) -> dict[str, Any]:
    """One agentic run's tool use: totals by tool, and each pair's calls in order."""
    from sqlmodel import col, select  # the ORM for a run's listing; `show` (item_tool_calls) reads without it

    from playlisteval.store.tables import Judgment

    with transaction(engine) as s:
        rows = s.exec(select(Judgment.pair_id, Judgment.evidence, Judgment.verdict, Judgment.outcome)
                      .where(Judgment.run_id == run_id).order_by(col(Judgment.pair_id))).all()
    pairs = [_entry(int(p), dict(e or {}), v, str(o)) for p, e, v, o in rows if (e or {}).get("agent") is not None]
    by_tool = Counter(c["tool"] for p in pairs for c in p["tool_calls"])
    return {"tool_calls": sum(by_tool.values()), "by_tool": dict(sorted(by_tool.items())),
            "turns": sum(p["steps"] for p in pairs), "pairs": pairs}


#: one item's judgments, run by run: each (run, pair) found through judgment's unique (run_id, pair_id)
#: index. Joined on pair_id alone SQLite read every judgment (judgment has no index on pair_id): `show 1`
#: on 1M judgments spent 0.78 s of its time here, now 0.002 s (issue 26). CROSS JOIN fixes SQLite's join
#: order: pairs of the item, then runs, then the index.
_ITEM_JUDGMENTS = text(
    "SELECT j.run_id, r.judge, j.pair_id, j.evidence, j.verdict, j.outcome "
    "FROM pair AS p CROSS JOIN judge_run AS r CROSS JOIN judgment AS j "
    "WHERE p.item_id = :item AND j.run_id = r.id AND j.pair_id = p.id ORDER BY j.run_id, j.pair_id"
).columns(run_id=Integer, judge=String, pair_id=Integer, evidence=JSON, verdict=String, outcome=String)


def item_tool_calls(engine: Engine, item_id: int) -> list[dict[str, Any]]:
    """The agentic judgments of one item's pairs, with their run and judge."""
    with engine.connect() as conn:
        rows = conn.execute(_ITEM_JUDGMENTS, {"item": item_id}).all()
    return [{"run_id": run_id, "judge": str(judge), **_entry(pair_id, dict(evidence or {}), verdict, outcome)}
            for run_id, judge, pair_id, evidence, verdict, outcome in rows
            if (evidence or {}).get("agent") is not None]
