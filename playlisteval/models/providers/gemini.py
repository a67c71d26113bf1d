"""Gemini through google-genai: native video via the Files API, per-part video metadata, JSON schemas.

A video part becomes a model clip (media/clips.py: its [start, end) at the stored clip rate, fit inside
the part's size, with or without audio) uploaded once through the resumable Files API and reused while
the upload is valid; its remote name lives in the store (RemoteFile) so that every worker reuses it, and
it is uploaded again when it has expired or the API no longer knows it. The part carries its own video
metadata — the sampling fps and the offsets of the clip — and a text marker with its label.

The SDK is used as it is documented to be safe: one Client per process, kept alive; its own retries
off (the runner retries); the API version set explicitly (the SDK would call /v1).
"""

from __future__ import annotations

import base64
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from google import genai
from google.genai import errors as genai_errors
from google.genai import types
from pydantic import BaseModel

from playlisteval.config import Settings
from playlisteval.errors import (
    MediaError,
    PermanentModelError,
    ProviderNotAvailable,
    TransientModelError,
)
from playlisteval.media.clips import ClipSpec, audio_clip, mime_of, model_clip
from playlisteval.models.context_cache import ContextCaches, media_prefix
from playlisteval.models.providers.gemini_errors import http, map_error
from playlisteval.models.providers.gemini_files import RemoteFiles
from playlisteval.models.providers.media_parts import video_record
from playlisteval.models.providers.wire import fallback_usage, mmss
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

KEY_ENV = ("GEMINI_API_KEY", "GOOGLE_API_KEY")


_LEVELS = {"none": "MINIMAL", "off": "MINIMAL", "minimal": "MINIMAL", "low": "LOW", "medium": "MEDIUM",
           "high": "HIGH", "xhigh": "XHIGH"}


class GeminiProvider:
    name = "gemini"
    key_env = KEY_ENV

    def __init__(self, settings: Settings, sleep: Callable[[float], None] = time.sleep) -> None:
        self.settings = settings
        self.sleep = sleep
        self._client: genai.Client | None = None
        self._lock = threading.Lock()
        self._files: RemoteFiles | None = None
        self._caches: ContextCaches | None = None

    # -- configuration -----------------------------------------------------------------------------
    def api_key(self) -> str:
        for name in KEY_ENV:
            if os.environ.get(name):
                return os.environ[name]
        raise ProviderNotAvailable(f"gemini: set {KEY_ENV[0]} in the environment")

    def client(self) -> genai.Client:
        with self._lock:
            if self._client is None:
                cfg = self.settings.providers
                options = types.HttpOptions(api_version=cfg.gemini_api_version or None,
                                            base_url=cfg.gemini_base_url or None,
                                            timeout=int(self.settings.runner.timeout_s * 1000))
                self._client = genai.Client(api_key=self.api_key(), http_options=options)
            return self._client

    def files(self) -> RemoteFiles:
        with self._lock:
            if self._files is None:
                self._files = RemoteFiles(self.settings, self.sleep)
        return self._files

    # -- the call ----------------------------------------------------------------------------------
    def complete(self, model: str, request: ModelRequest, schema: type[BaseModel] | None,
                 timeout: float) -> ProviderReply:
        where = f"gemini/{model}"
        client = self.client()
        uploaded: list[Path] = []
        cache: str | None = None
        try:
            if is_conversation(request):  # the agentic judge's turns: sent whole, no context cache
                contents, cache = self._turns(client, request, uploaded), None
            else:
                parts, cache = self._contents(client, model, request, uploaded)
                contents = [types.Content(role="user", parts=parts)]
            config = self._config(request, schema, timeout)
            config.cached_content = cache  # the request's leading media, when they are in a context cache
            response = client.models.generate_content(model=model, contents=contents, config=config)
        except (genai_errors.APIError, http.TransportError, ValueError) as exc:
            if isinstance(exc, genai_errors.APIError) and self._lost_upload(exc, uploaded):
                raise TransientModelError(f"{where}: an uploaded clip is gone; it will be uploaded again") from exc
            if isinstance(exc, genai_errors.APIError) and cache and "cache" in str(exc.message or "").lower():
                self.context_caches().forget(cache)  # expired or deleted early: made again on the next try
                raise TransientModelError(f"{where}: context cache {cache} is gone; it will be made again") from exc
            raise map_error(exc, where) from exc
        reply = self._reply(response, request)
        record = video_record(request)  # issue 42: each clip went as video, sampled at its own fps
        if record:
            reply.raw["frames"] = record
        return reply

    def context_caches(self) -> ContextCaches:
        with self._lock:
            if self._caches is None:
                self._caches = ContextCaches(self.settings, self.name)
        return self._caches

    def _contents(self, client: genai.Client, model: str, request: ModelRequest,
                  uploaded: list[Path]) -> tuple[list[types.Part], str | None]:
        """The parts to send, and the context cache that holds the request's leading media ([batch]
        context_cache; models/context_cache.py) — None when they are sent inline."""
        split = media_prefix(request)
        head = request.model_copy(update={"parts": request.parts[:split]})
        if not split or not self.context_caches().worth_it(head):
            return self._parts(client, request, uploaded), None

        def create(ttl_s: float) -> tuple[str, int, float | None]:
            made = client.caches.create(model=model, config=types.CreateCachedContentConfig(
                contents=[types.Content(role="user", parts=self._parts(client, head, uploaded))],
                ttl=f"{int(ttl_s)}s", display_name=f"playlisteval {request.role}"))
            tokens = made.usage_metadata.total_token_count if made.usage_metadata else None
            expires = made.expire_time.timestamp() if made.expire_time else None
            return str(made.name), int(tokens or 0), expires

        cache = self.context_caches().reference(model, head, request, create)
        rest = request.model_copy(update={"parts": request.parts[split:]})
        return self._parts(client, rest, uploaded), cache

    def _turns(self, client: genai.Client, request: ModelRequest, uploaded: list[Path]) -> list[types.Content]:
        """A tool-using conversation as contents: the user's turn; per earlier model turn its text and
        ``function_call`` parts (with the thought signature Gemini 3 wants back); then a user turn with a
        ``function_response`` per result and the frames the tools fetched."""
        out: list[types.Content] = []
        pending: list[types.Part] = []

        def flush() -> None:
            if pending:
                out.append(types.Content(role="user", parts=list(pending)))
                pending.clear()

        for part in request.parts:
            if isinstance(part, ToolCallsPart):
                flush()
                said = [types.Part(text=part.text)] if part.text else []
                calls = [types.Part(function_call=types.FunctionCall(id=c.id, name=c.name, args=c.arguments),
                                    thought_signature=base64.b64decode(c.signature) if c.signature else None)
                         for c in part.calls]
                out.append(types.Content(role="model", parts=said + calls))
            elif isinstance(part, ToolResultPart):
                pending.append(types.Part(function_response=types.FunctionResponse(
                    id=part.call_id, name=part.name, response={"result": part.content})))
            else:
                pending.extend(self._parts(client, request.model_copy(update={"parts": [part]}), uploaded))
        flush()
        return out

    def _parts(self, client: genai.Client, request: ModelRequest, uploaded: list[Path]) -> list[types.Part]:
        parts: list[types.Part] = []
        for part in request.parts:
            if isinstance(part, ToolCallsPart | ToolResultPart):
                raise PermanentModelError(f"gemini: a {part.kind} part belongs to a conversation turn")
            if isinstance(part, TextPart):
                parts.append(types.Part(text=part.text))
            elif isinstance(part, VideoPart):
                if part.label:
                    parts.append(types.Part(text=f"{part.label}:"))
                clip = self._clip(part)
                remote = self.files().ensure(client, clip, "video/mp4")
                uploaded.append(clip)
                # the clip starts at the part's start: offsets are on the clip's own clock, as prompts cite
                parts.append(types.Part(
                    file_data=types.FileData(file_uri=remote, mime_type="video/mp4"),
                    video_metadata=types.VideoMetadata(fps=part.fps, start_offset="0s",
                                                       end_offset=f"{part.end - part.start:.3f}s"),
                ))
            elif isinstance(part, ImagePart):
                if part.timestamp is not None:
                    parts.append(types.Part(text=f"[frame @ {mmss(part.timestamp)}]"))
                try:
                    data = Path(part.path).read_bytes()
                except OSError as exc:
                    raise PermanentModelError(f"gemini: cannot read image {part.path}: {exc.strerror}") from exc
                parts.append(types.Part.from_bytes(data=data, mime_type=mime_of(part.path)))
            elif isinstance(part, AudioPart):
                audio = self._audio(part)
                remote = self.files().ensure(client, audio, "audio/aac")
                uploaded.append(audio)
                parts.append(types.Part(file_data=types.FileData(file_uri=remote, mime_type="audio/aac")))
        return parts

    def _clip(self, part: VideoPart) -> Path:
        cfg = self.settings.providers
        # stored at clip_fps, or denser when the request samples faster than that
        spec = ClipSpec(part.start, part.end, max(cfg.clip_fps, part.fps), part.size, part.audio, cfg.clip_crf)
        try:
            return model_clip(part.path, spec, self.settings.media_dir, cfg.clip_timeout_s)
        except MediaError as exc:
            raise PermanentModelError(f"gemini: cannot cut a clip: {exc}") from exc

    def _audio(self, part: AudioPart) -> Path:
        try:
            return audio_clip(part.path, part.start, part.end, self.settings.media_dir, "aac",
                              self.settings.providers.clip_timeout_s)
        except MediaError as exc:
            raise PermanentModelError(f"gemini: cannot cut audio: {exc}") from exc

    def _config(self, request: ModelRequest, schema: type[BaseModel] | None,
                timeout: float) -> types.GenerateContentConfig:
        g = request.settings
        config: dict[str, Any] = {"http_options": types.HttpOptions(timeout=int(timeout * 1000))}
        if schema is not None:
            config["response_mime_type"] = "application/json"
            config["response_json_schema"] = schema.model_json_schema()
        resolution = g.media_resolution or next(
            (p.media_resolution for p in request.parts if isinstance(p, VideoPart) and p.media_resolution), None)
        if resolution:
            config["media_resolution"] = types.MediaResolution(f"MEDIA_RESOLUTION_{resolution.upper()}")
        if g.thinking_budget is not None:  # Gemini 2.5's token budget; the API takes one of budget or level
            if g.thinking:
                raise PermanentModelError("gemini: set a thinking level or a thinking budget, not both")
            config["thinking_config"] = types.ThinkingConfig(thinking_budget=g.thinking_budget)
        if g.thinking:
            level = _LEVELS.get(g.thinking.lower())
            if level is None:
                raise PermanentModelError(f"gemini: unknown thinking level {g.thinking!r}")
            config["thinking_config"] = types.ThinkingConfig(thinking_level=types.ThinkingLevel(level))
        if request.tools:
            config["tools"] = [types.Tool(function_declarations=[
                types.FunctionDeclaration(name=t.name, description=t.description, parameters_json_schema=t.parameters)
                for t in request.tools])]
            mode = types.FunctionCallingConfigMode.NONE if request.tool_choice == "none" else \
                types.FunctionCallingConfigMode.AUTO
            config["tool_config"] = types.ToolConfig(function_calling_config=types.FunctionCallingConfig(mode=mode))
            config["automatic_function_calling"] = types.AutomaticFunctionCallingConfig(disable=True)
        if g.max_output_tokens:
            config["max_output_tokens"] = g.max_output_tokens
        if g.temperature is not None:
            config["temperature"] = g.temperature
        if g.top_p is not None:
            config["top_p"] = g.top_p
        return types.GenerateContentConfig(**config)

    def _lost_upload(self, exc: genai_errors.APIError, uploaded: list[Path]) -> bool:
        """The API no longer knows a file we reused (deleted, expired early, another key): forget it."""
        if not uploaded or int(exc.code or 0) not in (400, 403, 404):
            return False
        if "file" not in str(exc.message or "").lower():
            return False
        for path in uploaded:
            self.files().forget(path)
        return True

    # -- the answer --------------------------------------------------------------------------------
    def _reply(self, response: types.GenerateContentResponse, request: ModelRequest) -> ProviderReply:
        raw = response.model_dump(mode="json", exclude_none=True, exclude={"sdk_http_response", "parsed"})
        candidate = response.candidates[0] if response.candidates else None
        calls: list[ToolCall] = []
        thinking = ""  # the thought summaries (issue 42): kept apart, never read as the answer
        if candidate is None:
            feedback = response.prompt_feedback
            reason = feedback.block_reason.value if feedback and feedback.block_reason else "no candidates"
            text, finish = "", f"blocked: {reason}"
        else:
            content_parts = (candidate.content.parts if candidate.content else None) or []
            # thought summaries are not the answer
            text = "".join(p.text for p in content_parts if p.text and not p.thought)
            thinking = "".join(p.text for p in content_parts if p.text and p.thought)
            finish = candidate.finish_reason.value.lower() if candidate.finish_reason else "stop"
            calls = [ToolCall(id=p.function_call.id or f"call_{n}", name=p.function_call.name or "",
                              arguments=dict(p.function_call.args or {}),
                              signature=base64.b64encode(p.thought_signature).decode() if p.thought_signature else None)
                     for n, p in enumerate(content_parts) if p.function_call is not None]
        meta = response.usage_metadata
        if meta is None or meta.prompt_token_count is None:
            usage = fallback_usage(request, text)
            raw["usage_estimated"] = True
        else:
            usage = Usage(input_tokens=meta.prompt_token_count or 0, output_tokens=meta.candidates_token_count or 0,
                          thinking_tokens=meta.thoughts_token_count or 0,
                          cached_input_tokens=meta.cached_content_token_count or 0)  # context cache reads
        return ProviderReply(text=text, usage=usage, finish_reason=finish, raw=raw,
                             tool_calls=calls, thinking=thinking)

    # -- models check ------------------------------------------------------------------------------
    def check(self, model: str) -> str:
        options = types.HttpOptions(timeout=int(self.settings.providers.check_timeout_s * 1000))
        try:
            listing = self.client().models.list(config=types.ListModelsConfig(page_size=50, http_options=options))
            names = [m.name or "" for m in listing]
        except (genai_errors.APIError, http.TransportError, ValueError) as exc:
            raise map_error(exc, "gemini") from exc
        known = any(n.endswith(f"/{model}") or n == model for n in names)
        where = self.settings.providers.gemini_base_url or "generativelanguage.googleapis.com"
        return f"{where} reachable; {model} {'listed' if known else 'not among the first listed models'}"


def is_conversation(request: ModelRequest) -> bool:
    """Whether the request holds earlier model turns (tool calls and their results)."""
    return any(isinstance(p, ToolCallsPart | ToolResultPart) for p in request.parts)
