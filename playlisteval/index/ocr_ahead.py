"""Text detection ahead of the OCR reader, on the frame-reading thread (issue 43).

Detection needs nothing from the frames before; recognition does (which lines changed since they were
read, ocr_boxes.py). So while the reader (ocr.FrameTextReader) recognises one chunk's lines, the thread
that decodes the next chunk (index/work.py) also detects its text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from PIL import Image

from playlisteval.index.ocr_boxes import Box, ChangedLines

THUMB = (64, 64)
#: a change over more of the frame than this (a new slide) reads the whole frame again
PARTIAL_MAX_SHARE = 0.25


def thumbnail(image: Image.Image) -> np.ndarray:
    return np.asarray(image.convert("L").resize(THUMB, Image.Resampling.BILINEAR), dtype=np.float32)


def changed_share(a: np.ndarray, b: np.ndarray, level: float) -> float:
    """The share of thumbnail pixels that differ by more than ``level`` grey levels.

    A share, not a mean difference: a new caption or sign changes a small area a lot, while sensor
    and compression noise change every pixel a little; a mean would confuse the two.
    """
    return float((np.abs(a - b) > level).mean())


def changed_box(changed: np.ndarray, size: tuple[int, int]) -> Box:
    """The box of a thumbnail's changed pixels (``changed``: a boolean mask, some pixel set) in the pixels of
    a frame of ``size``, with a thumbnail pixel of margin: where a frame changed in part is read again."""
    rows, cols = np.nonzero(changed)
    w, h = size
    sx, sy = w / changed.shape[1], h / changed.shape[0]
    return (max(0.0, (cols.min() - 1) * sx), max(0.0, (rows.min() - 1) * sy),
            min(float(w), (cols.max() + 2) * sx), min(float(h), (rows.max() + 2) * sy))


def too_big(box: Box, size: tuple[int, int]) -> bool:
    """Whether a changed region covers more than ``PARTIAL_MAX_SHARE`` of the frame: then it is read whole."""
    return (box[2] - box[0]) * (box[3] - box[1]) > PARTIAL_MAX_SHARE * size[0] * size[1]


@dataclass
class Seen:
    """What the frame-reading thread made of a frame before the reader gets it."""

    thumb: np.ndarray
    quads: list[np.ndarray] | None  # the whole frame's text lines (ChangedLines.detect), None: not detected


class DetectAhead:
    """Detection of the frames that will be read whole, on the frame-reading thread (issue 43).

    Detection needs nothing from the frames before, recognition does (which lines changed since read):
    so while the reader recognises one chunk's lines, the thread that decodes the next chunk also detects
    its text, each on one core. Which frames the reader will read whole is guessed as the reader decides,
    from the thumbnails: the first frame, and a frame whose changed pixels since the last frame read (one
    not reused as unchanged) cover more than ``PARTIAL_MAX_SHARE`` of it, or whose changed pixels' box
    does (full-frame motion changes a few pixels everywhere: the reader's region is then the whole
    frame). The reader also grows a region over the text lines it touches, which this does not know:
    a wrong guess costs time, never text — a frame read whole without a detection is detected by the
    reader, and a detection the reader does not need is dropped. On the camera-like bench video the
    share alone guessed 18 of the 37 frames read whole; with the box, 37.
    """

    def __init__(self, boxes: ChangedLines) -> None:
        self.boxes = boxes
        self._last: np.ndarray | None = None  # the thumbnail of the last frame the reader will read

    def see(self, images: Sequence[Image.Image]) -> list[Seen]:
        out = []
        for image in images:
            thumb = thumbnail(image)
            whole = self._last is None
            if self._last is not None:
                changed = np.abs(thumb - self._last) > self.boxes.skip_level
                share = float(changed.mean())
                if share < self.boxes.skip_share:  # the reader reuses the last frame's text
                    out.append(Seen(thumb, None))
                    continue
                whole = share > PARTIAL_MAX_SHARE or too_big(changed_box(changed, image.size), image.size)
            out.append(Seen(thumb, self.boxes.detect(image, threads=1) if whole else None))
            self._last = thumb
        return out
