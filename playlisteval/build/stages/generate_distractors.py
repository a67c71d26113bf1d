"""Phase II (SPEC D1): four graded wrong answers for the verified question, with their causal record.

Inputs: the same two clips as Phase I (video, audio, markers), then the prompt with the fixed question,
the gold answer with its citations, the visual categories in a fresh seeded order for this request,
and every earlier rejected set of the seed (SPEC E1). The causal record is stored with the set and
with each answer: its degradations and its degraded weight (SPEC D1.1).
"""

from __future__ import annotations

from typing import Any

from playlisteval.build.stages.context import StepContext, StepResult, unusable_output
from playlisteval.build.stages.feedback import phase2_failures
from playlisteval.build.stages.generate_qa import generator_clips
from playlisteval.build.stages.inputs import load_clips
from playlisteval.models.request import ModelRequest, TextPart
from playlisteval.prompts.render import render
from playlisteval.store import direct
from playlisteval.store.direct import Inserts
from playlisteval.store.engine import read_core
from playlisteval.store.items import HeldItem
from playlisteval.store.states import Event
from playlisteval.store.tables import QA, Answer, DistractorSet, Item

CATEGORIES = (
    "colour and appearance (of objects, surfaces, clothing)",
    "spatial layout (left or right, foreground or background, what stands next to what)",
    "gesture and posture (hands, body, where someone looks)",
    "props and objects (what is held, used or lying about, when the narration does not name it)",
    "environment and signage (the setting, the room, the signs in view)",
    "on-screen graphics that nobody reads aloud (slides, diagrams, captions, charts)",
    "crowd and presence (how many people are in view, how an audience reacts)",
)
RATINGS = (4, 3, 2, 1)


def degraded_weight(payload: dict[str, Any], rating: int) -> float:
    """Sum of the importance of the causal attributes this answer degrades (SPEC D1.1)."""
    weights = {a["attribute_name"]: float(a["importance_score"]) for a in payload.get("causal_attributes", [])}
    degraded = {d["attribute_name"] for d in payload.get(f"rating_{rating}", {}).get("attribute_degradations", [])}
    return round(sum(weights.get(name, 0.0) for name in degraded), 6)


def category_order(ctx: StepContext, attempt: int) -> list[str]:
    """The seven categories in a fresh order for this request (SPEC D1), seeded by item and attempt."""
    categories = list(CATEGORIES)
    ctx.rng("D1", attempt).shuffle(categories)
    return categories


def build_request(ctx: StepContext, qa: QA, attempt: int) -> ModelRequest:
    prompt, digest = render(
        "d1_distractors.j2", ctx.prompts_dir, question=qa.question, gold=qa.answer,
        categories=category_order(ctx, attempt),
        failures=phase2_failures(ctx.engine, ctx.item_id, qa.id, ctx.prompts_dir))
    return ModelRequest(
        role="D1", parts=[*generator_clips(ctx, load_clips(ctx.engine, ctx.item_id)), TextPart(text=prompt)],
        response_schema="DistractorGeneration", template="d1_distractors.j2", template_hash=digest,
        attempt=attempt, item_id=ctx.item_id,
    )


def run(ctx: StepContext) -> StepResult:
    with read_core(ctx.engine) as conn:  # two primary-key reads on the driver's cursor (store/direct.py)
        item = direct.get(conn, Item, ctx.item_id)
        qa = direct.get(conn, QA, item.current_qa_id) if item and item.current_qa_id else None
    if qa is None:
        raise LookupError(f"item {ctx.item_id} has no verified question")
    attempt = ctx.progress.phase2_attempts + 1
    request = build_request(ctx, qa, attempt)
    response = ctx.runner.call(request)
    payload: dict[str, Any] = response.parsed or {"raw": response.text}
    dset = DistractorSet(item_id=ctx.item_id, qa_id=qa.id or 0, attempt=attempt, payload=payload,
                         template=request.template, template_hash=request.template_hash,
                         malformed=response.malformed)
    if response.malformed:
        return unusable_output(ctx.item_id, 2, attempt, "D2", response, payload, dset)

    def write(s: Inserts, item: HeldItem) -> None:
        s.add(dset)
        s.flush()
        assert dset.id is not None
        gold_record = {"causal_attributes": payload["causal_attributes"],
                       "gold_standard_analysis": payload["gold_standard_analysis"]}
        s.add(Answer(set_id=dset.id, rating=5, text=qa.answer, degraded_weight=0.0, record=gold_record))
        for rating in RATINGS:
            entry = payload[f"rating_{rating}"]
            s.add(Answer(set_id=dset.id, rating=rating, text=entry["response"],
                         degraded_weight=degraded_weight(payload, rating), record=entry))
        item.current_set_id = dset.id

    return StepResult(Event.GENERATED, write)
