"""Phase I (SPEC B): one call writes the question and its cited gold answer from both clips.

Inputs (SPEC B1): both clips as video at ``gen_fps``, fit inside ``gen_size`` (720p), with their audio,
each introduced by its marker ("Clip 1", "Clip 2"); then the prompt, with a Bloom keyword drawn for
this request (SPEC B2) and the seed's failure history (SPEC E1); then both transcripts.
"""

from __future__ import annotations

from typing import Any

from playlisteval.build.stages import bloom
from playlisteval.build.stages.context import StepContext, StepResult, unusable_output
from playlisteval.build.stages.feedback import phase1_failures
from playlisteval.build.stages.inputs import Clip, load_clips, mmss
from playlisteval.models.request import ModelRequest, TextPart, VideoPart
from playlisteval.prompts.render import render
from playlisteval.store.direct import Inserts
from playlisteval.store.items import HeldItem
from playlisteval.store.states import Event
from playlisteval.store.tables import QA


def generator_clips(ctx: StepContext, clips: tuple[Clip, Clip]) -> list[VideoPart]:
    """Both clips as the generator sees them (SPEC B1; D1 gets the same)."""
    cfg = ctx.settings.build
    return [VideoPart(path=c.path, start=c.start, end=c.end, fps=cfg.gen_fps, size=cfg.gen_size,
                      media_resolution=cfg.gen_media_resolution, audio=True, label=f"Clip {c.number}")
            for c in clips]


def build_request(ctx: StepContext, attempt: int) -> tuple[ModelRequest, str]:
    cfg = ctx.settings.build
    clip1, clip2 = load_clips(ctx.engine, ctx.item_id)
    row, column, keyword = bloom.draw_keyword(ctx.rng("B", attempt))  # a fresh draw per request
    prompt, template_hash = render(
        "b_generate.j2", ctx.prompts_dir, keyword=keyword, row=row, column=column,
        clip_1_span=f"{mmss(clip1.start)}–{mmss(clip1.end)}", clip_2_span=f"{mmss(clip2.start)}–{mmss(clip2.end)}",
        min_chunks_per_clip=cfg.min_chunks_per_segment, min_chunks=cfg.min_chunks_total,
        max_chunks=cfg.max_chunks_total, min_paragraphs=cfg.min_paragraphs, chunk_s=int(ctx.settings.index.chunk_s),
        failures=phase1_failures(ctx.engine, ctx.item_id, ctx.prompts_dir),
    )
    transcripts, _ = render("b_transcripts.j2", ctx.prompts_dir, transcript_1=clip1.transcript(),
                            transcript_2=clip2.transcript())
    request = ModelRequest(
        role="B",
        parts=[*generator_clips(ctx, (clip1, clip2)), TextPart(text=prompt), TextPart(text=transcripts)],
        response_schema="QAGeneration", template="b_generate.j2", template_hash=template_hash,
        attempt=attempt, item_id=ctx.item_id,
    )
    return request, keyword


def run(ctx: StepContext) -> StepResult:
    attempt = ctx.progress.phase1_attempts + 1
    request, keyword = build_request(ctx, attempt)
    response = ctx.runner.call(request)
    payload: dict[str, Any] = response.parsed or {"raw": response.text}
    qa = QA(item_id=ctx.item_id, attempt=attempt, question=payload.get("question", ""),
            answer=payload.get("answer", ""), keyword=keyword, payload=payload, template=request.template,
            template_hash=request.template_hash, malformed=response.malformed)

    if response.malformed:
        return unusable_output(ctx.item_id, 1, attempt, "C1", response, payload, qa)

    def write(s: Inserts, item: HeldItem) -> None:
        s.add(qa)
        s.flush()
        item.current_qa_id = qa.id
        item.current_set_id = None

    return StepResult(Event.GENERATED, write)
