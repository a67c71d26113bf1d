"""Phase I gates, cheapest first, stopping at the first rejection (SPEC C1 → C2.1 → C2.2 → C3)."""

from __future__ import annotations

from playlisteval.build.gates import (
    GateVerdict,
    c1_structure,
    c2_parametric,
    c2_transcript,
    c3_grounding,
    first_rejection,
)
from playlisteval.build.stages.context import StepContext, StepResult, gate_rows
from playlisteval.build.stages.inputs import load_clips
from playlisteval.errors import CheckerFault
from playlisteval.store import direct
from playlisteval.store.direct import Inserts
from playlisteval.store.engine import read_core
from playlisteval.store.items import HeldItem
from playlisteval.store.states import Event
from playlisteval.store.tables import QA, Item


def verdicts(ctx: StepContext, qa: QA) -> list[GateVerdict]:
    """The verdicts of every gate that ran on ``qa``; the last one decides."""
    payload = qa.payload or {}
    clips = load_clips(ctx.engine, ctx.item_id)
    lengths = {c.number: c.length for c in clips}
    offsets = {c.number: c.start for c in clips}
    return first_rejection((
        lambda: c1_structure.check(qa.answer, ctx.settings.build, ctx.settings.index.chunk_s, lengths, offsets,
                                   question=qa.question, keyword=qa.keyword),
        lambda: c2_transcript.check(ctx, qa.question, qa.answer, clips, qa.attempt),
        lambda: c2_parametric.check(ctx, qa.question, qa.answer, qa.attempt),
        lambda: c3_grounding.check(ctx, payload, clips, qa.attempt),
    ))


def run(ctx: StepContext) -> StepResult:
    with read_core(ctx.engine) as conn:  # two primary-key reads on the driver's cursor (store/direct.py)
        item = direct.get(conn, Item, ctx.item_id)
        qa = direct.get(conn, QA, item.current_qa_id) if item and item.current_qa_id else None
    if qa is None:
        raise LookupError(f"item {ctx.item_id} has no current question to check")
    try:
        ran = verdicts(ctx, qa)
    except CheckerFault as fault:  # no verdict: the step records the fault and is tried again
        fault.phase, fault.attempt = 1, qa.attempt
        raise
    rows = gate_rows(ctx.item_id, 1, qa.attempt, ran, qa.payload or {})
    last = ran[-1]

    def write(s: Inserts, item: HeldItem) -> None:
        s.add_all(rows)

    return StepResult(Event.PASSED if last.passed else Event.REJECTED, write, last.reason)
