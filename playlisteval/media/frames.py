"""Frames at given timestamps: decord for the codecs it reads well (H.264, HEVC), PyAV for the rest.

decord fails on VP9/AV1 and has been seen to hang or leak on files that over-report their frame
count (DESIGN, known traps), so it is only tried for codecs it handles and any error falls back to
PyAV, which reads everything ffmpeg reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import structlog
from PIL import Image

from playlisteval.errors import MediaError

log = structlog.get_logger(__name__)
DECORD_CODECS = {"h264", "hevc", "mpeg4"}


def fit_size(width: int, height: int, box: tuple[int, int]) -> tuple[int, int]:
    """The largest (w, h) with the source's aspect ratio that fits inside ``box``; even numbers."""
    scale = min(box[0] / width, box[1] / height)
    return max(2, int(width * scale) // 2 * 2), max(2, int(height * scale) // 2 * 2)


def _decord(path: str, timestamps: Sequence[float]) -> list[Image.Image]:
    import decord  # optional: no wheel on every platform

    reader = decord.VideoReader(path, ctx=decord.cpu(0), num_threads=1)
    fps = float(reader.get_avg_fps()) or 1.0
    last = len(reader) - 1
    indices = [min(max(int(round(t * fps)), 0), last) for t in timestamps]
    batch = reader.get_batch(indices).asnumpy()
    return [Image.fromarray(np.asarray(frame)) for frame in batch]


def _pyav(path: str, timestamps: Sequence[float]) -> list[Image.Image]:
    import av

    images: list[Image.Image] = []
    with av.open(path) as container:
        stream = container.streams.video[0]
        stream.thread_type = "AUTO"
        base = stream.time_base or 1
        for t in timestamps:
            container.seek(int(max(t, 0) / base), stream=stream, backward=True, any_frame=False)
            chosen = None
            for frame in container.decode(stream):
                chosen = frame
                if frame.time is not None and frame.time >= t - 1e-3:
                    break
            if chosen is None:
                raise MediaError(path, f"no frame decodable at {t:.2f}s")
            images.append(chosen.to_image())
    return images


def frames_at(path: str | Path, timestamps: Sequence[float], codec: str | None = None,
              size: tuple[int, int] | None = None) -> list[Image.Image]:
    """RGB images of the frames shown at ``timestamps`` (seconds), resized to fit ``size`` if given."""
    if not timestamps:
        return []
    source = str(path)
    if not Path(source).is_file():
        raise MediaError(source, "file not found")
    images: list[Image.Image] | None = None
    if codec in DECORD_CODECS:
        try:
            images = _decord(source, timestamps)
        except Exception as exc:  # decord raises its own error types, or plain RuntimeError
            log.info("frames.decord_fallback", path=source, error=str(exc)[:200])
    if images is None:
        try:
            images = _pyav(source, timestamps)
        except MediaError:
            raise
        except Exception as exc:
            raise MediaError(source, f"cannot decode frames: {exc}") from exc
    if size is not None:
        images = [im.resize(fit_size(im.width, im.height, size), Image.Resampling.BILINEAR) for im in images]
    return images


def save_frames(path: str | Path, timestamps: Sequence[float], out_dir: Path, codec: str | None = None,
                size: tuple[int, int] | None = None, quality: int = 85) -> list[Path]:
    """Write the frames as JPEG files named by timestamp; existing files are reused."""
    out_dir.mkdir(parents=True, exist_ok=True)
    targets = [out_dir / f"{t:010.3f}.jpg" for t in timestamps]
    missing = [(t, p) for t, p in zip(timestamps, targets, strict=True) if not p.is_file()]
    if missing:
        images = frames_at(path, [t for t, _ in missing], codec, size)
        for (_, target), image in zip(missing, images, strict=True):
            tmp = target.with_suffix(".tmp")
            image.convert("RGB").save(tmp, "JPEG", quality=quality)
            tmp.replace(target)
    return targets
