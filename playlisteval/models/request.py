"""One provider-neutral request and response. Providers translate these; they own nothing else."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field


class TextPart(BaseModel):
    kind: Literal["text"] = "text"
    text: str


class VideoPart(BaseModel):
    """A clip of a video file: [start, end) seconds, sampled at ``fps``, fit inside ``size``."""

    kind: Literal["video"] = "video"
    path: str
    start: float
    end: float
    fps: float = 0.5
    size: tuple[int, int] | None = None  # (width, height) to fit inside, keeping aspect
    media_resolution: str | None = None  # low / medium / high (Gemini)
    audio: bool = True
    label: str = ""  # e.g. "Clip 1": providers put it as a text marker before the clip


class ImagePart(BaseModel):
    kind: Literal["image"] = "image"
    path: str
    timestamp: float | None = None  # seconds in its source video
    source: str | None = None  # the source video path, when known


class AudioPart(BaseModel):
    kind: Literal["audio"] = "audio"
    path: str
    start: float | None = None
    end: float | None = None


Part = Annotated[TextPart | VideoPart | ImagePart | AudioPart, Field(discriminator="kind")]


class GenerationSettings(BaseModel):
    thinking: str | None = None  # thinking level (Gemini) / reasoning effort (OpenAI)
    media_resolution: str | None = None
    max_output_tokens: int | None = None
    temperature: float | None = None  # only when the user sets it
    top_p: float | None = None


class ModelRequest(BaseModel):
    role: str  # SPEC block, e.g. "B", "C2_transcript_answer", "D4", "G"
    parts: list[Part]
    response_schema: str | None = None  # name in playlisteval.prompts.schemas.SCHEMAS
    settings: GenerationSettings = Field(default_factory=GenerationSettings)
    template: str = ""
    template_hash: str = ""
    attempt: int = 0  # the item's attempt number: a new attempt is a new request (DESIGN 3)
    repair_note: str | None = None  # appended after a malformed answer
    item_id: int | None = None
    purpose: str = "build"
    run_id: int | None = None  # the judge run an eval call belongs to (ledger only; not part of the hash)

    def text(self) -> str:
        return "\n".join(p.text for p in self.parts if isinstance(p, TextPart))


class Usage(BaseModel):
    input_tokens: int = 0
    cached_input_tokens: int = 0  # of input_tokens, read from a cache (charged at the cached-input price)
    output_tokens: int = 0
    thinking_tokens: int = 0
    gpu_seconds: float = 0.0


class ProviderReply(BaseModel):
    """What a provider returns: the raw text and usage. The runner parses and validates."""

    text: str
    usage: Usage = Field(default_factory=Usage)
    finish_reason: str = "stop"
    raw: dict[str, Any] = Field(default_factory=dict)


class ModelResponse(BaseModel):
    text: str = ""
    parsed: dict[str, Any] | None = None  # validated against the response schema
    usage: Usage = Field(default_factory=Usage)
    finish_reason: str = "stop"
    raw: dict[str, Any] = Field(default_factory=dict)
    malformed: bool = False  # stayed malformed after repair retries: the caller rejects on it
    malformed_reason: str | None = None
    cached: bool = False
    call_id: int | None = None  # the ledger row
    usd: float = 0.0
