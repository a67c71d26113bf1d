"""OCR of a whole frame that reads only the text lines whose pixels changed (issue 43, deliverable 3).

On video as people record it, change is everywhere (camera motion, sensor noise), so the changed-region
crop of ocr.py covers the frame and every sampled frame was read whole: detection, then recognition of
every line. Measured on 720p camera-like video, recognition was the larger half. Here a frame is read in
two steps:

1. detection alone, on the frame shrunk to ``[index] ocr_detect_side`` (text lines are large objects to
   the detector, and its cost grows with area: 118 -> 44 ms a frame from 640 to 384 px here);
2. recognition of only the lines that are new or whose pixels changed: a detected line that overlaps a
   line read before is compared with that line's pixels as they were when it was read (grey, at the
   recognition scale); under ``skip_share`` of them changed by more than ``skip_level`` grey levels
   (the same rule as a whole frame's reuse) it keeps its text. A clock or ticker is read again every
   frame; a slide title or a caption that stays is read once.

Recognition crops come from the frame at ``ocr_max_side``, as before, so a line is read as sharply as
it was. What the smaller detection loses is stated in template.toml: lines too small to detect.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from PIL import Image

#: a detected line matches a line read before when their boxes overlap this much (intersection / union)
MATCH_IOU = 0.6

#: a text line's box: x0, y0, x1, y1 in pixels of the frame it was read from
Box = tuple[float, float, float, float]


class BoxEngine(Protocol):
    """An OCR engine that detects and recognises in separate calls (ocr.RapidOcr)."""

    def prepare(self, image: Image.Image) -> np.ndarray: ...

    def detect(self, image: np.ndarray, threads: int | None = None) -> list[np.ndarray]: ...

    def crop(self, image: np.ndarray, quad: np.ndarray) -> np.ndarray: ...

    def recognize(self, crops: list[np.ndarray]) -> list[tuple[str, float]]: ...


@dataclass
class Line:
    text: str
    box: Box  # frame pixels
    patch: np.ndarray | None  # grey pixels of ``box`` at the recognition scale when it was read


@dataclass
class BoxStats:
    read: int = 0  # lines recognised
    kept: int = 0  # lines whose pixels had not changed: their text kept


def bounds(quad: np.ndarray) -> Box:
    return float(quad[:, 0].min()), float(quad[:, 1].min()), float(quad[:, 0].max()), float(quad[:, 1].max())


def iou(a: Box, b: Box) -> float:
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    if w <= 0 or h <= 0:
        return 0.0
    inter = w * h
    return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)


#: a detected box reaches past its glyphs by about this share of its height on every side (the detector's
#: unclip margin): the comparison leaves it out, or moving background behind the text reads as a change
MARGIN = 0.2


def _patch(grey: np.ndarray, box: Box, scale: float) -> np.ndarray:
    """The grey pixels of a line's glyphs: ``box`` less its margin, at the recognition scale."""
    inset = MARGIN * (box[3] - box[1])
    x0, y0 = max(0, int((box[0] + inset) * scale)), max(0, int((box[1] + inset) * scale))
    x1 = min(grey.shape[1], int(np.ceil((box[2] - inset) * scale)))
    y1 = min(grey.shape[0], int(np.ceil((box[3] - inset) * scale)))
    return grey[y0:y1, x0:x1]


def _shrunk(image: Image.Image, scale: float) -> Image.Image:
    if scale >= 1.0:
        return image
    return image.resize((max(1, round(image.width * scale)), max(1, round(image.height * scale))),
                        Image.Resampling.BILINEAR)


class ChangedLines:
    """Reads whole frames of one video in time order, recognising only lines that changed since read."""

    def __init__(self, engine: Any, detect_side: int, max_side: int, skip_share: float, skip_level: float,
                 min_score: float, has_word: Any) -> None:
        self.engine: BoxEngine = engine
        self.detect_side, self.max_side = detect_side, max_side
        self.skip_share, self.skip_level = skip_share, skip_level
        self.min_score, self.has_word = min_score, has_word
        self.lines: list[Line] = []
        self.stats = BoxStats()

    def detect(self, image: Image.Image, threads: int | None = None) -> list[np.ndarray]:
        """The frame's text lines' quadrilaterals in frame pixels: step 1 alone. It keeps no state, so it
        can run ahead on another thread (ocr.DetectAhead, on ``threads`` ONNX threads)."""
        det_scale = min(1.0, self.detect_side / max(image.size))
        found = self.engine.detect(self.engine.prepare(_shrunk(image, det_scale)), threads)
        return [q / det_scale for q in found]

    def read(self, image: Image.Image, quads: list[np.ndarray] | None = None) -> list[Line]:
        """The frame's lines, top to bottom; the reader remembers them for the next frame. ``quads``: the
        frame's detection when already made (``detect``)."""
        rec_scale = min(1.0, self.max_side / max(image.size))
        if quads is None:
            quads = self.detect(image)
        rec = self.engine.prepare(_shrunk(image, rec_scale))
        grey = rec.astype(np.float32).mean(axis=2)
        found: list[Line] = []
        todo: list[tuple[np.ndarray, Box]] = []
        for quad in quads:
            box = bounds(quad)
            same = self._unchanged(box, grey, rec_scale)
            if same is not None:
                if all(line is not same for line in found):
                    found.append(same)
                self.stats.kept += 1
            else:
                todo.append((quad, box))
        crops = [self.engine.crop(rec, (quad * rec_scale).astype(np.float32)) for quad, _ in todo]
        for (_quad, box), (text, score) in zip(todo, self.engine.recognize(crops), strict=True):
            self.stats.read += 1
            if score >= self.min_score and self.has_word.search(text):
                found.append(Line(text.strip(), box, _patch(grey, box, rec_scale).copy()))
        self.lines = sorted(found, key=lambda line: (round(line.box[1]), line.box[0]))
        return self.lines

    def forget(self, region: Box) -> None:
        """Lines in ``region`` were read another way (ocr.py's changed-region crop): compare them no more."""
        self.lines = [line for line in self.lines if not meets(line.box, region)]

    def _unchanged(self, box: Box, grey: np.ndarray, scale: float) -> Line | None:
        """The line read before at about ``box`` whose pixels have not changed since, or None."""
        best = max(self.lines, key=lambda line: iou(line.box, box), default=None)
        if best is None or best.patch is None or iou(best.box, box) < MATCH_IOU:
            return None
        now = _patch(grey, best.box, scale)
        if now.shape != best.patch.shape or now.size == 0:
            return None
        changed = float((np.abs(now - best.patch) > self.skip_level).mean())
        if changed < self.skip_share:
            return best
        # text on a half-transparent box over moving video: the box's pixels change, the glyphs do not
        return best if same_glyphs(best.patch, now) else None


#: a line whose glyphs stand this many grey levels (of 255) above or below their background can be compared
#: by its glyphs (``same_glyphs``); fainter text is compared pixel by pixel only
MIN_CONTRAST = 64.0
#: a line whose glyphs differ in more pixels than this is read again
MAX_FLIPS = 2


def two_levels(patch: np.ndarray) -> tuple[float, float, float]:
    """Otsu's threshold of a grey patch and the mean grey level of each side: (threshold, dark, light)."""
    hist, edges = np.histogram(patch, bins=64, range=(0.0, 256.0))
    centres = (edges[:-1] + edges[1:]) / 2
    w0, w1 = np.cumsum(hist)[:-1], np.cumsum(hist[::-1])[::-1][1:]
    s0 = np.cumsum(hist * centres)[:-1]
    s1 = (hist * centres).sum() - s0
    with np.errstate(divide="ignore", invalid="ignore"):
        m0, m1 = s0 / w0, s1 / w1
        between = np.where((w0 > 0) & (w1 > 0), w0 * w1 * (m0 - m1) ** 2, -1.0)
    k = int(np.argmax(between))
    if between[k] < 0:
        return float(centres[0]), float(patch.mean()), float(patch.mean())
    return float(centres[k + 1]), float(m0[k]), float(m1[k])


def same_glyphs(before: np.ndarray, now: np.ndarray) -> bool:
    """Whether a line's glyphs are where they were: no pixel that was clearly glyph is now clearly
    background, nor the other way round (beyond ``MAX_FLIPS``).

    Why: a caption or slide line drawn on a half-transparent box over moving video keeps its glyphs while
    every pixel of the box changes, so the pixel rule reads it again on every frame. "Clearly" is a quarter
    of the glyph/background contrast away from the middle of the two levels Otsu's split finds in the line
    as it was read: noise, the
    drifting background and compression blur stay inside that margin, and a changed character cannot (on
    the bench's camera-like video, 25 pairs of samples with the same slide line showed 0 such pixels,
    28 with another slide number 19 or more). A patch without that contrast is not judged (False)."""
    _, dark, light = two_levels(before)
    if light - dark < MIN_CONTRAST:
        return False
    threshold = (dark + light) / 2  # Otsu's cut can sit anywhere between two narrow peaks: the middle
    margin = (light - dark) / 4
    flips = ((before > threshold + margin) & (now < threshold - margin)) | \
        ((before < threshold - margin) & (now > threshold + margin))
    return int(flips.sum()) <= MAX_FLIPS


def meets(a: Box, b: Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]
