"""OpenAI chat completions; the servers that speak the same protocol (DashScope's Qwen, vLLM) subclass it
in openai_servers.py.

Thin (DESIGN 6): a request becomes one ``chat.completions.create`` call with the SDK's own retries off
(``max_retries=0``: the runner alone retries); video becomes frames at the request's fps, capped by the
model's image limit — for Qwen one frame list per clip, capped per clip; or, where the API takes a video
file (Qwen, vLLM: ``video_url``), the clip itself with the fps to sample it at (issue 42, video_files.py);
each reply records the fps every clip got. Frames carry no sound: a clip's audio reaches these models only
through the transcript in the prompt, or as an explicit audio part; a response schema becomes a strict
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
from pathlib import Path
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
from playlisteval.media.clips import audio_clip
from playlisteval.models.providers.media_parts import (
    FramedVideo,
    data_url,
    framed,
    frames_record,
    image_limit,
    video_record,
)
from playlisteval.models.providers.pixel_budget import fit_images
from playlisteval.models.providers.wire import fallback_usage, mmss, parse_retry_after, strict_json_schema
from playlisteval.models.reasoning import message_thinking
from playlisteval.models.request import (
    AudioPart,
    ImagePart,
    ModelRequest,
    ProviderReply,
    TextPart,
    ToolCall,
    ToolCallsPart,
    ToolResultPart,
    Usage,
    VideoPart,
)

_QUOTA_CODES = {"insufficient_quota", "billing_hard_limit_reached", "billing_not_active", "Arrearage"}


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
    frames_as = "images"  # how frames travel (the reply's record): one image part each

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._client: openai.OpenAI | None = None  # the provider's default server's
        self._clients: dict[str, openai.OpenAI] = {}  # issue 42: one per [endpoints] server
        self._lock = threading.Lock()

    # -- configuration -----------------------------------------------------------------------------
    def base_url(self) -> str | None:
        return self.settings.providers.openai_base_url or None

    def endpoint(self, model: str) -> str | None:
        """The server of ``model`` named in [endpoints] (issue 42), None: the provider's default."""
        return self.settings.endpoint_for(f"{self.name}/{model}")

    def server(self, model: str | None = None) -> str | None:
        """Where calls for ``model`` go: its [endpoints] server, else the provider's base URL."""
        return (self.endpoint(model) if model is not None else None) or self.base_url()

    def api_key(self) -> str:
        for name in self.key_env:
            if os.environ.get(name):
                return os.environ[name]
        if self.key_optional:
            return "EMPTY"
        raise ProviderNotAvailable(f"{self.name}: set {self.key_env[0]} in the environment")

    def client(self, model: str | None = None) -> openai.OpenAI:
        """One client per provider per process, kept alive (its connection pool is reused); a model with
        its own server in [endpoints] gets that server's client, one per server."""
        url = self.endpoint(model) if model is not None else None
        with self._lock:
            if url is not None:
                if url not in self._clients:
                    self._clients[url] = openai.OpenAI(api_key=self.api_key(), base_url=url, max_retries=0,
                                                       timeout=self.settings.runner.timeout_s)
                return self._clients[url]
            if self._client is None:
                self._client = openai.OpenAI(api_key=self.api_key(), base_url=self.base_url(), max_retries=0,
                                             timeout=self.settings.runner.timeout_s)
            return self._client

    # -- the call ----------------------------------------------------------------------------------
    def complete(self, model: str, request: ModelRequest, schema: type[BaseModel] | None,
                 timeout: float) -> ProviderReply:
        client = self.client(model)
        request = fit_images(self.settings, request)  # issue 20 (Table 18): image parts within the pixel budget
        videos = self.frames(model, request)  # once per call: the messages and the reply's record share them
        messages: Any = self.messages(model, request, videos)
        content = messages[-1]["content"] if messages and messages[-1]["role"] == "user" else None
        kwargs = self.options(request)
        if request.tools:
            kwargs["tools"] = tool_specs(request)
            kwargs["tool_choice"] = request.tool_choice
        if schema is not None:
            response_format, note = self.response_format(schema)
            kwargs["response_format"] = response_format
            if note:
                if content is None:  # a conversation ending in tool results: the note is a user turn
                    content = []
                    messages.append({"role": "user", "content": content})
                content.append({"type": "text", "text": note})
        where = f"{self.name}/{model}"
        started = time.monotonic()
        try:
            # content entries the SDK's types do not know (Qwen's frame lists, vLLM's video_url) are
            # sent as given: hence the plain dicts
            completion = client.chat.completions.create(model=model, messages=messages, timeout=timeout, **kwargs)
        except openai.OpenAIError as exc:  # a model on its own server ([endpoints]): the error names the server
            raise map_error(exc, f"{where} at {self.server(model)}" if self.endpoint(model) else where) from exc
        except ValueError as exc:  # a body cut off mid-JSON: the server glitched, try again later
            raise TransientModelError(f"{where}: unreadable response: {str(exc)[:200]}") from exc
        reply = self.reply(completion, request, time.monotonic() - started)
        # issues 20, 42: the fps each clip was asked at and got (frames: sent / seconds covered; a video file:
        # the fps the API samples it at), kept with the cached answer for funnel, show and the report
        record = frames_record(videos, self.frames_limit(model), self.frames_as) if videos else video_record(request)
        if record:
            reply.raw["frames"] = record
        return reply

    def content(self, model: str, request: ModelRequest,
                videos: dict[int, FramedVideo] | None = None) -> list[dict[str, Any]]:
        videos = self.frames(model, request) if videos is None else videos
        out: list[dict[str, Any]] = []
        for i, part in enumerate(request.parts):
            out.extend(self.part_content(i, part, videos))
        return out

    def part_content(self, i: int, part: Any, videos: dict[int, FramedVideo]) -> list[dict[str, Any]]:
        """One user-turn part as content entries."""
        if isinstance(part, TextPart):
            return [{"type": "text", "text": part.text}]
        if isinstance(part, VideoPart):
            label = [{"type": "text", "text": f"{part.label}:"}] if part.label else []
            return label + self.video_content(part, videos.get(i))
        if isinstance(part, ImagePart):
            stamp = ([{"type": "text", "text": f"[frame @ {mmss(part.timestamp)}]"}]
                     if part.timestamp is not None else [])
            return [*stamp, self.image(self.image_url(part.path))]
        if isinstance(part, AudioPart):
            return [self.audio(part)]
        raise PermanentModelError(f"{self.name}: a {part.kind} part belongs to a conversation turn, not content")

    def image_url(self, path: str | Path) -> str:
        """A frame as a data URL, shrunk first to the request's pixel budget when one is set."""
        return data_url(path)

    def messages(self, model: str, request: ModelRequest,
                 videos: dict[int, FramedVideo] | None = None) -> list[dict[str, Any]]:
        """The chat messages of a request. A plain request is one user message; a tool-using one (the
        agentic judge) is the user's turn, then per earlier model turn an assistant message with its
        ``tool_calls``, one ``tool`` message per result, and a user message with what the tools fetched
        (frames): tool messages take text only, and they must follow their assistant message directly."""
        videos = self.frames(model, request) if videos is None else videos
        if not any(isinstance(p, ToolCallsPart | ToolResultPart) for p in request.parts):
            return [{"role": "user", "content": self.content(model, request, videos)}]
        out: list[dict[str, Any]] = []
        pending: list[dict[str, Any]] = []

        def flush() -> None:
            if pending:
                out.append({"role": "user", "content": list(pending)})
                pending.clear()

        for i, part in enumerate(request.parts):
            if isinstance(part, ToolCallsPart):
                flush()
                out.append({"role": "assistant", "content": part.text or None, "tool_calls": [
                    {"id": c.id, "type": "function",
                     "function": {"name": c.name, "arguments": json.dumps(c.arguments, sort_keys=True)}}
                    for c in part.calls]})
            elif isinstance(part, ToolResultPart):
                out.append({"role": "tool", "tool_call_id": part.call_id, "content": part.content})
            else:
                pending.extend(self.part_content(i, part, videos))
        flush()
        return out

    def frames(self, model: str, request: ModelRequest) -> dict[int, FramedVideo]:
        return framed(self.settings, request, f"{self.name}/{model}", self.min_frames())

    def min_frames(self) -> int:
        return 1

    def frames_limit(self, model: str) -> int | None:
        """The cap the frames of a request met (the record's ``limit``): the model's image limit."""
        return image_limit(self.settings, f"{self.name}/{model}")

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
        if g.thinking_budget is not None:  # a budget set and not sent would be a silent drop: refused
            raise PermanentModelError(f"{self.name}: no thinking budget on this API; set thinking (reasoning effort)")
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
        calls = tool_calls_of(message)
        return ProviderReply(text=text, usage=usage, finish_reason=str(finish), raw=raw, tool_calls=calls,
                             thinking=message_thinking(message))  # reasoning_content: never the answer

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
        client = self.client(model).with_options(timeout=self.settings.providers.check_timeout_s, max_retries=0)
        try:
            listed = [m.id for m in client.models.list()]
        except openai.OpenAIError as exc:
            raise map_error(exc, self.name) from exc
        known = "listed" if model in listed else f"not among the {len(listed)} listed models"
        return f"{self.server(model) or 'api.openai.com'} reachable; {model} {known}"


def tool_specs(request: ModelRequest) -> list[dict[str, Any]]:
    """The request's tools as chat-completions function tools."""
    return [{"type": "function", "function": {"name": t.name, "description": t.description,
                                              "parameters": t.parameters}} for t in request.tools]


def tool_calls_of(message: Any) -> list[ToolCall]:
    """The function calls of an assistant message. Arguments that are not a JSON object (model output is
    untrusted) are kept as ``{"_unparsed": text}``: the caller answers the call with the problem."""
    out: list[ToolCall] = []
    for call in getattr(message, "tool_calls", None) or []:
        function = getattr(call, "function", None)
        if function is None:  # a custom (non-function) tool call: none are declared
            continue
        try:
            arguments = json.loads(function.arguments or "{}")
        except ValueError:
            arguments = None
        if not isinstance(arguments, dict):
            arguments = {"_unparsed": str(function.arguments)[:500]}
        out.append(ToolCall(id=str(call.id), name=str(function.name), arguments=arguments))
    return out
