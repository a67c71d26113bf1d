"""Phase II (SPEC D1): four graded wrong answers for the verified question, with their causal record."""

from __future__ import annotations

from typing import Any

from sqlmodel import Session

from playlisteval.gates import GateVerdict
from playlisteval.models.request import ModelRequest, TextPart, VideoPart
from playlisteval.prompts.render import render
from playlisteval.stages.context import StepContext, StepResult, gate_rows
from playlisteval.stages.feedback import failures
from playlisteval.stages.generate_qa import GEN_SIZE
from playlisteval.stages.inputs import load_clips
from playlisteval.state import Event
from playlisteval.store.engine import transaction
from playlisteval.store.tables import QA, Answer, DistractorSet, Item

CATEGORIES = (
    "colour or appearance of objects and people",
    "spatial layout (where things are in the frame)",
    "gesture or posture",
    "props and objects present",
    "environment and signage",
    "on-screen graphics that are not narrated",
    "crowd or presence (who or how many are there)",
)
RATINGS = (4, 3, 2, 1)


def degraded_weight(payload: dict[str, Any], rating: int) -> float:
    """Sum of the importance of the causal attributes this answer degrades (SPEC D1.1)."""
    weights = {a["attribute_name"]: float(a["importance_score"]) for a in payload.get("causal_attributes", [])}
    degraded = {d["attribute_name"] for d in payload.get(f"rating_{rating}", {}).get("attribute_degradations", [])}
    return round(sum(weights.get(name, 0.0) for name in degraded), 6)


def run(ctx: StepContext) -> StepResult:
    with transaction(ctx.engine) as s:
        item = s.get(Item, ctx.item_id)
        qa = s.get(QA, item.current_qa_id) if item and item.current_qa_id else None
    if qa is None:
        raise LookupError(f"item {ctx.item_id} has no verified question")
    attempt = ctx.progress.phase2_attempts + 1
    clips = load_clips(ctx.engine, ctx.item_id)
    categories = list(CATEGORIES)
    ctx.rng("D1", attempt).shuffle(categories)  # a fresh order per request (SPEC D1)
    prompt, digest = render("d1_distractors.j2", ctx.prompts_dir, question=qa.question, gold=qa.answer,
                            categories=categories,
                            failures=failures(ctx.engine, ctx.item_id, 2, ctx.prompts_dir))
    request = ModelRequest(
        role="D1",
        parts=[*(VideoPart(path=c.path, start=c.start, end=c.end, fps=ctx.settings.build.gen_fps, size=GEN_SIZE,
                           media_resolution="medium", audio=True, label=f"Clip {c.number}") for c in clips),
               TextPart(text=prompt)],
        response_schema="DistractorGeneration", template="d1_distractors.j2", template_hash=digest,
        attempt=attempt, item_id=ctx.item_id,
    )
    response = ctx.runner.call(request)
    payload: dict[str, Any] = response.parsed or {"raw": response.text}
    dset = DistractorSet(item_id=ctx.item_id, qa_id=qa.id or 0, attempt=attempt, payload=payload,
                         template="d1_distractors.j2", template_hash=digest, malformed=response.malformed)
    if response.malformed:
        verdict = GateVerdict.reject("D1", f"generator output unusable: {response.malformed_reason}")
        verdict.call_ids = [response.call_id] if response.call_id else []
        rows = gate_rows(ctx.item_id, 2, attempt, [verdict], payload)

        def write_malformed(s: Session, item: Item) -> None:
            s.add(dset)
            s.add_all(rows)

        return StepResult(Event.MALFORMED, write_malformed, verdict.reason)

    def write(s: Session, item: Item) -> None:
        s.add(dset)
        s.flush()
        assert dset.id is not None
        s.add(Answer(set_id=dset.id, rating=5, text=qa.answer, degraded_weight=0.0))
        for rating in RATINGS:
            entry = payload[f"rating_{rating}"]
            s.add(Answer(set_id=dset.id, rating=rating, text=entry["response"],
                         degraded_weight=degraded_weight(payload, rating), record=entry))
        item.current_set_id = dset.id

    return StepResult(Event.GENERATED, write)
