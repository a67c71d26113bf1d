"""The servers that speak OpenAI's chat-completions protocol with their own dialect: DashScope (Qwen) and vLLM.

Each only translates what differs from OpenAI's API (openai_compat.py): where its base URL and key come from,
how video goes (Qwen: a frame list per clip with its fps, or the clip as a file; vLLM: frames, or the clip
sampled by the server), how thinking is switched (``extra_body``), and, for vLLM, that a call is charged by
GPU time rather than tokens (SPEC K1).
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from playlisteval.models.providers.media_parts import FramedVideo, data_url, framed
from playlisteval.models.providers.openai_compat import OpenAIProvider
from playlisteval.models.providers.video_files import clip_url, qwen_video, vllm_fps
from playlisteval.models.providers.wire import strict_json_schema
from playlisteval.models.request import ModelRequest, VideoPart

_OFF = {"none", "off", "minimal", "false", "0"}  # reasoning_effort values that switch a server's thinking off

class QwenProvider(OpenAIProvider):
    """DashScope's OpenAI-compatible endpoint: video as a frame list ("video": [images]) with its fps, or as
    the clip itself ("video_url" with "fps" beside it) when [providers] qwen_video says so."""

    name = "qwen"
    key_env = ("DASHSCOPE_API_KEY",)
    max_tokens_param = "max_tokens"
    frames_as = "frame_list"  # one ``video`` part per clip

    def base_url(self) -> str | None:
        return self.settings.providers.qwen_base_url

    def min_frames(self) -> int:
        return self.settings.providers.qwen_min_frames

    def frames(self, model: str, request: ModelRequest) -> dict[int, FramedVideo]:
        """Each clip a frame list capped on its own (DashScope counts a list's images, not the request's:
        issue 42), or none when clips go as video files ([providers] qwen_video = "video_url")."""
        cfg = self.settings.providers
        if cfg.qwen_video == "video_url":
            return {}
        return framed(self.settings, request, f"{self.name}/{model}", self.min_frames(), cfg.qwen_max_frames)

    def frames_limit(self, model: str) -> int | None:
        return self.settings.providers.qwen_max_frames  # a frame list's own cap

    def image(self, url: str) -> dict[str, Any]:
        return {"type": "image_url", "image_url": {"url": url}}  # "detail" is OpenAI's own knob

    def video_content(self, part: VideoPart, video: FramedVideo | None) -> list[dict[str, Any]]:
        if video is None:  # the clip as a video file, sampled by DashScope at the part's fps
            return [qwen_video(self.settings, part, self.name)]
        return [{"type": "video", "video": [data_url(p) for p in video.paths], "fps": round(video.fps, 4)}]

    def response_format(self, schema: type[BaseModel]) -> tuple[dict[str, Any], str | None]:
        if self.settings.providers.qwen_response_format == "json_schema":
            return super().response_format(schema)
        note = ("Reply with one JSON object that follows this JSON schema:\n"
                + json.dumps(strict_json_schema(schema), separators=(",", ":")))
        return {"type": "json_object"}, note

    def options(self, request: ModelRequest) -> dict[str, Any]:
        budget = request.settings.thinking_budget
        plain = request.model_copy(update={"settings": request.settings.model_copy(update={"thinking_budget": None})})
        out = super().options(plain)
        thinking = out.pop("reasoning_effort", None)
        extra: dict[str, Any] = {}
        if thinking is not None:
            extra["enable_thinking"] = str(thinking).lower() not in _OFF
        if budget is not None:  # DashScope's thinking_budget (issue 20, Table 9): thinking on, at most so many
            extra.update(enable_thinking=True, thinking_budget=budget)
        if extra:
            out["extra_body"] = extra
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
        # the clip without sound (vLLM reads its frames only), sampled by the server at the request's fps
        return [{"type": "video_url", "video_url": {"url": clip_url(self.settings, part.model_copy(
            update={"audio": False}), self.name)}}]

    def options(self, request: ModelRequest) -> dict[str, Any]:
        g = request.settings
        plain = request.model_copy(update={"settings": g.model_copy(update={"thinking_budget": None})})
        out = super().options(plain)
        thinking = out.pop("reasoning_effort", None)
        extra: dict[str, Any] = {}
        if thinking is not None:
            extra["chat_template_kwargs"] = {"enable_thinking": str(thinking).lower() not in _OFF}
        if g.thinking_budget is not None:  # vLLM's per-request cap on reasoning tokens (issue 20, Table 9)
            extra["thinking_token_budget"] = g.thinking_budget
        pixels = g.max_pixels or self.settings.providers.pixel_budgets.get(g.media_resolution or "")
        processor: dict[str, Any] = {}
        if pixels:  # the pixel budget per image (Table 18), applied by the model's own processor
            processor["max_pixels"] = int(pixels)
        fps = vllm_fps(request, self.name) if self.settings.providers.vllm_video == "video_url" else None
        if fps is not None:  # issue 42: the server samples the clips at the SPEC's fps, not its default
            processor.update(fps=fps, do_sample_frames=True)
        if processor:
            extra["mm_processor_kwargs"] = processor
        if extra:
            out["extra_body"] = extra
        return out

    def gpu_seconds(self, latency: float) -> float:
        return latency * self.settings.providers.vllm_gpus

