"""Video sent as a video file, for the OpenAI-compatible APIs that take one and sample it themselves at the
fps they are given (issue 42): DashScope's (Qwen) ``video_url`` part with its ``fps`` beside it, and vLLM's
``video_url`` part with the fps in the request's ``mm_processor_kwargs``.

The clip is cut from the source (media/clips.py: the part's [start, end), fit inside its size, audio as the
part says) and stored at ``[providers] clip_fps`` — SPEC C3 reads 0.5 fps from a file stored at 2 fps —
or denser when the part asks more. It travels inline as a base64 data URL: an API bounds a local file's
size (DashScope: 10 MB of base64 through the OpenAI-compatible endpoint), and a clip over that bound fails
the call naming the clip, its size and the way out, rather than being sent thinner unannounced.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from playlisteval.config import Settings
from playlisteval.errors import MediaError, PermanentModelError
from playlisteval.media.clips import ClipSpec, model_clip
from playlisteval.models.providers.media_parts import data_url
from playlisteval.models.request import ModelRequest, VideoPart

_MB = 1024 * 1024


def cut(settings: Settings, part: VideoPart, where: str) -> Path:
    """The part's clip as an mp4 (cached under the media folder), at the stored clip rate or denser."""
    cfg = settings.providers
    spec = ClipSpec(part.start, part.end, max(cfg.clip_fps, part.fps), part.size, part.audio, cfg.clip_crf)
    try:
        return model_clip(part.path, spec, settings.media_dir, cfg.clip_timeout_s)
    except MediaError as exc:
        raise PermanentModelError(f"{where}: cannot cut a clip: {exc}") from exc


def clip_url(settings: Settings, part: VideoPart, where: str, max_mb: float | None = None) -> str:
    """The part's clip as a data URL; a clip whose base64 passes ``max_mb`` is refused, named."""
    clip = cut(settings, part, where)
    encoded_mb = 4 * ((clip.stat().st_size + 2) // 3) / _MB
    if max_mb is not None and encoded_mb > max_mb:
        raise PermanentModelError(
            f"{where}: the clip of {part.path} [{part.start:.0f}s–{part.end:.0f}s] is {encoded_mb:.1f} MB as base64, "
            f"over the {max_mb:g} MB the API takes inline; set [providers] qwen_video = \"frames\" (a frame list "
            "at the same fps) or raise clip_crf")
    return data_url(clip)


def qwen_video(settings: Settings, part: VideoPart, where: str) -> dict[str, Any]:
    """DashScope's video-file content part: the clip, and the fps at which the service samples it."""
    url = clip_url(settings, part, where, settings.providers.qwen_video_max_mb)
    return {"type": "video_url", "video_url": {"url": url}, "fps": part.fps}


def vllm_fps(request: ModelRequest, where: str) -> float | None:
    """The one sampling rate of a request's clips for vLLM's ``mm_processor_kwargs`` (None: no clip).
    vLLM takes one fps per request: clips asking different rates are refused, not sampled at one of them."""
    rates = sorted({p.fps for p in request.parts if isinstance(p, VideoPart)})
    if len(rates) > 1:
        raise PermanentModelError(f"{where}: the clips ask {', '.join(f'{r:g}' for r in rates)} fps; vLLM samples "
                                  "every video of a request at one fps: set [providers] vllm_video = \"frames\"")
    return rates[0] if rates else None
