"""SPEC D3: a text-only judge ranks the gold (citations stripped) and the four wrong answers, shuffled
and formatted identically, with the causal attributes as rubric. A second judge runs only if the first
recovered the intended order exactly; the set is rejected only when both recover it. A judge whose
reply is not a ranking of the five (after the runner's repairs) is a checker fault, not "not recovered"."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from playlisteval.build.gates import GateVerdict
from playlisteval.build.gates.citations import uniform
from playlisteval.build.gates.ranking import read_ranking, validator
from playlisteval.models.request import ModelRequest, TextPart
from playlisteval.prompts.render import render

if TYPE_CHECKING:  # types only
    from playlisteval.build.gates.context import GateContext

INTENDED = [5, 4, 3, 2, 1]
JUDGES = ("D3_first", "D3_second")


def check(ctx: GateContext, question: str, gold: str, payload: dict[str, Any], attempt: int) -> GateVerdict:
    texts = {5: gold, **{r: payload[f"rating_{r}"]["response"] for r in (4, 3, 2, 1)}}
    order = list(INTENDED)
    ctx.rng("D3", attempt).shuffle(order)
    prompt, digest = render("d3_text_rank.j2", ctx.prompts_dir, question=question,
                            attributes=payload.get("causal_attributes", []),
                            candidates=[uniform(texts[r]) for r in order])
    calls: list[int] = []
    details: dict[str, Any] = {"shown_order": order}
    recovered_by_all = True
    for role in JUDGES:
        request = ModelRequest(role=role, parts=[TextPart(text=prompt)], response_schema="Ranking",
                               template="d3_text_rank.j2", template_hash=digest, attempt=attempt,
                               item_id=ctx.item_id)
        response = ctx.runner.call(request, validate=validator(len(order)))
        if response.call_id:
            calls.append(response.call_id)
        ranking = read_ranking("D3", role, response, order, calls)
        details[role] = ranking
        if ranking != INTENDED:  # this judge could not see the order: no need to ask the next one
            recovered_by_all = False
            break
    verdict = (GateVerdict.reject("D3", "detectable from the text alone: both text-only judges recovered "
                                  "the order gold ≻ 4 ≻ 3 ≻ 2 ≻ 1", **details)
               if recovered_by_all else GateVerdict.ok("D3", "not rankable from the text alone", **details))
    verdict.call_ids = calls
    return verdict
