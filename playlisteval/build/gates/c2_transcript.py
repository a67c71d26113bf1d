"""SPEC C2.1: can the question be answered from transcripts alone? A "Yes" from the verifier rejects.

The answerer gets the question and six transcript windows (each clip's own and two from another video
of the playlist, shuffled once per item); the verifier gets only its final answer and the gold.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from playlisteval.build.gates import GateVerdict
from playlisteval.build.gates.verify import answer_then_verify
from playlisteval.build.inputs import Clip, transcript_windows

if TYPE_CHECKING:  # types only
    from playlisteval.build.gates.context import GateContext


def check(ctx: GateContext, question: str, gold: str, clips: tuple[Clip, Clip], attempt: int) -> GateVerdict:
    windows = transcript_windows(ctx.engine, clips, ctx.rng("C2.1"), ctx.settings.index.chunk_s)
    said_yes, details, calls = answer_then_verify(
        ctx, "C2.1", "c2_transcript_answer.j2", {"windows": windows}, "C2_transcript_answer", "C2_transcript_verify",
        question, gold, attempt,
    )
    details["windows"] = len(windows)
    verdict = (GateVerdict.reject("C2.1", "answerable from the transcripts alone: the verifier matched "
                                  "the transcript-only answer to the gold", **details) if said_yes
               else GateVerdict.ok("C2.1", "not answerable from the transcripts", **details))
    verdict.call_ids = calls
    return verdict
