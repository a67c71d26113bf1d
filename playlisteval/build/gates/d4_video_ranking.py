"""SPEC D4: the video verifier ranks the four wrong answers (gold left out), each shown with its own
degradation record, from the same video inputs as C3. Passes only on the exact order 4 ≻ 3 ≻ 2 ≻ 1; a
reply that is no ranking of the four (after the runner's repairs) is a checker fault, not a rejection."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from playlisteval.build.gates import GateVerdict
from playlisteval.build.gates.c3_grounding import video_parts
from playlisteval.build.gates.citations import uniform
from playlisteval.build.gates.ranking import read_ranking, validator
from playlisteval.models.request import ModelRequest, TextPart
from playlisteval.prompts.render import render

if TYPE_CHECKING:  # types only
    from playlisteval.build.gates.context import GateContext
    from playlisteval.build.inputs import Clip

INTENDED = [4, 3, 2, 1]


def check(ctx: GateContext, question: str, payload: dict[str, Any], clips: tuple[Clip, Clip],
          attempt: int) -> GateVerdict:
    order = list(INTENDED)
    ctx.rng("D4", attempt).shuffle(order)
    candidates = [{"text": uniform(payload[f"rating_{r}"]["response"]),
                   "record": json.dumps(payload[f"rating_{r}"]["attribute_degradations"], ensure_ascii=False)}
                  for r in order]
    prompt, digest = render("d4_video_rank.j2", ctx.prompts_dir, question=question, candidates=candidates,
                            attributes=payload.get("causal_attributes", []))
    request = ModelRequest(role="D4", parts=[TextPart(text=prompt), *video_parts(ctx, clips)],
                           response_schema="Ranking", template="d4_video_rank.j2", template_hash=digest,
                           attempt=attempt, item_id=ctx.item_id)
    response = ctx.runner.call(request, validate=validator(len(order)))
    ranking = read_ranking("D4", "D4", response, order)
    if ranking == INTENDED:
        verdict = GateVerdict.ok("D4", "the video confirms 4 ≻ 3 ≻ 2 ≻ 1", ranking=ranking, shown_order=order)
    else:
        verdict = GateVerdict.reject("D4", "video ranking differs from 4 ≻ 3 ≻ 2 ≻ 1: "
                                     + " ≻ ".join(map(str, ranking)), ranking=ranking, shown_order=order)
    verdict.call_ids = [response.call_id] if response.call_id else []
    return verdict
