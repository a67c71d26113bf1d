"""SPEC C2.1: can the question be answered from transcripts alone? A "Yes" from the verifier rejects."""

from __future__ import annotations

from playlisteval.gates import GateVerdict
from playlisteval.gates.verify import answer_then_verify
from playlisteval.stages.context import StepContext
from playlisteval.stages.inputs import Clip, transcript_windows


def check(ctx: StepContext, question: str, gold: str, clips: tuple[Clip, Clip], attempt: int) -> GateVerdict:
    rng = ctx.rng("C2.1", attempt)
    windows = [w for clip in clips for w in transcript_windows(ctx.engine, clip, rng)]
    rng.shuffle(windows)  # shuffled per item so the relevant passage is not first
    said_yes, details, calls = answer_then_verify(
        ctx, "c2_transcript_answer.j2", {"windows": windows}, "C2_transcript_answer", "C2_transcript_verify",
        question, gold, attempt,
    )
    verdict = (GateVerdict.reject("C2.1", "answerable from the transcripts alone", **details) if said_yes
               else GateVerdict.ok("C2.1", "not answerable from transcripts", **details))
    verdict.call_ids = calls
    return verdict
