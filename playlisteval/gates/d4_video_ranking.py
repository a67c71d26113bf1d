"""SPEC D4: the video verifier ranks the four wrong answers (gold left out), each with its degradation
record, from the same video inputs as C3. Passes only on the exact order 4 ≻ 3 ≻ 2 ≻ 1."""

from __future__ import annotations

import json
from typing import Any

from playlisteval.gates import GateVerdict
from playlisteval.gates.c3_grounding import video_parts
from playlisteval.gates.ranking import ranked_ratings
from playlisteval.models.request import ModelRequest, TextPart
from playlisteval.prompts.render import render
from playlisteval.stages.context import StepContext
from playlisteval.stages.inputs import Clip

INTENDED = [4, 3, 2, 1]


def check(ctx: StepContext, question: str, payload: dict[str, Any], clips: tuple[Clip, Clip],
          attempt: int) -> GateVerdict:
    order = list(INTENDED)
    ctx.rng("D4", attempt).shuffle(order)
    candidates = [{"text": payload[f"rating_{r}"]["response"],
                   "record": json.dumps(payload[f"rating_{r}"]["attribute_degradations"], ensure_ascii=False)}
                  for r in order]
    prompt, digest = render("d4_video_rank.j2", ctx.prompts_dir, question=question, candidates=candidates)
    request = ModelRequest(role="D4", parts=[*video_parts(ctx, clips), TextPart(text=prompt)],
                           response_schema="Ranking", template="d4_video_rank.j2", template_hash=digest,
                           attempt=attempt, item_id=ctx.item_id)
    response = ctx.runner.call(request)
    ranking = ranked_ratings(response.parsed, order) if response.parsed else None
    verdict = (GateVerdict.ok("D4", "the video confirms 4 ≻ 3 ≻ 2 ≻ 1", ranking=ranking, shown_order=order)
               if ranking == INTENDED else
               GateVerdict.reject("D4", f"video ranking {ranking} is not 4 ≻ 3 ≻ 2 ≻ 1", ranking=ranking,
                                  shown_order=order))
    verdict.call_ids = [response.call_id] if response.call_id else []
    return verdict
