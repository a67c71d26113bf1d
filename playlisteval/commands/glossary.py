"""What the gate ids and item states printed by `status`, `funnel`, `show` and the report mean.

One source for the README's glossary and the legends under the CLI's tables (a test keeps the README
in step with it). The SPEC ids (../shared/SPEC.md) are kept as the names because the paper uses them.
"""

from __future__ import annotations

#: Gate id → what it checks, in the order a build runs them.
GATES: dict[str, str] = {
    "C1": "structure of the question and gold answer, no model: ≥ 3 paragraphs, citations that parse and "
          "cover both segments (≥ 2 chunks each, 4–30 in all), the Bloom keyword in the question",
    "C2.1": "transcript shortcut: a model answers from transcripts alone; a verifier of another family saying "
            "it matches the gold rejects the question",
    "C2.2": "world-knowledge shortcut: the question alone answered from memory by two model pairs; rejected "
            "only when both match the gold",
    "C3": "video sufficiency: a third model family watches both segments and must find the question and the "
          "answer grounded in them",
    "D2": "structure of the four wrong answers, no model: each non-empty, each with a visual-only "
          "degradation, importances summing to 1",
    "D3": "text-only undetectability: text-only judges must NOT recover the intended order gold ≻ 4 ≻ 3 ≻ 2 ≻ 1",
    "D4": "visual detectability: the video verifier must recover 4 ≻ 3 ≻ 2 ≻ 1 from the video",
}

#: Item state → what it means.
STATES: dict[str, str] = {
    "pending": "waiting for its (next) question and gold answer (Phase I)",
    "qa_generated": "a question and gold answer wait for the Phase I gates C1–C3",
    "gated": "the question passed; waiting for its four wrong answers (Phase II)",
    "degraded": "four wrong answers wait for the Phase II gates D2–D4",
    "accepted": "passed every gate: ready for `select`",
    "selected": "kept by the difficulty gate and drawn into the benchmark",
    "too_easy": "the weak judges solved every pair of it: left out of the benchmark",
    "discarded": "ran out of attempts (SPEC E3): kept on record, not used",
    "failed": "stopped by an error that is kept on the item; `playlisteval retry-failed` puts it back",
}


def legend(ids: list[str] | None = None, table: dict[str, str] | None = None) -> str:
    """One line per id, for printing under a table."""
    source = table if table is not None else GATES
    return "\n".join(f"{key:>7}  {source[key]}" for key in (ids or list(source)) if key in source)
