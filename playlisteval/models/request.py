"""One provider-neutral request and response. Providers translate these; they own nothing else."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from playlisteval.logs.redaction import redact_known, secret_values
from playlisteval.models.reasoning import answer_of


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


class ToolCall(BaseModel):
    """One function call a model asked for (issue 20: the agentic judge). ``id`` is the provider's own
    (OpenAI's ``call_…``), or one we make where the wire has none (Gemini), so a result can name it."""

    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    signature: str | None = None  # Gemini's thought signature (base64): sent back with the call, as it requires


class ToolCallsPart(BaseModel):
    """The model's earlier turn in a tool-using conversation: what it said and the calls it made. The
    parts before it are the user's turn; the tool results after it answer its calls."""

    kind: Literal["tool_calls"] = "tool_calls"
    text: str = ""
    calls: list[ToolCall]


class ToolResultPart(BaseModel):
    """The result of one tool call, as text. Frames a tool fetched follow it as image parts."""

    kind: Literal["tool_result"] = "tool_result"
    call_id: str
    name: str
    content: str


Part = Annotated[TextPart | VideoPart | ImagePart | AudioPart | ToolCallsPart | ToolResultPart,
                 Field(discriminator="kind")]


class ToolSpec(BaseModel):
    """A function the model may call: a name, what it is for, and its arguments as a JSON schema."""

    name: str
    description: str
    parameters: dict[str, Any]


class GenerationSettings(BaseModel):
    thinking: str | None = None  # thinking level (Gemini) / reasoning effort (OpenAI)
    media_resolution: str | None = None
    max_output_tokens: int | None = None
    temperature: float | None = None  # only when the user sets it
    top_p: float | None = None
    # issue 20 (Table 9): a thinking token budget (Gemini 2.5, Qwen); a pixel budget per frame for the models
    # that take frames as images (vLLM, hf, Qwen; Table 18). Left out of hashes while unset (``stable_dump``)
    thinking_budget: int | None = None
    max_pixels: int | None = None


#: fields added after answers were first cached: a hash leaves them out while they hold their default, so
#: every request made before them keeps its cache key (and the sim its draws)
LATER_FIELDS: dict[str, tuple[str, ...]] = {
    "GenerationSettings": ("thinking_budget", "max_pixels"),
    "ModelRequest": ("tools", "tool_choice"),
}


def stable_dump(model: BaseModel, **kwargs: Any) -> dict[str, Any]:
    """``model_dump`` without the later fields that are still at their default (see ``LATER_FIELDS``)."""
    data = model.model_dump(**kwargs)
    for name in LATER_FIELDS.get(type(model).__name__, ()):
        default = type(model).model_fields[name].get_default(call_default_factory=True)
        if name in data and data[name] == default:
            data.pop(name)
    if isinstance(data.get("settings"), dict) and isinstance(getattr(model, "settings", None), BaseModel):
        data["settings"] = stable_dump(model.settings, **kwargs)  # type: ignore[attr-defined]
    return data


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
    tools: list[ToolSpec] = Field(default_factory=list)  # functions the model may call (agentic judge)
    tool_choice: Literal["auto", "none"] = "auto"  # "none": the tools stay declared, no call allowed

    def text(self) -> str:
        return "\n".join(p.text for p in self.parts if isinstance(p, TextPart))


class Usage(BaseModel):
    input_tokens: int = 0
    cached_input_tokens: int = 0  # of input_tokens, read from a cache (charged at the cached-input price)
    output_tokens: int = 0
    thinking_tokens: int = 0
    gpu_seconds: float = 0.0
    cpu_seconds: float = 0.0  # core-seconds of a model run on the CPU (llama), priced per [prices] cpu_hour


class ProviderReply(BaseModel):
    """What a provider returns: the raw text and usage. The runner parses and validates."""

    text: str
    usage: Usage = Field(default_factory=Usage)
    finish_reason: str = "stop"
    raw: dict[str, Any] = Field(default_factory=dict)
    tool_calls: list[ToolCall] = Field(default_factory=list)
    # issue 42: the reasoning a provider gave in a field of its own (``reasoning_content``, Gemini's thought
    # parts), never part of ``text``; thinking blocks inside ``text`` stay there (models/reasoning.py)
    thinking: str = ""

    @property
    def answer(self) -> str:
        """The text parsers read: ``text`` without its thinking blocks (models/reasoning.py)."""
        return answer_of(self.text)

    def without_keys(self) -> ProviderReply:
        """This reply with the known API keys hidden in every text it carries (see ``without_keys``)."""
        return ProviderReply.model_validate(without_keys(self.model_dump()))


def without_keys(value: Any, values: list[str] | None = None) -> Any:
    """A reply (a ``ProviderReply`` or ``ModelResponse`` dumped, or any part of one) with the known keys hidden
    in each string: its text, thinking, raw body, tool-call arguments, parsed answer (issue 44: a gateway
    that quotes the key in a normal 200 reply). Thought signatures (``signature``, Gemini's
    ``thoughtSignature``) are left as they came: they are sent back to the provider, which checks them."""
    values = secret_values() if values is None else values
    if isinstance(value, str):
        return redact_known(value, values)
    if isinstance(value, dict):
        return {k: v if isinstance(k, str) and k.lower().endswith("signature") else without_keys(v, values)
                for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(without_keys(v, values) for v in value)
    return value


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
    tool_calls: list[ToolCall] = Field(default_factory=list)  # cached with the answer: a replay calls the same
    thinking: str = ""  # the provider's reasoning field (``ProviderReply.thinking``), cached with the answer

    @property
    def answer(self) -> str:
        """The text parsers read: ``text`` without its thinking blocks (models/reasoning.py)."""
        return answer_of(self.text)
