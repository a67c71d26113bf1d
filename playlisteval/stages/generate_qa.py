"""Phase I (SPEC B): one call writes the question and its cited gold answer from both clips."""

from __future__ import annotations

from typing import Any

from sqlmodel import Session

from playlisteval.gates import GateVerdict
from playlisteval.models.request import ModelRequest, TextPart, VideoPart
from playlisteval.prompts.render import render
from playlisteval.stages import bloom
from playlisteval.stages.context import StepContext, StepResult, gate_rows
from playlisteval.stages.feedback import failures
from playlisteval.stages.inputs import load_clips
from playlisteval.state import Event
from playlisteval.store.tables import QA, Item

GEN_SIZE = (1280, 720)  # SPEC B1: 720p


def run(ctx: StepContext) -> StepResult:
    cfg = ctx.settings.build
    attempt = ctx.progress.phase1_attempts + 1
    clip1, clip2 = load_clips(ctx.engine, ctx.item_id)
    row, column, keyword = bloom.draw_keyword(ctx.rng("B", attempt))
    prompt, template_hash = render(
        "b_generate.j2", ctx.prompts_dir, keyword=keyword, row=row, column=column,
        min_chunks=cfg.min_chunks_total, max_chunks=cfg.max_chunks_total,
        failures=failures(ctx.engine, ctx.item_id, 1, ctx.prompts_dir),
    )
    transcripts, _ = render("b_transcripts.j2", ctx.prompts_dir, transcript_1=clip1.transcript(),
                            transcript_2=clip2.transcript())
    request = ModelRequest(
        role="B",
        parts=[
            TextPart(text=prompt),
            *(VideoPart(path=c.path, start=c.start, end=c.end, fps=cfg.gen_fps, size=GEN_SIZE,
                        media_resolution="medium", audio=True, label=f"Clip {c.number}")
              for c in (clip1, clip2)),
            TextPart(text=transcripts),
        ],
        response_schema="QAGeneration", template="b_generate.j2", template_hash=template_hash,
        attempt=attempt, item_id=ctx.item_id,
    )
    response = ctx.runner.call(request)
    payload: dict[str, Any] = response.parsed or {"raw": response.text}
    qa = QA(item_id=ctx.item_id, attempt=attempt, question=payload.get("question", ""),
            answer=payload.get("answer", ""), keyword=keyword, payload=payload, template="b_generate.j2",
            template_hash=template_hash, malformed=response.malformed)

    if response.malformed:
        reason = f"generator output unusable: {response.malformed_reason}"
        verdict = GateVerdict.reject("B", reason)
        verdict.call_ids = [response.call_id] if response.call_id else []
        rows = gate_rows(ctx.item_id, 1, attempt, [verdict], payload)

        def write_malformed(s: Session, item: Item) -> None:
            s.add(qa)
            s.add_all(rows)

        return StepResult(Event.MALFORMED, write_malformed, reason)

    def write(s: Session, item: Item) -> None:
        s.add(qa)
        s.flush()
        item.current_qa_id = qa.id
        item.current_set_id = None

    return StepResult(Event.GENERATED, write)

