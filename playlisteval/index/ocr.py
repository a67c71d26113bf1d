"""On-screen text of sampled frames (DESIGN, offline components): the "visual" half of a text vector.

rapidocr 3 ships its detection and recognition models (PP-OCRv6 small, ONNX) inside the wheel, so it
runs with no download. OCR is the costliest step of the offline index (about 0.2–0.8 s per 640-wide
frame on one core), so frames are shrunk to ``ocr_max_side`` first, and a frame that barely differs
from the last one read (a static slide, a held shot) reuses that frame's text instead of being read.
"""

from __future__ import annotations

import math
import os
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from PIL import Image

from playlisteval.config import IndexSettings
from playlisteval.errors import ConfigError
from playlisteval.index.length_batches import length_batches
from playlisteval.index.ocr_ahead import PARTIAL_MAX_SHARE, DetectAhead, Seen, thumbnail
from playlisteval.index.ocr_boxes import Box, ChangedLines, meets
from playlisteval.index.ocr_int8 import REC_HEIGHT, REC_MIN_WIDTH, wants_int8
from playlisteval.index.ocr_pool import EnginePool

_HAS_WORD = re.compile(r"[^\W_]{2,}")  # a line needs two letters or digits in a row to be text
# rapidocr's recogniser: lines scaled to REC_HEIGHT px tall, at least REC_MIN_WIDTH wide (ocr_int8.py), in
# batches of 6 (its rec_batch_num)
REC_ROWS, REC_SLACK = 6, 16


class OcrEngine(Protocol):
    name: str

    def read(self, image: Image.Image) -> list[str]:
        """The text lines of one image, top to bottom."""
        ...


class RapidOcr:
    """rapidocr with its bundled models, loaded once per process (issue 13) into a pool of engines that
    readings borrow one at a time (ocr_pool.py)."""

    name = "rapidocr"

    def __init__(self, min_score: float = 0.5, int8: bool = False, int8_rec: bool = False) -> None:
        self.min_score = min_score
        self.int8 = int8  # the 8-bit text detector (ocr_int8.py; [index] ocr_detector)
        self.int8_rec = int8_rec  # the 8-bit recogniser ([index] ocr_recognizer)
        self.pool = EnginePool(lambda threads: self._load(threads))  # looked up per call: tests replace _load
        try:
            import rapidocr  # noqa: F401
        except ImportError as exc:
            raise ConfigError(f"OCR 'rapidocr' is not installed ({exc}); set [index] ocr = \"none\"") from None

    def set_threads(self, threads: int) -> None:
        """ONNX threads for the engines read with from now on. One thread each while several videos are
        read at once (the index's threads keep the cores busy); a video read alone would leave the other
        cores idle: on the 5-minute 720p lecture, OCR 3.75 -> 2.69 s of its 5.9 s with 2 threads (issue 26)."""
        self.pool.threads = max(1, threads)

    @property
    def threads(self) -> int:
        return self.pool.threads

    @property
    def loaded(self) -> int:
        return self.pool.loaded

    def warm(self, ahead: bool) -> None:
        """Load the engines a video's reading will take in the background now, beside the video's probe and
        first decoding: when ``ahead``, first the one-thread engine that detects ahead (the first to be
        used), then the reader's."""
        self.pool.warm(1, 0) if ahead else self.pool.warm(0)

    def _take(self, threads: int | None = None) -> tuple[int, Any]:
        return self.pool.take(threads)

    def _give(self, threads: int, engine: Any) -> None:
        self.pool.give(threads, engine)

    def _load(self, threads: int) -> Any:
        from playlisteval.index import phases
        from playlisteval.index.ocr_sessions import rapidocr_class

        with phases.timed("model load"):
            return self._make(rapidocr_class(), threads)

    def _make(self, RapidOCR: Any, threads: int = 1) -> Any:  # noqa: N803  (the class, as rapidocr names it)
        from playlisteval.index.ocr_sessions import use_quiet_sessions

        engine = RapidOCR(params={
            "Global.log_level": "critical",
            "Global.use_cls": False,  # on-screen text is upright; the angle classifier costs time
            "Global.text_score": self.min_score,
            # detect at the given size: the default *enlarges* small frames to 736 px
            "Det.limit_type": "max", "Det.limit_side_len": 4096,
            # one thread while the index's threads keep the cores busy (set_threads)
            "EngineConfig.onnxruntime.intra_op_num_threads": threads,
            "EngineConfig.onnxruntime.inter_op_num_threads": 1,
        })
        # threads that sleep, not spin, between ONNX calls; the 8-bit models where chosen (ocr_sessions.py)
        use_quiet_sessions(engine, threads, self.int8, self.int8_rec)
        return engine

    def read(self, image: Image.Image) -> list[str]:
        return [text for text, _box in self.read_boxes(image)]

    def read_boxes(self, image: Image.Image) -> list[tuple[str, Box]]:
        """The text lines with their boxes (x0, y0, x1, y1 in the image's pixels), top to bottom."""
        threads, engine = self._take()
        try:  # the flags every time: a call with other flags (detect) leaves them set on the engine
            result = engine(image.convert("RGB"), use_det=True, use_cls=False, use_rec=True)
        finally:
            self._give(threads, engine)
        texts = getattr(result, "txts", None) or ()
        scores = getattr(result, "scores", None) or (1.0,) * len(texts)
        raw_boxes = getattr(result, "boxes", None)
        boxes = [_bounds(b) for b in raw_boxes] if raw_boxes is not None and len(raw_boxes) == len(texts) \
            else [(0.0, 0.0, float(image.width), float(image.height))] * len(texts)
        return [(t.strip(), box) for t, s, box in zip(texts, scores, boxes, strict=False)
                if s >= self.min_score and _HAS_WORD.search(t)]

    # detection and recognition as separate calls, for ocr_boxes.ChangedLines (issue 43)
    def prepare(self, image: Image.Image) -> np.ndarray:
        """The image as rapidocr's models take it (its own loader: the same channel order as ``read``)."""
        from rapidocr.utils.load_image import LoadImage

        return np.asarray(LoadImage()(image.convert("RGB")))

    def detect(self, image: np.ndarray, threads: int | None = None) -> list[np.ndarray]:
        """The text lines' quadrilaterals (4 x 2, the image's pixels), without recognising them; on an
        engine of ``threads`` ONNX threads when given (detection ahead of the reader, index/work.py)."""
        threads, engine = self._take(threads)
        try:
            result = engine(image, use_det=True, use_cls=False, use_rec=False)
        finally:
            self._give(threads, engine)
        boxes = getattr(result, "boxes", None)
        return [] if boxes is None else [np.asarray(b, dtype=np.float32).reshape(4, 2) for b in boxes]

    @staticmethod
    def crop(image: np.ndarray, quad: np.ndarray) -> np.ndarray:
        from rapidocr.utils.process_img import get_rotate_crop_image

        return np.asarray(get_rotate_crop_image(image, quad))

    def recognize(self, crops: list[np.ndarray]) -> list[tuple[str, float]]:
        """Each cropped line's text and confidence, in order: one call per group of lines of similar width.

        The recogniser scales a line to 48 px tall and pads a batch to its widest line, so a frame's
        clock (~9 times as wide as tall) batched with its ticker (~20) cost as much as two tickers:
        on the 40 sampled frames of the camera-like bench video, per-frame batches took ~1.3x the CPU of
        batches that never mix widths (``length_batches``, as the embedder's texts; issue 43)."""
        if not crops:
            return []
        widths = [max(REC_MIN_WIDTH, math.ceil(REC_HEIGHT * c.shape[1] / max(1, c.shape[0]))) for c in crops]
        out: list[tuple[str, float]] = [("", 0.0)] * len(crops)
        threads, engine = self._take()
        try:
            for group in length_batches(widths, max_rows=REC_ROWS, token_budget=10**9, slack=REC_SLACK):
                result = engine.recognize_txt([crops[i] for i in group])
                texts, scores = tuple(result.txts or ()), tuple(result.scores or ())
                if len(texts) != len(group) or len(scores) != len(group):
                    raise RuntimeError(f"rapidocr recognised {len(texts)} lines for {len(group)} crops")
                for i, t, s in zip(group, texts, scores, strict=True):
                    out[i] = (str(t), float(s))
        finally:
            self._give(threads, engine)
        return out


def _bounds(points: Any) -> Box:
    arr = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    return float(arr[:, 0].min()), float(arr[:, 1].min()), float(arr[:, 0].max()), float(arr[:, 1].max())


_engines: dict[tuple[str, float, bool, bool], OcrEngine] = {}
_engines_lock = threading.Lock()


def get_ocr(settings: IndexSettings) -> OcrEngine | None:
    """The process-wide OCR engine the settings name, or None when OCR is off."""
    name = settings.ocr.strip().lower()
    if name in ("", "none", "off"):
        return None
    if name != "rapidocr":
        raise ConfigError(f"unknown OCR {settings.ocr!r}; known: rapidocr, none")
    int8, int8_rec = wants_int8(settings.ocr_detector), wants_int8(settings.ocr_recognizer)
    key = (name, settings.ocr_min_score, int8, int8_rec)
    with _engines_lock:
        if key not in _engines:
            _engines[key] = RapidOcr(settings.ocr_min_score, int8, int8_rec)
        return _engines[key]


def share_cores(settings: IndexSettings, videos_at_once: int) -> None:
    """Give the process's OCR engines ``[index] ocr_threads`` ONNX threads, or (0) the cores shared among
    the ``videos_at_once`` this process reads in parallel."""
    ocr = get_ocr(settings)
    if not isinstance(ocr, RapidOcr):
        return
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    ocr.set_threads(settings.ocr_threads or max(1, cores // max(1, videos_at_once)))


@dataclass
class OcrStats:
    read: int = 0  # frames OCR'd (in whole or in the part that changed)
    reused: int = 0  # frames that matched the last one read
    partial: int = 0  # of those read, frames read only where they changed (issue 26)


_MIN_CROP = 32  # pixels: a smaller region grows to this, so the detector has something to look at


def _scaled(box: Box, scale: float, dx: float, dy: float) -> Box:
    """A box read from a crop at ``scale`` back in the frame's pixels."""
    return box[0] / scale + dx, box[1] / scale + dy, box[2] / scale + dx, box[3] / scale + dy


class FrameTextReader:
    """Reads the frames of one video in time order, skipping frames that match the last one read.

    A frame that changed only in part (a speaker's camera beside a slide, a pointer, one new bullet)
    is read only there (issue 26): the changed pixels of the 64x64 thumbnails give a box, grown over
    any text line of the last frame it touches; the lines outside it are kept, the box is OCR'd at the
    scale a whole frame would be, and its lines join them top to bottom. On a lecture whose slide
    changes every 20 s with a camera inset, most frames cost a small crop instead of a whole frame.
    An engine that gives no boxes (``read`` only) reads whole frames as before.
    """

    def __init__(self, engine: OcrEngine, max_side: int, skip_share: float, skip_level: float,
                 detect_side: int = 0) -> None:
        self.engine, self.max_side = engine, max_side
        self.skip_share, self.skip_level = skip_share, skip_level
        self.stats = OcrStats()
        # a whole frame: detect at detect_side, recognise only the lines that changed (ocr_boxes.py)
        self.boxes = ChangedLines(engine, detect_side, max_side, skip_share, skip_level,
                                  getattr(engine, "min_score", 0.0), _HAS_WORD) \
            if detect_side > 0 and hasattr(engine, "detect") and hasattr(engine, "recognize") else None
        self._last_thumb: np.ndarray | None = None
        self._last_lines: list[str] = []
        self._last_boxes: list[tuple[str, Box]] | None = None  # the last lines with boxes (frame pixels)

    def ahead(self) -> DetectAhead | None:
        """A detector for the frame-reading thread (ocr_ahead.DetectAhead), or None when this reader does
        not detect and recognise in separate steps."""
        return DetectAhead(self.boxes) if self.boxes is not None else None

    def lines(self, image: Image.Image, seen: Seen | None = None) -> list[str]:
        """The frame's text lines; ``seen``: its thumbnail and detection made ahead (``DetectAhead``)."""
        thumb = seen.thumb if seen is not None else thumbnail(image)
        last = self._last_thumb
        if last is not None:
            changed = np.abs(thumb - last) > self.skip_level
            share = float(changed.mean())
            if share < self.skip_share:
                self.stats.reused += 1
                return self._last_lines
            region = self._region(changed, image.size) if share <= PARTIAL_MAX_SHARE else None
            if region is not None and self._last_boxes is not None:
                return self._read_region(image, thumb, region, self._last_boxes)
        scale = self._scale(image)
        if self.boxes is not None:  # it shrinks the frame itself, to its detection and recognition sizes
            found = [(line.text, line.box) for line in self.boxes.read(image, seen.quads if seen else None)]
            self._last_boxes, self._last_lines = found, [t for t, _ in found]
        elif hasattr(self.engine, "read_boxes"):
            found = [(t, _scaled(b, scale, 0.0, 0.0)) for t, b in self.engine.read_boxes(self._resized(image, scale))]
            self._last_boxes, self._last_lines = found, [t for t, _ in found]
        else:
            self._last_boxes, self._last_lines = None, self.engine.read(self._resized(image, scale))
        self._last_thumb = thumb
        self.stats.read += 1
        return self._last_lines

    def _scale(self, image: Image.Image) -> float:
        return min(1.0, self.max_side / max(image.size))

    @staticmethod
    def _resized(image: Image.Image, scale: float) -> Image.Image:
        if scale >= 1.0:
            return image
        return image.resize((max(1, round(image.width * scale)), max(1, round(image.height * scale))),
                            Image.Resampling.BILINEAR)

    def _region(self, changed: np.ndarray, size: tuple[int, int]) -> Box | None:
        """The changed pixels' box in frame pixels (a thumbnail pixel of margin), grown over the last
        frame's text lines it touches; None when that covers more than ``PARTIAL_MAX_SHARE`` of the frame."""
        rows, cols = np.nonzero(changed)
        w, h = size
        sx, sy = w / changed.shape[1], h / changed.shape[0]
        box = (max(0.0, (cols.min() - 1) * sx), max(0.0, (rows.min() - 1) * sy),
               min(float(w), (cols.max() + 2) * sx), min(float(h), (rows.max() + 2) * sy))
        for _text, line in self._last_boxes or []:
            if meets(box, line):
                box = (min(box[0], line[0]), min(box[1], line[1]), max(box[2], line[2]), max(box[3], line[3]))
        grow_x, grow_y = max(0.0, _MIN_CROP - (box[2] - box[0])) / 2, max(0.0, _MIN_CROP - (box[3] - box[1])) / 2
        box = (max(0.0, box[0] - grow_x), max(0.0, box[1] - grow_y),
               min(float(w), box[2] + grow_x), min(float(h), box[3] + grow_y))
        if (box[2] - box[0]) * (box[3] - box[1]) > PARTIAL_MAX_SHARE * w * h:
            return None
        return box

    def _read_region(self, image: Image.Image, thumb: np.ndarray, region: Box,
                     last: list[tuple[str, Box]]) -> list[str]:
        scale = self._scale(image)
        x0, y0 = int(region[0]), int(region[1])
        crop = self._resized(image.crop((x0, y0, int(np.ceil(region[2])), int(np.ceil(region[3])))), scale)
        read = [(t, _scaled(b, scale, x0, y0)) for t, b in self.engine.read_boxes(crop)]  # type: ignore[attr-defined]
        kept = [(t, b) for t, b in last if not meets(b, region)]
        if self.boxes is not None:
            self.boxes.forget(region)
        found = sorted(kept + read, key=lambda tb: (round(tb[1][1]), tb[1][0]))
        self._last_thumb, self._last_boxes, self._last_lines = thumb, found, [t for t, _ in found]
        self.stats.read += 1
        self.stats.partial += 1
        return self._last_lines

    def chunk_text(self, images: Sequence[Image.Image], ahead: Sequence[Seen] | None = None) -> str:
        """The distinct lines of a chunk's frames, in order of first appearance, one per line; ``ahead``:
        each frame's ``Seen`` from ``DetectAhead.see``."""
        found: dict[str, None] = {}
        for i, image in enumerate(images):
            for line in self.lines(image, ahead[i] if ahead is not None else None):
                found.setdefault(line, None)
        return "\n".join(found)
