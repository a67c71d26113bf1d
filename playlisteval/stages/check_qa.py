"""Phase I gates, cheapest first, stopping at the first rejection (SPEC C1 → C2.1 → C2.2 → C3)."""

from __future__ import annotations

from sqlmodel import Session

from playlisteval.gates import c1_structure, c2_parametric, c2_transcript, c3_grounding, first_rejection
from playlisteval.stages.context import StepContext, StepResult, gate_rows
from playlisteval.stages.inputs import load_clips
from playlisteval.state import Event
from playlisteval.store.engine import transaction
from playlisteval.store.tables import QA, Item


def run(ctx: StepContext) -> StepResult:
    with transaction(ctx.engine) as s:
        item = s.get(Item, ctx.item_id)
        qa = s.get(QA, item.current_qa_id) if item and item.current_qa_id else None
    if qa is None:
        raise LookupError(f"item {ctx.item_id} has no current question to check")
    payload = qa.payload or {}
    attempt = qa.attempt
    clips = load_clips(ctx.engine, ctx.item_id)
    checks = (
        lambda: c1_structure.check(qa.answer, ctx.settings.build, ctx.settings.index.chunk_s),
        lambda: c2_transcript.check(ctx, qa.question, qa.answer, clips, attempt),
        lambda: c2_parametric.check(ctx, qa.question, qa.answer, attempt),
        lambda: c3_grounding.check(ctx, payload, clips, attempt),
    )
    verdicts = first_rejection(checks)
    rows = gate_rows(ctx.item_id, 1, attempt, verdicts, payload)
    last = verdicts[-1]

    def write(s: Session, item: Item) -> None:
        s.add_all(rows)

    return StepResult(Event.PASSED if last.passed else Event.REJECTED, write, last.reason)
