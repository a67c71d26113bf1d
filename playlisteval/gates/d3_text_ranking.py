"""SPEC D3: a text-only judge ranks the gold (citations stripped) and the four wrong answers, shuffled
and formatted identically, with the causal attributes as rubric. A second judge runs only if the first
recovered the intended order exactly; rejected only when both recover it."""

from __future__ import annotations

import re
from typing import Any

from playlisteval.gates import GateVerdict
from playlisteval.gates.citations import strip_citations
from playlisteval.gates.ranking import ranked_ratings
from playlisteval.models.request import ModelRequest, TextPart
from playlisteval.prompts.render import render
from playlisteval.stages.context import StepContext

INTENDED = [5, 4, 3, 2, 1]


def _normalise(text: str) -> str:
    return re.sub(r"[ \t]+", " ", text.strip())


def check(ctx: StepContext, question: str, gold: str, payload: dict[str, Any], attempt: int) -> GateVerdict:
    texts = {5: gold, **{r: payload[f"rating_{r}"]["response"] for r in (4, 3, 2, 1)}}
    order = list(INTENDED)
    ctx.rng("D3", attempt).shuffle(order)
    prompt, digest = render("d3_text_rank.j2", ctx.prompts_dir, question=question,
                            attributes=payload.get("causal_attributes", []),
                            candidates=[_normalise(strip_citations(texts[r])) for r in order])
    calls: list[int] = []
    details: dict[str, Any] = {"shown_order": order}
    recovered_all = True
    for role in ("D3_first", "D3_second"):
        request = ModelRequest(role=role, parts=[TextPart(text=prompt)], response_schema="Ranking",
                               template="d3_text_rank.j2", template_hash=digest, attempt=attempt,
                               item_id=ctx.item_id)
        response = ctx.runner.call(request)
        if response.call_id:
            calls.append(response.call_id)
        ranking = ranked_ratings(response.parsed, order) if response.parsed else None
        details[role] = ranking
        if ranking != INTENDED:
            recovered_all = False
            break
    verdict = (GateVerdict.reject("D3", "the intended order can be recovered from the text alone", **details)
               if recovered_all else GateVerdict.ok("D3", "not rankable from text alone", **details))
    verdict.call_ids = calls
    return verdict
