"""The pixel budget per frame for models that take video as images (issue 20, paper Table 18): OpenAI, Qwen
(DashScope's frame lists), vLLM and hf.

Gemini takes a media-resolution level itself; the others get frames. A request's budget is its
``max_pixels`` or, for a media resolution (low / medium / high), ``[providers] pixel_budgets`` of that level.
Frames over the budget are shrunk (aspect kept, area at most the budget) *before* they are encoded or handed
to a processor, so what the model sees — and pays for in image tokens — follows the setting instead of the
decoder's size. The shrunk JPEGs are cached under the media folder, keyed by the source's bytes and the
budget. A request with no budget is sent as it was.
"""

from __future__ import annotations

import hashlib
import math
import os
from pathlib import Path

from PIL import Image

from playlisteval.config import Settings
from playlisteval.errors import PermanentModelError
from playlisteval.models.request import ImagePart, ModelRequest


def budget_of(settings: Settings, request: ModelRequest) -> int | None:
    """Pixels per frame the request asks for (``max_pixels``, else its media resolution's budget), or None."""
    g = request.settings
    if g.max_pixels:
        return int(g.max_pixels)
    pixels = settings.providers.pixel_budgets.get(g.media_resolution or "")
    return int(pixels) if pixels else None


def fit_size(width: int, height: int, budget: int) -> tuple[int, int]:
    """(w, h) with the aspect ratio kept and w × h ≤ ``budget``; the size itself when it already fits."""
    if width * height <= budget:
        return width, height
    scale = math.sqrt(budget / (width * height))
    w, h = max(1, math.floor(width * scale)), max(1, math.floor(height * scale))
    while w * h > budget:  # floor rounding can still leave one row too many on extreme aspect ratios
        w, h = (w - 1, h) if w >= h else (w, h - 1)
    return w, h


def fit_path(settings: Settings, path: str | Path, budget: int | None) -> Path:
    """``path`` itself when within ``budget`` (or no budget), else a cached JPEG shrunk to it."""
    source = Path(path)
    if not budget:
        return source
    try:
        data = source.read_bytes()
        with Image.open(source) as image:
            size = image.size
            if size[0] * size[1] <= budget:
                return source
            out = settings.media_dir / "frames" / "fit" / str(budget) / f"{hashlib.sha256(data).hexdigest()[:32]}.jpg"
            if out.is_file():
                return out
            small = image.convert("RGB").resize(fit_size(*size, budget), Image.Resampling.BICUBIC)
    except OSError as exc:
        raise PermanentModelError(f"cannot read frame {source}: {exc}") from exc
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(f"{out.name}.{os.getpid()}.tmp")  # written whole, then renamed
    small.save(partial, format="JPEG", quality=90)
    os.replace(partial, out)
    return out


def fit_images(settings: Settings, request: ModelRequest) -> ModelRequest:
    """The request with each image part's file shrunk to the budget (video frames are fitted where they are
    extracted, media_parts.framed); the request itself unchanged when there is no budget or nothing to shrink."""
    budget = budget_of(settings, request)
    if not budget or not any(isinstance(p, ImagePart) for p in request.parts):
        return request
    parts = [p.model_copy(update={"path": str(fit_path(settings, p.path, budget))}) if isinstance(p, ImagePart)
             else p for p in request.parts]
    return request.model_copy(update={"parts": parts})
