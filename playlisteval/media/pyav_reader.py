"""PyAV's frame reader: one open decoder per video, frames at timestamps in time order, scaled in the decoder.

Given the video's keyframe times, a timestamp that is a keyframe's is read by seeking to it, decoding
that one packet and draining the decoder (issue 43): the frame comes out at once instead of after the
decoder's reorder delay, and none of the packets up to the next keyframe are demuxed or handed to the
decoder, so a keyframe costs one intra frame. (Decoding forward with non-key frames skipped, the way
ffmpeg's ``-skip_frame nokey`` does, also fed every packet in between through Python.)

Any other timestamp costs the decoding of the frames since the keyframe before it. Frames that no
other frame references (``skip_frame = "NONREF"``: x264's non-reference B-frames, about half of them
with its default ``b-pyramid``) are skipped while the packets are still well before the timestamp:
skipping them changes no other frame, and from ``_EXACT_MARGIN_S`` (or 8 frames, whichever is longer:
more than any reorder delay) before the timestamp everything is decoded, so the frame shown at the
timestamp is decoded whatever its type.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Sequence
from typing import Any, Literal

from PIL import Image

from playlisteval.errors import MediaError

_SEEK_GAP_S = 2.0  # decode forward to a frame this close ahead instead of seeking to it
_EXACT_MARGIN_S = 0.5  # decode every frame from this far before an exact timestamp (module doc)


def fit_size(width: int, height: int, box: tuple[int, int]) -> tuple[int, int]:
    """The largest (w, h) with the source's aspect ratio that fits inside ``box``; even numbers."""
    scale = min(box[0] / width, box[1] / height)
    return max(2, int(width * scale) // 2 * 2), max(2, int(height * scale) // 2 * 2)


class PyAVReader:
    def __init__(self, path: str, size: tuple[int, int] | None, keyframes: Sequence[float] = ()) -> None:
        import av

        self.path = path
        self.size = size
        self.keys = sorted(keyframes)
        self.container = av.open(path)
        self.stream = self.container.streams.video[0]
        if self.keys:
            # keyframe-aware reading is the index's, which runs a video per thread, and the evidence's, which
            # reads a pair's videos at once: decoder threads only add overhead there (measured on 720p,
            # keyframes only: 0.6 s single-threaded vs 3.2 s with "AUTO" frame threads on a loaded 2-core machine)
            self.stream.thread_count = 1
        else:
            self.stream.thread_type = "AUTO"
        self.ctx = self.stream.codec_context
        self.base = self.stream.time_base or 1
        rate = float(self.stream.average_rate or 0) or 30.0
        self.margin = max(_EXACT_MARGIN_S, 8 / rate)
        self.packets: Iterator[Any] | None = None  # demuxing forward from the last seek; None: seek first
        self.current: Any = None  # the last decoded frame

    def _is_key(self, t: float) -> bool:
        i = bisect.bisect_left(self.keys, t - 1e-4)
        return i < len(self.keys) and abs(self.keys[i] - t) <= 1e-4

    def _seek(self, t: float) -> None:
        # rounded, not truncated: a keyframe's time in seconds times the time base may fall a hair below
        # its pts, and a backward seek would then land on the keyframe before
        self.container.seek(round(max(t, 0) / self.base), stream=self.stream, backward=True, any_frame=False)
        self.packets = self.container.demux(self.stream)
        self.current = None

    def _time(self, frame: Any) -> float | None:
        # a frame drained with ``decode(None)`` has no time base in PyAV (its ``time`` is NaN): the stream's
        return None if frame.pts is None else float(frame.pts * self.base)

    def _skip(self, mode: Literal["DEFAULT", "NONREF", "NONKEY"]) -> None:
        if self.ctx.skip_frame != mode:
            self.ctx.skip_frame = mode

    def _key_frame_at(self, t: float) -> Any:
        """The keyframe at ``t``: seek, decode its packet alone, drain (module doc)."""
        self._seek(t)
        self._skip("NONKEY")
        assert self.packets is not None
        for packet in self.packets:
            if packet.size and not packet.is_keyframe:
                continue  # the seek landed before the keyframe (a container without an index)
            frames = self.ctx.decode(packet) if packet.size else []
            frames += self.ctx.decode(None)  # the decoder holds the frame back for reordering: drain it
            self.ctx.flush_buffers()  # ready for the next packet after the drain
            for frame in frames:
                self.current = frame
                when = self._time(frame)
                if when is not None and when >= t - 1e-3:
                    self.packets = None  # drained: the next read seeks
                    return frame
            if not packet.size:
                break
        self.packets = None
        if self.current is None:
            raise MediaError(self.path, f"no frame decodable at {t:.2f}s (truncated or corrupt)")
        return self.current

    def _exact_frame_at(self, t: float) -> Any:
        here = self._time(self.current) if self.current is not None else None
        if self.packets is None or here is None or t < here - 1e-3 or t - here > _SEEK_GAP_S:
            self._seek(t)
        elif here >= t - 1e-3:
            return self.current  # two samples within one frame's duration
        assert self.packets is not None
        for packet in self.packets:
            stamp = packet.dts if packet.dts is not None else packet.pts
            near = stamp is None or float(stamp * self.base) >= t - self.margin
            self._skip("DEFAULT" if near else "NONREF")
            for frame in self.ctx.decode(packet) if packet.size else self.ctx.decode(None):
                self.current = frame
                when = self._time(frame)
                if when is not None and when >= t - 1e-3:
                    return frame
        self.packets = None  # the stream has ended: the next read seeks
        if self.current is None:
            raise MediaError(self.path, f"no frame decodable at {t:.2f}s (truncated or corrupt)")
        return self.current  # t lies past the last frame: the last frame is what is shown

    def read(self, timestamps: Sequence[float]) -> list[Image.Image]:
        images = []
        for t in timestamps:
            frame = self._key_frame_at(t) if self._is_key(t) else self._exact_frame_at(t)
            if self.size is not None:
                w, h = fit_size(frame.width, frame.height, self.size)
                images.append(frame.to_image(width=w, height=h))
            else:
                images.append(frame.to_image())
        return images

    def close(self) -> None:
        self.container.close()
