"""SPEC C2.2: can the question be answered from memory? Combination B runs only when A said "Yes";
rejected only when both say "Yes"."""

from __future__ import annotations

from playlisteval.gates import GateVerdict
from playlisteval.gates.verify import answer_then_verify
from playlisteval.stages.context import StepContext


def check(ctx: StepContext, question: str, gold: str, attempt: int) -> GateVerdict:
    calls: list[int] = []
    yes_a, details_a, c = answer_then_verify(
        ctx, "c2_parametric_answer.j2", {}, "C2_parametric_answer_a", "C2_parametric_verify_a",
        question, gold, attempt)
    calls += c
    details = {"a": details_a}
    if yes_a:
        yes_b, details_b, c = answer_then_verify(
            ctx, "c2_parametric_answer.j2", {}, "C2_parametric_answer_b", "C2_parametric_verify_b",
            question, gold, attempt)
        calls += c
        details["b"] = details_b
        if yes_b:
            verdict = GateVerdict.reject("C2.2", "answerable from world knowledge (both combinations)",
                                         **details)
            verdict.call_ids = calls
            return verdict
    verdict = GateVerdict.ok("C2.2", "not answerable from memory", **details)
    verdict.call_ids = calls
    return verdict
