"""Video as frames, for providers that take images rather than video (OpenAI, Qwen lists, vLLM, hf).

A clip is sampled at the request's fps; when the request's frames and images together would pass the
model's image limit, ``[providers] frame_limit_rule`` decides (issue 20, never a silent drop): "subsample"
(the default) keeps for each clip a share of the limit proportional to its natural frame count, spread
evenly, and says so — a warning naming the fps asked and the fps sent, and ``frames_record`` for the
reply's ``raw["frames"]`` (the cached answer keeps it); "error" fails the call, naming the fps it would
have had. Frames are cached JPEGs under the media folder, shrunk to the request's pixel budget when it has
one (pixel_budget.py).
"""

from __future__ import annotations

import base64
import math
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from playlisteval.config import Settings
from playlisteval.errors import MediaError, PermanentModelError
from playlisteval.logs import get_logger
from playlisteval.media.clips import content_fingerprint, mime_of
from playlisteval.media.frames import save_frames
from playlisteval.media.probe import probe
from playlisteval.models.providers.pixel_budget import budget_of, fit_path
from playlisteval.models.request import ImagePart, ModelRequest, VideoPart

log = get_logger(__name__)

_codecs: dict[str, str] = {}
_lock = threading.Lock()


@dataclass(frozen=True)
class FramedVideo:
    part: VideoPart
    times: list[float]  # seconds in the source video
    paths: list[Path]
    max_pixels: int | None = None  # the pixel budget the frames were shrunk to (pixel_budget.py), if any

    @property
    def fps(self) -> float:
        """The sampling rate actually used (lower than asked when the image limit thinned it)."""
        span = max(self.part.end - self.part.start, 1e-6)
        return len(self.times) / span


def image_limit(settings: Settings, spec: str) -> int | None:
    """The most images one request to ``spec`` may carry: [providers] image_limits "provider/model", then
    "provider/*", then the model's facts file (config/model_facts.py); None: no limit is known."""
    from playlisteval.config.model_facts import lookup

    limits = settings.providers.image_limits
    if spec in limits:
        return int(limits[spec])
    wildcard = f"{spec.split('/', 1)[0]}/*"
    if wildcard in limits:
        return int(limits[wildcard])
    found = lookup(spec, settings.root)
    return found.facts.max_images if found is not None else None


def natural_count(part: VideoPart) -> int:
    return max(1, math.floor((part.end - part.start) * part.fps + 1e-9))


def frame_times(part: VideoPart, count: int) -> list[float]:
    """``count`` timestamps in [start, end): the fps grid when it has that many, else evenly spread."""
    span = part.end - part.start
    if count == natural_count(part):
        return [part.start + k / part.fps for k in range(count)]
    return [part.start + (k + 0.5) * span / count for k in range(count)]


def plan(request: ModelRequest, limit: int | None, min_frames: int = 1,
         per_video: int | None = None) -> dict[int, int]:
    """Frames per video part (by part index) so that frames + images stay within ``limit``. With
    ``per_video`` (issue 42: a provider that takes each clip as one frame list, DashScope's ``video``
    part) each clip is capped on its own and its frames are not images: ``limit`` counts image parts only."""
    videos = {i: p for i, p in enumerate(request.parts) if isinstance(p, VideoPart)}
    counts = {i: max(min_frames, natural_count(p)) for i, p in videos.items()}
    images = sum(1 for p in request.parts if isinstance(p, ImagePart))
    if per_video is not None:
        if limit is not None and images > limit:
            raise PermanentModelError(f"request has {images} images, over the model's limit of {limit}")
        return {i: max(min_frames, min(n, per_video)) for i, n in counts.items()}
    if limit is None or not videos:
        return counts
    budget = limit - images
    if budget < len(videos) * min_frames:
        raise PermanentModelError(
            f"request needs {images} images + {len(videos) * min_frames} frames, over the model's limit of {limit}"
        )
    total = sum(counts.values())
    if total <= budget:
        return counts
    shares = {i: max(min_frames, math.floor(n * budget / total)) for i, n in counts.items()}
    while sum(shares.values()) > budget:  # rounding up to min_frames can overshoot: trim the largest
        largest = max(shares, key=lambda i: shares[i])
        shares[largest] -= 1
    return shares


def _codec(path: str) -> str:
    with _lock:
        if path in _codecs:
            return _codecs[path]
    codec = probe(path).codec
    with _lock:
        _codecs[path] = codec
    return codec


def frames_for(settings: Settings, part: VideoPart, count: int) -> FramedVideo:
    """Extract (or reuse) the JPEG frames of one video part."""
    times = frame_times(part, count)
    try:
        box = f"{part.size[0]}x{part.size[1]}" if part.size else "full"
        out_dir = settings.media_dir / "frames" / content_fingerprint(part.path) / box
        paths = save_frames(part.path, times, out_dir, _codec(part.path), part.size)
    except MediaError as exc:
        raise PermanentModelError(f"cannot read frames: {exc}") from exc
    return FramedVideo(part, times, paths)


def framed(settings: Settings, request: ModelRequest, spec: str, min_frames: int = 1,
           per_video: int | None = None) -> dict[int, FramedVideo]:
    limit = image_limit(settings, spec)
    counts = plan(request, limit, min_frames, per_video)
    clips = {i: p for i, p in enumerate(request.parts) if isinstance(p, VideoPart)}
    thinned = {i: n for i, n in counts.items() if n < natural_count(clips[i])}
    if thinned:
        said = "; ".join(f"clip {i}: {clips[i].fps:g} fps asked, "
                         f"{n / max(clips[i].end - clips[i].start, 1e-6):.3g} sent" for i, n in thinned.items())
        cap = f"{per_video} frames a clip" if per_video is not None else f"{limit} images"
        if settings.providers.frame_limit_rule == "error":
            raise PermanentModelError(f"{spec}: the frames pass the model's limit of {cap} ({said}); "
                                      "ask a lower fps or set [providers] frame_limit_rule = \"subsample\"")
        log.warning("frames.subsampled", spec=spec, limit=per_video or limit, role=request.role, clips=said)
    budget = budget_of(settings, request)  # issue 20 (Table 18): frames shrunk to the request's pixel budget
    out = {}
    for i, n in counts.items():
        video = frames_for(settings, clips[i], n)
        if budget:
            video = FramedVideo(video.part, video.times, [fit_path(settings, p, budget) for p in video.paths], budget)
        out[i] = video
    return out


def frames_record(videos: dict[int, FramedVideo], limit: int | None,
                  sent_as: str = "images") -> list[dict[str, Any]]:
    """Per clip: the fps asked and the fps sent (frames sent / seconds covered), frames sent, whether the
    image limit thinned it, and how the frames went (``sent_as``: "images", one image part each;
    "frame_list", one video part holding them with their fps)."""
    return [{"part": i, "fps_asked": v.part.fps, "fps_sent": round(v.fps, 4), "frames": len(v.times),
             "limit": limit, "subsampled": len(v.times) < natural_count(v.part), "sent_as": sent_as,
             **({"max_pixels": v.max_pixels} if v.max_pixels else {})} for i, v in sorted(videos.items())]


def video_record(request: ModelRequest) -> list[dict[str, Any]]:
    """``frames_record`` for clips sent as video files the API samples itself at the asked fps (Gemini,
    DashScope's and vLLM's ``video_url``): the fps sent is the fps asked; frames are what it will read."""
    return [{"part": i, "fps_asked": p.fps, "fps_sent": p.fps, "frames": natural_count(p), "limit": None,
             "subsampled": False, "sent_as": "video"}
            for i, p in enumerate(request.parts) if isinstance(p, VideoPart)]


def data_url(path: str | Path) -> str:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise PermanentModelError(f"cannot read {path}: {exc.strerror}") from exc
    return f"data:{mime_of(path)};base64,{base64.b64encode(data).decode()}"
