"""SPEC E1/E4: the failure history of a seed, rendered as guidance for the next generation."""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import select

from playlisteval.prompts.render import render
from playlisteval.store.engine import transaction
from playlisteval.store.tables import GateResult


def guidance(gate: str, prompts_dir: str | None = None) -> str:
    text, _ = render("feedback.j2", prompts_dir, gate=gate)
    return text.strip()


def failures(engine: Engine, item_id: int, phase: int, prompts_dir: str | None = None) -> list[dict[str, Any]]:
    """Every rejected attempt of this seed in ``phase``, oldest first, with the gate's guidance."""
    with transaction(engine) as s:
        rows = s.exec(
            select(GateResult).where(
                GateResult.item_id == item_id, GateResult.phase == phase, GateResult.verdict == "reject"
            ).order_by(GateResult.id)  # type: ignore[arg-type]
        ).all()
    out = []
    for r in rows:
        output = r.rejected_output or {}
        out.append({
            "attempt": r.attempt,
            "gate": r.gate,
            "reason": r.reason,
            "question": output.get("question", ""),
            "guidance": guidance(r.gate, prompts_dir),
        })
    return out
