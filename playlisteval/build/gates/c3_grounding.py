"""SPEC C3: a third family gets the prompt, then each full segment (no audio, fit ``verify_size``, at
``verify_fps``) followed by its full transcript, with hop 1, hop 2 and bridge as a checklist to verify.
The question is kept only when both verdicts are "Yes"; no usable verdict is a checker fault."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from playlisteval.build.gates import GateVerdict, unusable
from playlisteval.models.request import ModelRequest, Part, TextPart, VideoPart
from playlisteval.prompts.render import render

if TYPE_CHECKING:  # types only
    from playlisteval.build.gates.context import GateContext
    from playlisteval.build.inputs import Clip


def video_parts(ctx: GateContext, clips: tuple[Clip, Clip]) -> list[Part]:
    """Each segment's full video without audio, then its full transcript (shared with D4)."""
    cfg = ctx.settings.build
    parts: list[Part] = []
    for c in clips:
        parts.append(VideoPart(path=c.path, start=c.start, end=c.end, fps=cfg.verify_fps, size=cfg.verify_size,
                               audio=False, label=f"Video {c.number}"))
        # the "===" line closes whatever the prompt said last: a transcript is not part of any answer
        parts.append(TextPart(text=f"=== Transcript {c.number}: everything said in video {c.number}, "
                                   f"times from its start ===\n{c.transcript()}"))
    return parts


def check(ctx: GateContext, qa: dict[str, Any], clips: tuple[Clip, Clip], attempt: int) -> GateVerdict:
    text, digest = render("c3_grounding.j2", ctx.prompts_dir, question=qa.get("question", ""),
                          answer=qa.get("answer", ""), hop_1=qa.get("hop_1", ""), hop_2=qa.get("hop_2", ""),
                          bridge=qa.get("bridge", ""))
    request = ModelRequest(role="C3", parts=[TextPart(text=text), *video_parts(ctx, clips)],
                           response_schema="Grounding", template="c3_grounding.j2", template_hash=digest,
                           attempt=attempt, item_id=ctx.item_id)
    response = ctx.runner.call(request)
    calls = [response.call_id] if response.call_id else []
    if response.malformed or response.parsed is None:
        # no verdict is evidence neither way: not kept, not rejected (no feedback), asked again later
        raise unusable("C3", "C3", response)
    g = response.parsed
    if g["query_grounded"] != "Yes":
        verdict = GateVerdict.reject("C3", "question not grounded in the videos: "
                                     + g["query_grounding_explanation"][:300], **g)
    elif g["answer_grounded"] != "Yes":
        verdict = GateVerdict.reject("C3", "answer not grounded in the videos: "
                                     + g["answer_grounding_explanation"][:300], **g)
    else:
        verdict = GateVerdict.ok("C3", "question and answer grounded in the videos", **g)
    verdict.call_ids = calls
    return verdict
