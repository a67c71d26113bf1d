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

from playlisteval.index.ocr_boxes import ChangedLines

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


@dataclass
class Seen:
    """What the frame-reading thread made of a frame before the reader gets it."""

    thumb: np.ndarray
    quads: list[np.ndarray] | None  # the whole frame's text lines (ChangedLines.detect), None: not detected


class DetectAhead:
    """Detection of the frames that will be read whole, on the frame-reading thread (issue 43).

    Detection needs nothing from the frames before, recognition does (which lines changed since read):
    so while the reader recognises one chunk's lines, the thread that decodes the next chunk also detects
    its text, each on one core. Which frames the reader will read whole is guessed from the thumbnails of
    consecutive samples (a change over ``PARTIAL_MAX_SHARE`` of the frame, or the first frame); a wrong
    guess costs time, never text: a frame read whole without a detection is detected by the reader, and
    a detection the reader does not need is dropped.
    """

    def __init__(self, boxes: ChangedLines) -> None:
        self.boxes = boxes
        self._last: np.ndarray | None = None

    def see(self, images: Sequence[Image.Image]) -> list[Seen]:
        out = []
        for image in images:
            thumb = thumbnail(image)
            whole = self._last is None or changed_share(thumb, self._last, self.boxes.skip_level) > PARTIAL_MAX_SHARE
            out.append(Seen(thumb, self.boxes.detect(image, threads=1) if whole else None))
            self._last = thumb
        return out
