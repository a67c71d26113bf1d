"""One pairwise judgment through the runner (SPEC G4), shared by the difficulty gate (F2) and judge runs.

The judge gets the evidence's frames and/or audio as parts, then the G4 prompt (``g4_judge.j2``) with
the question, the transcript block when its modality includes one, and the two answers with their
citations removed as Model A and Model B.
"""

from __future__ import annotations

from dataclasses import dataclass

from playlisteval.build.gates.citations import strip_citations
from playlisteval.config import Settings
from playlisteval.errors import BudgetExceeded, ModelError, ProviderNotAvailable, QuotaExhausted
from playlisteval.eval.evidence import Evidence
from playlisteval.eval.media import audio_parts, image_parts
from playlisteval.eval.modes import MODALITIES, AudioOptions, check_modality  # also imported from here
from playlisteval.eval.verdicts import ERROR, outcome_of, parse_verdict
from playlisteval.models.request import AudioPart, GenerationSettings, ImagePart, ModelRequest, TextPart
from playlisteval.models.runner import Runner
from playlisteval.prompts.render import prompts_dir_of, render

TEMPLATE = "g4_judge.j2"


@dataclass(frozen=True)
class JudgeInput:
    media: list[ImagePart | AudioPart]
    transcript: str  # "" when the modality sends none


def judge_input(settings: Settings, evidence: Evidence, modality: str, size: tuple[int, int],
                audio: AudioOptions) -> JudgeInput:
    frames, stream = MODALITIES[check_modality(modality)]
    media: list[ImagePart | AudioPart] = list(image_parts(settings, evidence, size)) if frames else []
    if stream == "audio":
        media += audio_parts(settings, evidence, mode=audio.mode, speed=audio.speed, pause_s=audio.pause_s)
    transcript = evidence.transcript_block() if stream == "transcript" else ""
    return JudgeInput(media, transcript)


#: why no later call of the same pass can succeed either (``Reply.stop``)
BUDGET, QUOTA, UNAVAILABLE = "budget", "quota", "unavailable"


@dataclass(frozen=True)
class Reply:
    verdict: str | None
    outcome: str
    raw: str
    call_id: int
    error: str = ""  # the failure, when outcome is ``error``: never a verdict, never a score
    stop: str = ""  # BUDGET / QUOTA / UNAVAILABLE: the caller asks nothing more in this pass


def stop_reason(exc: BaseException) -> str:
    """Whether a failed call says that every call after it would fail the same way."""
    if isinstance(exc, QuotaExhausted):
        return QUOTA
    if isinstance(exc, BudgetExceeded):
        return BUDGET
    # the runner wraps what a provider raised at call time (a key missing from the environment)
    if isinstance(exc, ProviderNotAvailable) or isinstance(exc.__cause__, ProviderNotAvailable):
        return UNAVAILABLE
    return ""


def ask(runner: Runner, spec: str, role: str, question: str, answer_a: str, answer_b: str, given: JudgeInput,
        generation: GenerationSettings, *, purpose: str, item_id: int, run_id: int | None = None,
        attempt: int = 0) -> Reply:
    """Ask judge ``spec`` (playing ``role``) which answer is better. A call that fails — a provider
    error, a missing key, the quota, the budget — is an ``error`` reply with the failure's text and no
    verdict; a bad setting still raises. ``attempt`` > 0 asks anew past the response cache."""
    prompt, digest = render(TEMPLATE, prompts_dir_of(runner.settings), question=question,
                            transcript=given.transcript, answer_a=strip_citations(answer_a),
                            answer_b=strip_citations(answer_b))
    request = ModelRequest(role=role, parts=[*given.media, TextPart(text=prompt)], settings=generation,
                           template=TEMPLATE, template_hash=digest, item_id=item_id, purpose=purpose, run_id=run_id,
                           attempt=attempt)
    try:
        response = runner.call(request, model=spec)
    except ModelError as exc:
        error = f"{type(exc).__name__}: {exc}"
        return Reply(None, ERROR, "", 0, error=error, stop=stop_reason(exc))
    verdict = parse_verdict(response.text)
    return Reply(verdict, outcome_of(verdict, response.finish_reason), response.text, response.call_id or 0)
