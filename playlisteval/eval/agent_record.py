"""The agentic judge's tool calls as `show ITEM` and `eval judge --json` list them (issue 20).

They are stored with each judgment (``judgment.evidence.agent``, eval/agent.py); this module only reads
them back, per run or per item, so the commands need neither the runner nor the media stack.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import col, select

from playlisteval.store.engine import transaction
from playlisteval.store.tables import JudgeRun, Judgment, Pair


def _entry(pair_id: int, evidence: dict[str, Any], verdict: str | None, outcome: str) -> dict[str, Any]:
    agent = evidence.get("agent") or {}
    return {"pair_id": pair_id, "verdict": verdict, "outcome": outcome, "steps": agent.get("steps", 0),
            "tokens": agent.get("tokens", 0), "stopped": agent.get("stopped", ""),
            "tool_calls": agent.get("tool_calls", [])}


def run_tool_calls(engine: Engine, run_id: int) -> dict[str, Any]:
    """One agentic run's tool use: totals by tool, and each pair's calls in order."""
    with transaction(engine) as s:
        rows = s.exec(select(Judgment.pair_id, Judgment.evidence, Judgment.verdict, Judgment.outcome)
                      .where(Judgment.run_id == run_id).order_by(col(Judgment.pair_id))).all()
    pairs = [_entry(int(p), dict(e or {}), v, str(o)) for p, e, v, o in rows if (e or {}).get("agent") is not None]
    by_tool = Counter(c["tool"] for p in pairs for c in p["tool_calls"])
    return {"tool_calls": sum(by_tool.values()), "by_tool": dict(sorted(by_tool.items())),
            "turns": sum(p["steps"] for p in pairs), "pairs": pairs}


def item_tool_calls(engine: Engine, item_id: int) -> list[dict[str, Any]]:
    """The agentic judgments of one item's pairs, with their run and judge."""
    with transaction(engine) as s:
        rows = s.exec(select(Judgment, JudgeRun.judge)
                      .join(Pair, col(Pair.id) == col(Judgment.pair_id))
                      .join(JudgeRun, col(JudgeRun.id) == col(Judgment.run_id))
                      .where(Pair.item_id == item_id).order_by(col(Judgment.run_id), col(Judgment.pair_id))).all()
    return [{"run_id": j.run_id, "judge": str(judge), **_entry(j.pair_id, dict(j.evidence or {}), j.verdict, j.outcome)}
            for j, judge in rows if (j.evidence or {}).get("agent") is not None]
