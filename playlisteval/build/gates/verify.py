"""SPEC C2.3: a text-only answer ({explanation, answer}) and a verdict on it ({explanation, judgement}).
Only the answer — not the reasoning — reaches the verifier. An answerer or verifier whose reply stays
unusable after the runner's repairs is a checker fault: it neither rejects nor passes the question."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from playlisteval.build.gates import unusable
from playlisteval.models.request import ModelRequest, TextPart
from playlisteval.prompts.render import render

if TYPE_CHECKING:  # types only
    from playlisteval.build.gates.context import GateContext


def _ask(ctx: GateContext, role: str, template: str, schema: str, attempt: int, **values: Any) -> Any:
    text, digest = render(template, ctx.prompts_dir, **values)
    request = ModelRequest(role=role, parts=[TextPart(text=text)], response_schema=schema, template=template,
                           template_hash=digest, attempt=attempt, item_id=ctx.item_id)
    return ctx.runner.call(request)


def answer_then_verify(
    ctx: GateContext, gate: str, answer_template: str, extra: dict[str, Any], answer_role: str,
    verify_role: str, question: str, gold: str, attempt: int,
) -> tuple[bool, dict[str, Any], list[int]]:
    """(verifier said Yes, details, ledger ids); raises CheckerFault for ``gate`` when either reply is
    unusable (a "No" would pass the question on no evidence)."""
    answered = _ask(ctx, answer_role, answer_template, "TextAnswer", attempt, question=question, **extra)
    calls = [answered.call_id] if answered.call_id else []
    if answered.malformed or answered.parsed is None:
        raise unusable(gate, answer_role, answered, calls)
    candidate = answered.parsed["answer"]
    verdict = _ask(ctx, verify_role, "c2_verify.j2", "Verdict", attempt, question=question, gold=gold,
                   candidate=candidate)
    if verdict.call_id:
        calls.append(verdict.call_id)
    if verdict.malformed or verdict.parsed is None:
        raise unusable(gate, verify_role, verdict, calls)
    said_yes = verdict.parsed["judgement"] == "Yes"
    return said_yes, {"answer": candidate, "judgement": verdict.parsed["judgement"],
                      "explanation": verdict.parsed["explanation"]}, calls
