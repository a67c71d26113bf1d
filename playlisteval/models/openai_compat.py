"""OpenAI chat completions, and the servers that speak the same protocol: DashScope (Qwen) and vLLM.

Thin (DESIGN 6): a request becomes one ``chat.completions.create`` call with the SDK's own retries off
(``max_retries=0``: the runner alone retries); video becomes frames at the request's fps, capped by the
model's image limit (frames carry no sound: a clip's audio reaches these models only through the
transcript in the prompt, or as an explicit audio part); a response schema becomes a strict
``json_schema`` response format. A refusal is returned as a normal reply (finish reason "refusal"):
the runner finds it malformed and repairs or reports it. Errors are sorted into transient (429 with its
Retry-After, 408/409, 5xx, timeouts, connection errors) and permanent ones; an exhausted quota pauses
the build instead of retrying.
"""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any

import openai
from pydantic import BaseModel

from playlisteval.config import Settings
from playlisteval.errors import (
    MediaError,
    ModelError,
    PermanentModelError,
    ProviderNotAvailable,
    QuotaExhausted,
    TransientModelError,
)
from playlisteval.media.clips import ClipSpec, audio_clip, model_clip
from playlisteval.models.media_parts import FramedVideo, data_url, framed
from playlisteval.models.request import (
    AudioPart,
    ImagePart,
    ModelRequest,
    ProviderReply,
    TextPart,
    Usage,
    VideoPart,
)
from playlisteval.models.wire import fallback_usage, mmss, parse_retry_after, strict_json_schema

_QUOTA_CODES = {"insufficient_quota", "billing_hard_limit_reached", "billing_not_active", "Arrearage"}
_OFF = {"none", "off", "minimal", "false", "0"}


def map_error(exc: Exception, where: str) -> ModelError:
    """An openai SDK exception as the runner's transient / permanent / quota error."""
    if isinstance(exc, openai.APITimeoutError):
        return TransientModelError(f"{where}: timed out")
    if isinstance(exc, openai.APIConnectionError):
        return TransientModelError(f"{where}: connection error: {exc}")
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        text = f"{where}: {str(exc.message)[:300]}"  # the SDK's message starts "Error code: NNN"
        if exc.code in _QUOTA_CODES:
            return QuotaExhausted(text)
        if status in (408, 409, 429) or status >= 500:
            return TransientModelError(text, retry_after=parse_retry_after(exc.response.headers))
        return PermanentModelError(text)
    if isinstance(exc, openai.APIError):  # e.g. a response body that is not the JSON it should be
        return TransientModelError(f"{where}: unreadable response: {str(exc)[:200]}")
    return PermanentModelError(f"{where}: {type(exc).__name__}: {str(exc)[:300]}")


class OpenAIProvider:
    name = "openai"
    key_env: tuple[str, ...] = ("OPENAI_API_KEY",)
    key_optional = False
    max_tokens_param = "max_completion_tokens"

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._client: openai.OpenAI | None = None
        self._lock = threading.Lock()

    # -- configuration -----------------------------------------------------------------------------
    def base_url(self) -> str | None:
        return self.settings.providers.openai_base_url or None

    def api_key(self) -> str:
        for name in self.key_env:
            if os.environ.get(name):
                return os.environ[name]
        if self.key_optional:
            return "EMPTY"
        raise ProviderNotAvailable(f"{self.name}: set {self.key_env[0]} in the environment")

    def client(self) -> openai.OpenAI:
        """One client per provider per process, kept alive (its connection pool is reused)."""
        with self._lock:
            if self._client is None:
                self._client = openai.OpenAI(api_key=self.api_key(), base_url=self.base_url(), max_retries=0,
                                             timeout=self.settings.runner.timeout_s)
            return self._client

    # -- the call ----------------------------------------------------------------------------------
    def complete(self, model: str, request: ModelRequest, schema: type[BaseModel] | None,
                 timeout: float) -> ProviderReply:
        client = self.client()
        content = self.content(model, request)
        kwargs = self.options(request)
        if schema is not None:
            response_format, note = self.response_format(schema)
            kwargs["response_format"] = response_format
            if note:
                content.append({"type": "text", "text": note})
        where = f"{self.name}/{model}"
        started = time.monotonic()
        try:
            # content entries the SDK's types do not know (Qwen's frame lists, vLLM's video_url) are
            # sent as given: hence the plain dicts
            messages: Any = [{"role": "user", "content": content}]
            completion = client.chat.completions.create(model=model, messages=messages, timeout=timeout, **kwargs)
        except openai.OpenAIError as exc:
            raise map_error(exc, where) from exc
        except ValueError as exc:  # a body cut off mid-JSON: the server glitched, try again later
            raise TransientModelError(f"{where}: unreadable response: {str(exc)[:200]}") from exc
        return self.reply(completion, request, time.monotonic() - started)

    def content(self, model: str, request: ModelRequest) -> list[dict[str, Any]]:
        videos = self.frames(model, request)
        out: list[dict[str, Any]] = []
        for i, part in enumerate(request.parts):
            if isinstance(part, TextPart):
                out.append({"type": "text", "text": part.text})
            elif isinstance(part, VideoPart):
                if part.label:
                    out.append({"type": "text", "text": f"{part.label}:"})
                out.extend(self.video_content(part, videos.get(i)))
            elif isinstance(part, ImagePart):
                if part.timestamp is not None:
                    out.append({"type": "text", "text": f"[frame @ {mmss(part.timestamp)}]"})
                out.append(self.image(data_url(part.path)))
            elif isinstance(part, AudioPart):
                out.append(self.audio(part))
        return out

    def frames(self, model: str, request: ModelRequest) -> dict[int, FramedVideo]:
        return framed(self.settings, request, f"{self.name}/{model}", self.min_frames())

    def min_frames(self) -> int:
        return 1

    def image(self, url: str) -> dict[str, Any]:
        return {"type": "image_url", "image_url": {"url": url, "detail": self.settings.providers.image_detail}}

    def video_content(self, part: VideoPart, video: FramedVideo | None) -> list[dict[str, Any]]:
        """Each frame as an image, preceded by its time on the clip's own clock (as prompts cite it)."""
        assert video is not None
        out: list[dict[str, Any]] = []
        for t, path in zip(video.times, video.paths, strict=True):
            out.append({"type": "text", "text": f"[{mmss(t - video.part.start)}]"})
            out.append(self.image(data_url(path)))
        return out

    def audio(self, part: AudioPart) -> dict[str, Any]:
        try:
            path = audio_clip(part.path, part.start, part.end, self.settings.media_dir, fmt="wav",
                              timeout_s=self.settings.providers.clip_timeout_s)
        except MediaError as exc:
            raise PermanentModelError(f"cannot cut audio: {exc}") from exc
        data = data_url(path).split(",", 1)[1]
        return {"type": "input_audio", "input_audio": {"data": data, "format": "wav"}}

    def response_format(self, schema: type[BaseModel]) -> tuple[dict[str, Any], str | None]:
        return {"type": "json_schema", "json_schema": {
            "name": schema.__name__, "schema": strict_json_schema(schema), "strict": True}}, None

    def options(self, request: ModelRequest) -> dict[str, Any]:
        """Generation settings; sampling parameters only when the user set them."""
        g = request.settings
        out: dict[str, Any] = {}
        if g.thinking:
            out["reasoning_effort"] = g.thinking
        if g.max_output_tokens:
            out[self.max_tokens_param] = g.max_output_tokens
        if g.temperature is not None:
            out["temperature"] = g.temperature
        if g.top_p is not None:
            out["top_p"] = g.top_p
        return out

    # -- the answer --------------------------------------------------------------------------------
    def reply(self, completion: Any, request: ModelRequest, latency: float) -> ProviderReply:
        raw = completion.model_dump(mode="json", exclude_none=True)
        choice = completion.choices[0] if completion.choices else None
        message = choice.message if choice is not None else None
        finish = (choice.finish_reason if choice is not None else None) or "empty"
        text = (message.content if message is not None else None) or ""
        refusal = getattr(message, "refusal", None) if message is not None else None
        if refusal:
            text, finish = refusal, "refusal"
        usage = self.usage(completion, request, text)
        if completion.usage is None:
            raw["usage_estimated"] = True
        usage.gpu_seconds = self.gpu_seconds(latency)
        return ProviderReply(text=text, usage=usage, finish_reason=str(finish), raw=raw)

    def usage(self, completion: Any, request: ModelRequest, text: str) -> Usage:
        u = completion.usage
        if u is None:
            return fallback_usage(request, text)
        details = getattr(u, "completion_tokens_details", None)
        thinking = int(getattr(details, "reasoning_tokens", None) or 0)
        # prompt caching: the part of the prompt read from the cache, charged at the cached-input price
        cached = int(getattr(getattr(u, "prompt_tokens_details", None), "cached_tokens", None) or 0)
        # completion_tokens includes the reasoning tokens: the ledger keeps them apart
        return Usage(input_tokens=int(u.prompt_tokens or 0), cached_input_tokens=cached,
                     output_tokens=max(0, int(u.completion_tokens or 0) - thinking), thinking_tokens=thinking)

    def gpu_seconds(self, latency: float) -> float:
        return 0.0

    # -- models check ------------------------------------------------------------------------------
    def check(self, model: str) -> str:
        """Reach the endpoint with the key (lists models); raise ModelError when that fails."""
        client = self.client().with_options(timeout=self.settings.providers.check_timeout_s, max_retries=0)
        try:
            listed = [m.id for m in client.models.list()]
        except openai.OpenAIError as exc:
            raise map_error(exc, self.name) from exc
        known = "listed" if model in listed else f"not among the {len(listed)} listed models"
        return f"{self.base_url() or 'api.openai.com'} reachable; {model} {known}"


class QwenProvider(OpenAIProvider):
    """DashScope's OpenAI-compatible endpoint: video as a frame list ("video": [images]) with its fps."""

    name = "qwen"
    key_env = ("DASHSCOPE_API_KEY",)
    max_tokens_param = "max_tokens"

    def base_url(self) -> str | None:
        return self.settings.providers.qwen_base_url

    def min_frames(self) -> int:
        return self.settings.providers.qwen_min_frames

    def image(self, url: str) -> dict[str, Any]:
        return {"type": "image_url", "image_url": {"url": url}}  # "detail" is OpenAI's own knob

    def video_content(self, part: VideoPart, video: FramedVideo | None) -> list[dict[str, Any]]:
        assert video is not None
        return [{"type": "video", "video": [data_url(p) for p in video.paths], "fps": round(video.fps, 4)}]

    def response_format(self, schema: type[BaseModel]) -> tuple[dict[str, Any], str | None]:
        if self.settings.providers.qwen_response_format == "json_schema":
            return super().response_format(schema)
        note = ("Reply with one JSON object that follows this JSON schema:\n"
                + json.dumps(strict_json_schema(schema), separators=(",", ":")))
        return {"type": "json_object"}, note

    def options(self, request: ModelRequest) -> dict[str, Any]:
        out = super().options(request)
        thinking = out.pop("reasoning_effort", None)
        if thinking is not None:
            out["extra_body"] = {"enable_thinking": str(thinking).lower() not in _OFF}
        return out


class VLLMProvider(OpenAIProvider):
    """Any OpenAI-compatible vLLM server; charged by GPU time (latency x GPUs), not tokens (SPEC K1)."""

    name = "vllm"
    key_env = ("VLLM_API_KEY",)
    key_optional = True
    max_tokens_param = "max_tokens"

    def base_url(self) -> str | None:
        return self.settings.providers.vllm_base_url

    def frames(self, model: str, request: ModelRequest) -> dict[int, FramedVideo]:
        if self.settings.providers.vllm_video == "video_url":
            return {}  # the server samples the clip itself
        return super().frames(model, request)

    def video_content(self, part: VideoPart, video: FramedVideo | None) -> list[dict[str, Any]]:
        if video is not None:
            return super().video_content(part, video)
        cfg = self.settings.providers
        try:
            clip = model_clip(part.path, ClipSpec(part.start, part.end, part.fps, part.size, False, cfg.clip_crf),
                              self.settings.media_dir, cfg.clip_timeout_s)
        except MediaError as exc:
            raise PermanentModelError(f"cannot cut a clip: {exc}") from exc
        return [{"type": "video_url", "video_url": {"url": data_url(clip)}}]

    def options(self, request: ModelRequest) -> dict[str, Any]:
        out = super().options(request)
        thinking = out.pop("reasoning_effort", None)
        if thinking is not None:
            out["extra_body"] = {"chat_template_kwargs": {"enable_thinking": str(thinking).lower() not in _OFF}}
        return out

    def gpu_seconds(self, latency: float) -> float:
        return latency * self.settings.providers.vllm_gpus

