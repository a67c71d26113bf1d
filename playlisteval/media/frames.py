"""Frames at given timestamps: decord for the codecs it reads well (H.264, HEVC), PyAV for the rest.

Keyframe-aware sampling (issue 13): a frame sample at an exact timestamp costs the decoding of every
frame from the keyframe before it, about half a GOP (4 s of 30-fps video with x264's ~8-s keyframe
interval), and the samples of a chunk each sit in a different GOP. So ``keyed_sample_times`` moves a
sample onto a keyframe when one lies inside the sample's own slice of the chunk (its quarter, with 4
samples per chunk), else onto a keyframe of its chunk no other sample took, and keeps the exact
timestamp otherwise; a reader given the keyframe times decodes
keyframe samples with non-key frames skipped (PyAV ``skip_frame``), which on 720p H.264 reads a
sample for the price of demuxing the packets in between. Keyframe times come from demuxing packets
(``packet.is_keyframe``), never from decoding. Measured on a 720p file: PyAV decoding keyframes only
reads them ~9x faster than decord's ``get_batch`` of the same key indices, and PyAV's exact seeking
also beat decord, so keyframe-aware readers always use PyAV.

decord fails on VP9/AV1 and has been seen to hang or leak on files that over-report their frame
count (DESIGN, known traps), so it is only tried for codecs it handles and any error falls back to
PyAV, which reads everything ffmpeg reads.

A ``FrameReader`` keeps one open decoder per video, so that the frames of consecutive chunks are read
without reopening the file; frames are scaled inside the decoder (never decoded at full size and then
resized in Python), which matters for 1080p sources.
"""

from __future__ import annotations

import bisect
import os
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np
from PIL import Image

from playlisteval.errors import MediaError
from playlisteval.logs import get_logger

log = get_logger(__name__)
DECORD_CODECS = {"h264", "hevc", "mpeg4"}
_SEEK_GAP_S = 2.0  # PyAV: decode forward to a frame this close ahead instead of seeking to it
# PyAV, keyframes only: demuxing forward is cheap (no decoding), so seek only across a long gap
_KEY_SEEK_GAP_S = 60.0


def fit_size(width: int, height: int, box: tuple[int, int]) -> tuple[int, int]:
    """The largest (w, h) with the source's aspect ratio that fits inside ``box``; even numbers."""
    scale = min(box[0] / width, box[1] / height)
    return max(2, int(width * scale) // 2 * 2), max(2, int(height * scale) // 2 * 2)


def keyframe_times(path: str | Path) -> list[float]:
    """The presentation times (s) of a video's keyframes, read from its packets without decoding."""
    import av

    try:
        with av.open(str(path)) as container:
            stream = container.streams.video[0]
            base = stream.time_base or 1
            times = {float(packet.pts * base) for packet in container.demux(stream)
                     if packet.is_keyframe and packet.pts is not None}
    except Exception as exc:
        raise MediaError(path, f"cannot read keyframes: {exc}") from exc
    return sorted(times)


def keyed_sample_times(spans: Sequence[tuple[float, float]], per_chunk: int,
                       keyframes: Sequence[float]) -> list[list[float]]:
    """Like ``sample_times``, but samples move onto keyframes, which cost no decoding of the GOP before them.

    First each sample moves to the keyframe nearest its centre when one lies inside the sample's own slice
    of the chunk ([start + span*i/n, start + span*(i+1)/n)). A sample still exact then takes the keyframe
    of its chunk nearest its centre that no other sample of the chunk has (issue 43: an exact sample
    decodes ~half a GOP, most of the media step's CPU on camera-like video); none free, it stays exact,
    so a chunk never reads the same frame twice. Chunk boundaries are untouched (SPEC A4, A5 ask for a
    chunk's frames, not for evenly spaced ones): a sample never leaves its chunk. Each row is in time order.
    """
    keys = sorted(keyframes)
    n = max(1, per_chunk)
    out: list[list[float]] = []
    for (start, end), centres in zip(spans, sample_times(spans, n), strict=True):
        row: list[float | None] = []
        for i, centre in enumerate(centres):
            lo, hi = start + (end - start) * i / n, start + (end - start) * (i + 1) / n
            inside = keys[bisect.bisect_left(keys, lo):bisect.bisect_left(keys, hi)]
            row.append(min(inside, key=lambda k: (abs(k - centre), k)) if inside else None)  # noqa: B023
        chunk_keys = keys[bisect.bisect_left(keys, start):bisect.bisect_left(keys, end)]
        free = [k for k in chunk_keys if k not in row]
        for i, centre in enumerate(centres):
            if row[i] is None and free:
                pick = min(free, key=lambda k: (abs(k - centre), k))  # noqa: B023
                free.remove(pick)
                row[i] = pick
        out.append(sorted(t if t is not None else c for t, c in zip(row, centres, strict=True)))
    return out


def sample_times(spans: Sequence[tuple[float, float]], per_chunk: int) -> list[list[float]]:
    """``per_chunk`` timestamps inside each (start, end) span, at the centres of equal slices.

    Centres (not edges) so that no sample sits on a chunk boundary or at the very end of a file,
    where the last frame may be missing.
    """
    n = max(1, per_chunk)
    return [[start + (end - start) * (i + 0.5) / n for i in range(n)] for start, end in spans]


class _Decord:
    def __init__(self, path: str, size: tuple[int, int] | None, src: tuple[int, int]) -> None:
        import decord  # optional: no wheel on every platform

        kwargs: dict[str, Any] = {}
        self.post_size = size  # resize after decoding only when the source size is not known
        if size is not None and src[0] > 0 and src[1] > 0:
            w, h = fit_size(src[0], src[1], size)
            kwargs = {"width": w, "height": h}
            self.post_size = None
        self.reader = decord.VideoReader(path, ctx=decord.cpu(0), num_threads=1, **kwargs)
        self.fps = float(self.reader.get_avg_fps()) or 1.0
        self.last = len(self.reader) - 1

    def read(self, timestamps: Sequence[float]) -> list[Image.Image]:
        indices = [min(max(int(round(t * self.fps)), 0), self.last) for t in timestamps]
        batch = self.reader.get_batch(indices).asnumpy()
        images = [Image.fromarray(np.asarray(frame)) for frame in batch]
        if self.post_size is not None:
            box = self.post_size
            images = [im.resize(fit_size(im.width, im.height, box), Image.Resampling.BILINEAR) for im in images]
        return images

    def close(self) -> None:
        del self.reader


class _PyAV:
    def __init__(self, path: str, size: tuple[int, int] | None, keyframes: Sequence[float] = ()) -> None:
        import av

        self.path = path
        self.size = size
        self.keys = sorted(keyframes)
        self.container = av.open(path)
        self.stream = self.container.streams.video[0]
        if self.keys:
            # keyframe-aware reading is the index's, which runs a video per thread: decoder threads only
            # add overhead there (measured on 720p, keyframes only: 0.6 s single-threaded vs 3.2 s with
            # "AUTO" frame threads on a loaded 2-core machine)
            self.stream.thread_count = 1
        else:
            self.stream.thread_type = "AUTO"
        self.base = self.stream.time_base or 1
        self.frames: Iterator[Any] | None = None
        self.current: Any = None  # the last decoded frame
        self.keys_only = False  # decoding with non-key frames skipped

    def _is_key(self, t: float) -> bool:
        i = bisect.bisect_left(self.keys, t - 1e-4)
        return i < len(self.keys) and abs(self.keys[i] - t) <= 1e-4

    def _seek(self, t: float, keys_only: bool = False) -> None:
        # a switch of mode goes through a seek: frames decoded after skipped ones would be corrupt
        self.stream.codec_context.skip_frame = "NONKEY" if keys_only else "DEFAULT"
        self.keys_only = keys_only
        self.container.seek(int(max(t, 0) / self.base), stream=self.stream, backward=True, any_frame=False)
        self.frames = self.container.decode(self.stream)
        self.current = None

    def _frame_at(self, t: float) -> Any:
        here = self.current.time if self.current is not None and self.current.time is not None else None
        keyed = self._is_key(t)
        gap = _KEY_SEEK_GAP_S if keyed else _SEEK_GAP_S
        if (self.frames is None or here is None or t < here - 1e-3 or t - here > gap
                or keyed != self.keys_only):
            self._seek(t, keyed)
        elif here >= t - 1e-3:
            return self.current  # two samples within one frame's duration
        assert self.frames is not None
        for frame in self.frames:
            self.current = frame
            if frame.time is not None and frame.time >= t - 1e-3:
                return frame
        if self.current is None:
            raise MediaError(self.path, f"no frame decodable at {t:.2f}s (truncated or corrupt)")
        return self.current  # t lies past the last frame: the last frame is what is shown

    def read(self, timestamps: Sequence[float]) -> list[Image.Image]:
        images = []
        for t in timestamps:
            frame = self._frame_at(t)
            if self.size is not None:
                w, h = fit_size(frame.width, frame.height, self.size)
                images.append(frame.to_image(width=w, height=h))
            else:
                images.append(frame.to_image())
        return images

    def close(self) -> None:
        self.container.close()


class FrameReader:
    """One video's frames, read in time order chunk after chunk: ``reader.read([t1, t2, …])``.

    decord is used for ``DECORD_CODECS``; on its first error the reader switches to PyAV for good.
    Given ``keyframes`` (``keyframe_times``), PyAV reads, and a timestamp that is a keyframe's is
    decoded with non-key frames skipped. Every failure surfaces as MediaError.
    """

    def __init__(self, path: str | Path, codec: str | None = None, size: tuple[int, int] | None = None,
                 source_size: tuple[int, int] = (0, 0), keyframes: Sequence[float] | None = None) -> None:
        self.path = str(path)
        if not Path(self.path).is_file():
            raise MediaError(self.path, "file not found")
        self.size = size
        self.keyframes = list(keyframes or ())
        self.backend = "pyav"
        self._impl: _Decord | _PyAV | None = None
        if codec in DECORD_CODECS and keyframes is None:  # keyframe-aware reading: PyAV (module doc)
            try:
                self._impl = _Decord(self.path, size, source_size)
                self.backend = "decord"
            except Exception as exc:  # decord raises its own error types, or plain RuntimeError
                log.info("frames.decord_fallback", path=self.path, error=str(exc)[:200])
        if self._impl is None:
            self._impl = self._open_pyav()

    def _open_pyav(self) -> _PyAV:
        try:
            return _PyAV(self.path, self.size, self.keyframes)
        except Exception as exc:
            raise MediaError(self.path, f"cannot decode frames: {exc}") from exc

    def read(self, timestamps: Sequence[float]) -> list[Image.Image]:
        if not timestamps:
            return []
        assert self._impl is not None
        if isinstance(self._impl, _Decord):
            try:
                return self._impl.read(timestamps)
            except Exception as exc:
                log.info("frames.decord_fallback", path=self.path, error=str(exc)[:200])
                self._impl.close()
                self._impl = self._open_pyav()
                self.backend = "pyav"
        try:
            return self._impl.read(timestamps)
        except MediaError:
            raise
        except Exception as exc:
            raise MediaError(self.path, f"cannot decode frames: {exc}") from exc

    def close(self) -> None:
        if self._impl is not None:
            self._impl.close()
            self._impl = None

    def __enter__(self) -> FrameReader:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def frames_at(path: str | Path, timestamps: Sequence[float], codec: str | None = None,
              size: tuple[int, int] | None = None, keyframes: Sequence[float] | None = None) -> list[Image.Image]:
    """RGB images of the frames shown at ``timestamps`` (seconds), fitted inside ``size`` if given; read
    in one pass in time order (keyframe timestamps cheaply when ``keyframes`` is given: FrameReader)."""
    if not timestamps:
        return []
    order = sorted(range(len(timestamps)), key=lambda i: timestamps[i])
    with FrameReader(path, codec, size, keyframes=keyframes) as reader:
        images = reader.read([timestamps[i] for i in order])
    out: list[Image.Image] = [images[0]] * len(timestamps)
    for image, i in zip(images, order, strict=True):
        out[i] = image
    return out


def save_frames(path: str | Path, timestamps: Sequence[float], out_dir: Path, codec: str | None = None,
                size: tuple[int, int] | None = None, quality: int = 85,
                keyframes: Sequence[float] | None = None) -> list[Path]:
    """Write the frames as JPEG files named by timestamp; existing files are reused (``keyframes``: as
    ``frames_at``)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    targets = [out_dir / f"{t:010.3f}.jpg" for t in timestamps]
    missing = [(t, p) for t, p in zip(timestamps, targets, strict=True) if not p.is_file()]
    if missing:
        images = frames_at(path, [t for t, _ in missing], codec, size, keyframes)
        for (_, target), image in zip(missing, images, strict=True):
            # a name of its own per writer: two threads may save the same frame at once, and the
            # atomic rename makes whichever finishes last win with a whole file
            tmp = target.with_name(f"{target.stem}.{os.getpid()}.{threading.get_ident()}.tmp")
            image.convert("RGB").save(tmp, "JPEG", quality=quality)
            tmp.replace(target)
    return targets
