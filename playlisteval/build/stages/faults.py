"""Checker faults (issue 9, fail closed): a gate's model gave no usable reply, so the gate has no verdict.

The fault is kept as a ``gate_result`` row with verdict "fault": the gate, the role, the runner's reason
and the start of the raw reply, but no ``rejected_output`` — the generator is not blamed, and the
failure history (SPEC E1) reads only rejections. The unusable replies are dropped from the response
cache, so that the step, tried again, asks again instead of reading the same garbage back.

Faults are counted per step: the rows written while the item stayed at one version (every commit,
``retry-failed`` included, bumps it), so a retried item starts a fresh count.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete, or_
from sqlalchemy.engine import Engine
from sqlmodel import col, select

from playlisteval.errors import CheckerFault
from playlisteval.store.engine import transaction
from playlisteval.store.tables import GateResult, Item, ModelCall, ResponseCache

FAULT = "fault"
#: Checker faults in a row on one step before the item fails (`retry-failed` resumes it). Each fault's step
#: is sent again after a growing delay (actors/step.py), not retried by the broker: the item fails visibly
#: after this many instead of being asked forever.
FAULTS_PER_STEP = 3


def record(engine: Engine, item_id: int, lease_token: str, fault: CheckerFault, phase: int,
           attempt: int) -> int | None:
    """Write the fault and forget the unusable replies; return how many faults this step has had (this
    one included), or None when the lease was lost (another worker owns the item: nothing written)."""
    with transaction(engine) as s:
        item = s.exec(select(Item).where(col(Item.id) == item_id).with_for_update()).one_or_none()
        if item is None or item.lease_owner != lease_token:
            return None
        details: dict[str, Any] = {"role": fault.role, "reply": fault.reply, "item_version": item.version}
        s.add(GateResult(item_id=item_id, phase=phase, attempt=attempt, gate=fault.gate, verdict=FAULT,
                         reason=f"checker reply unusable: {fault.role}: {fault.reason}"[:4000], details=details,
                         rejected_output=None, call_ids=fault.call_ids))
        if fault.unusable_call_ids:
            hashes = sorted({h.split(":try", 1)[0] for h in s.exec(select(col(ModelCall.request_hash)).where(
                col(ModelCall.id).in_(fault.unusable_call_ids))).all()})
            for key in hashes:  # the final reply and the repaired tries the runner would replay
                s.execute(delete(ResponseCache).where(or_(
                    col(ResponseCache.request_hash) == key,
                    col(ResponseCache.request_hash).startswith(f"{key}:try"))))
        s.flush()
        rows = s.exec(select(GateResult.details).where(
            GateResult.item_id == item_id, GateResult.verdict == FAULT)).all()
        return sum(1 for d in rows if isinstance(d, dict) and d.get("item_version") == item.version)


def failure_message(fault: CheckerFault, faults: int) -> str:
    """The item's error once the faults run out: what failed, how often, and how to go on."""
    return (f"checker fault: gate {fault.gate} ({fault.role}) gave no usable reply {faults} times in a row: "
            f"{fault.reason[:300]}. Nothing was passed or rejected; `playlisteval retry-failed` tries again")
