"""Phase II gates, cheapest first, stopping at the first rejection (SPEC D2 → D3 → D4)."""

from __future__ import annotations

from playlisteval.build.gates import GateVerdict, d2_structure, d3_text_ranking, d4_video_ranking, first_rejection
from playlisteval.build.stages.context import StepContext, StepResult, gate_rows
from playlisteval.build.stages.inputs import load_clips
from playlisteval.errors import CheckerFault
from playlisteval.store import direct
from playlisteval.store.direct import Inserts
from playlisteval.store.engine import read_core
from playlisteval.store.items import HeldItem
from playlisteval.store.states import Event
from playlisteval.store.tables import QA, DistractorSet, Item


def verdicts(ctx: StepContext, qa: QA, dset: DistractorSet) -> list[GateVerdict]:
    """The verdicts of every gate that ran on ``dset``; the last one decides."""
    payload = dset.payload or {}
    return first_rejection((
        lambda: d2_structure.check(payload),
        lambda: d3_text_ranking.check(ctx, qa.question, qa.answer, payload, dset.attempt),
        lambda: d4_video_ranking.check(ctx, qa.question, payload, load_clips(ctx.engine, ctx.item_id),
                                       dset.attempt),
    ))


def run(ctx: StepContext) -> StepResult:
    with read_core(ctx.engine) as conn:  # primary-key reads on the driver's cursor (store/direct.py)
        item = direct.get(conn, Item, ctx.item_id)
        dset = direct.get(conn, DistractorSet, item.current_set_id) if item and item.current_set_id else None
        qa = direct.get(conn, QA, dset.qa_id) if dset else None
    if dset is None or qa is None:
        raise LookupError(f"item {ctx.item_id} has no distractor set to check")
    try:
        ran = verdicts(ctx, qa, dset)
    except CheckerFault as fault:  # no verdict: the step records the fault and is tried again
        fault.phase, fault.attempt = 2, dset.attempt
        raise
    rows = gate_rows(ctx.item_id, 2, dset.attempt, ran, dset.payload or {})
    last = ran[-1]

    def write(s: Inserts, item: HeldItem) -> None:
        s.add_all(rows)

    return StepResult(Event.PASSED if last.passed else Event.REJECTED, write, last.reason)
