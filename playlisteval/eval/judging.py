"""One pairwise judgment through the runner (SPEC G4), shared by the difficulty gate (F2) and judge runs.

The judge gets the evidence's frames and/or audio as parts, then the G4 prompt (``g4_judge.j2``) with
the question, the transcript block when its modality includes one, and the two answers with their
citations removed as Model A and Model B.
"""

from __future__ import annotations

from dataclasses import dataclass

from playlisteval.config import Settings
from playlisteval.errors import ConfigError, PermanentModelError, TransientModelError
from playlisteval.eval.evidence import Evidence
from playlisteval.eval.media import audio_parts, image_parts
from playlisteval.eval.verdicts import ERROR, outcome_of, parse_verdict
from playlisteval.gates.citations import strip_citations
from playlisteval.models.request import AudioPart, GenerationSettings, ImagePart, ModelRequest, TextPart
from playlisteval.models.runner import Runner
from playlisteval.prompts.render import render
from playlisteval.stages.context import prompts_dir_of

TEMPLATE = "g4_judge.j2"
#: modality → (frames shown, second stream)
MODALITIES: dict[str, tuple[bool, str | None]] = {
    "frames+transcript": (True, "transcript"),
    "frames": (True, None),
    "transcript": (False, "transcript"),
    "frames+audio": (True, "audio"),
    "audio": (False, "audio"),
}


def check_modality(modality: str) -> str:
    if modality not in MODALITIES:
        raise ConfigError(f"unknown modality {modality!r}; known: {', '.join(MODALITIES)}")
    return modality


@dataclass(frozen=True)
class AudioOptions:
    mode: str = "track"
    speed: float = 1.0
    pause_s: float = 0.6


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


@dataclass(frozen=True)
class Reply:
    verdict: str | None
    outcome: str
    raw: str
    call_id: int


def ask(runner: Runner, spec: str, role: str, question: str, answer_a: str, answer_b: str, given: JudgeInput,
        generation: GenerationSettings, *, purpose: str, item_id: int, run_id: int | None = None) -> Reply:
    """Ask judge ``spec`` (playing ``role``) which answer is better. A call that fails for good is an
    ``error`` outcome (no verdict); a missing provider, a bad setting or the budget still raise."""
    prompt, digest = render(TEMPLATE, prompts_dir_of(runner.settings), question=question,
                            transcript=given.transcript, answer_a=strip_citations(answer_a),
                            answer_b=strip_citations(answer_b))
    request = ModelRequest(role=role, parts=[*given.media, TextPart(text=prompt)], settings=generation,
                           template=TEMPLATE, template_hash=digest, item_id=item_id, purpose=purpose, run_id=run_id)
    try:
        response = runner.call(request, model=spec)
    except (PermanentModelError, TransientModelError) as exc:
        return Reply(None, ERROR, f"{type(exc).__name__}: {exc}", 0)
    verdict = parse_verdict(response.text)
    return Reply(verdict, outcome_of(verdict, response.finish_reason), response.text, response.call_id or 0)
