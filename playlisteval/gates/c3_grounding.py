"""SPEC C3: a third family watches each full segment (no audio, fit 640×480, 0.5 fps) followed by its
transcript, with hop 1, hop 2 and bridge as a checklist. Kept only when both verdicts are "Yes"."""

from __future__ import annotations

from typing import Any

from playlisteval.gates import GateVerdict
from playlisteval.models.request import ModelRequest, Part, TextPart, VideoPart
from playlisteval.prompts.render import render
from playlisteval.stages.context import StepContext
from playlisteval.stages.inputs import Clip

VERIFY_SIZE = (640, 480)


def video_parts(ctx: StepContext, clips: tuple[Clip, Clip]) -> list[Part]:
    """Each segment's full video without audio, then its full transcript (shared with D4)."""
    parts: list[Part] = []
    for c in clips:
        parts.append(VideoPart(path=c.path, start=c.start, end=c.end, fps=ctx.settings.build.verify_fps,
                               size=VERIFY_SIZE, audio=False, label=f"Video {c.number}"))
        parts.append(TextPart(text=f"Transcript of video {c.number}:\n{c.transcript()}"))
    return parts


def check(ctx: StepContext, qa: dict[str, Any], clips: tuple[Clip, Clip], attempt: int) -> GateVerdict:
    text, digest = render("c3_grounding.j2", ctx.prompts_dir, question=qa.get("question", ""),
                          answer=qa.get("answer", ""), hop_1=qa.get("hop_1", ""), hop_2=qa.get("hop_2", ""),
                          bridge=qa.get("bridge", ""))
    request = ModelRequest(role="C3", parts=[*video_parts(ctx, clips), TextPart(text=text)],
                           response_schema="Grounding", template="c3_grounding.j2", template_hash=digest,
                           attempt=attempt, item_id=ctx.item_id)
    response = ctx.runner.call(request)
    calls = [response.call_id] if response.call_id else []
    if response.malformed or response.parsed is None:
        verdict = GateVerdict.reject("C3", f"verifier output malformed: {response.malformed_reason}")
    else:
        g = response.parsed
        grounded = g["query_grounded"] == "Yes" and g["answer_grounded"] == "Yes"
        verdict = (GateVerdict.ok("C3", "question and answer grounded in the video", **g) if grounded
                   else GateVerdict.reject("C3", "not grounded: "
                                           + (g["query_grounding_explanation"] if g["query_grounded"] != "Yes"
                                              else g["answer_grounding_explanation"])[:300], **g))
    verdict.call_ids = calls
    return verdict
