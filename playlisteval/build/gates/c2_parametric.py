"""SPEC C2.2: can the question be answered from memory? Combination A (answerer A, verifier A) runs
first; combination B runs only when A said "Yes"; the question is rejected only when both say "Yes"."""

from __future__ import annotations

from typing import TYPE_CHECKING

from playlisteval.build.gates import GateVerdict
from playlisteval.build.gates.verify import answer_then_verify

if TYPE_CHECKING:  # types only
    from playlisteval.build.gates.context import GateContext


def check(ctx: GateContext, question: str, gold: str, attempt: int) -> GateVerdict:
    yes_a, details_a, calls = answer_then_verify(
        ctx, "C2.2", "c2_parametric_answer.j2", {}, "C2_parametric_answer_a", "C2_parametric_verify_a",
        question, gold, attempt)
    details = {"a": details_a}
    if yes_a:  # only a "Yes" from A is worth a second opinion
        yes_b, details_b, more = answer_then_verify(
            ctx, "C2.2", "c2_parametric_answer.j2", {}, "C2_parametric_answer_b", "C2_parametric_verify_b",
            question, gold, attempt)
        calls += more
        details["b"] = details_b
        if yes_b:
            verdict = GateVerdict.reject("C2.2", "answerable from world knowledge: both combinations "
                                         "matched a memory-only answer to the gold", **details)
            verdict.call_ids = calls
            return verdict
    verdict = GateVerdict.ok("C2.2", "not answerable from memory", **details)
    verdict.call_ids = calls
    return verdict
