"""On-screen text of sampled frames (DESIGN, offline components): the "visual" half of a text vector.

rapidocr 3 ships its detection and recognition models (PP-OCRv6 small, ONNX) inside the wheel, so it
runs with no download. OCR is the costliest step of the offline index (about 0.2–0.8 s per 640-wide
frame on one core), so frames are shrunk to ``ocr_max_side`` first, and a frame that barely differs
from the last one read (a static slide, a held shot) reuses that frame's text instead of being read.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from PIL import Image

from playlisteval.config import IndexSettings
from playlisteval.errors import ConfigError

_HAS_WORD = re.compile(r"[^\W_]{2,}")  # a line needs two letters or digits in a row to be text
THUMB = (64, 64)


class OcrEngine(Protocol):
    name: str

    def read(self, image: Image.Image) -> list[str]:
        """The text lines of one image, top to bottom."""
        ...


class RapidOcr:
    """rapidocr with its bundled models, loaded once per process (issue 13).

    An engine keeps per-call state, so two threads never share one at a time; but engines are not tied
    to threads either (a thread per video or per message would load the models again and again): idle
    engines wait in a pool, a reading takes one (making one only when all are busy) and gives it back.
    So a process holds as many engines as it ever read with at once, each loaded once.
    """

    name = "rapidocr"

    def __init__(self, min_score: float = 0.5) -> None:
        self.min_score = min_score
        self._idle: list[Any] = []
        self._pool_lock = threading.Lock()
        self.loaded = 0  # engines made by this process
        try:
            import rapidocr  # noqa: F401
        except ImportError as exc:
            raise ConfigError(f"OCR 'rapidocr' is not installed ({exc}); set [index] ocr = \"none\"") from None

    def _take(self) -> Any:
        with self._pool_lock:
            if self._idle:
                return self._idle.pop()
            self.loaded += 1
        return self._load()

    def _load(self) -> Any:
        from rapidocr import RapidOCR

        return RapidOCR(params={
            "Global.log_level": "critical",
            "Global.use_cls": False,  # on-screen text is upright; the angle classifier costs time
            "Global.text_score": self.min_score,
            # detect at the given size: the default *enlarges* small frames to 736 px
            "Det.limit_type": "max", "Det.limit_side_len": 4096,
            # index threads already keep the cores busy: one ONNX thread per engine
            "EngineConfig.onnxruntime.intra_op_num_threads": 1,
            "EngineConfig.onnxruntime.inter_op_num_threads": 1,
        })

    def read(self, image: Image.Image) -> list[str]:
        engine = self._take()
        try:
            result = engine(image.convert("RGB"))
        finally:
            with self._pool_lock:
                self._idle.append(engine)
        texts = getattr(result, "txts", None) or ()
        scores = getattr(result, "scores", None) or (1.0,) * len(texts)
        return [t.strip() for t, s in zip(texts, scores, strict=False)
                if s >= self.min_score and _HAS_WORD.search(t)]


_engines: dict[tuple[str, float], OcrEngine] = {}
_engines_lock = threading.Lock()


def get_ocr(settings: IndexSettings) -> OcrEngine | None:
    """The process-wide OCR engine the settings name, or None when OCR is off."""
    name = settings.ocr.strip().lower()
    if name in ("", "none", "off"):
        return None
    if name != "rapidocr":
        raise ConfigError(f"unknown OCR {settings.ocr!r}; known: rapidocr, none")
    key = (name, settings.ocr_min_score)
    with _engines_lock:
        if key not in _engines:
            _engines[key] = RapidOcr(settings.ocr_min_score)
        return _engines[key]


def thumbnail(image: Image.Image) -> np.ndarray:
    return np.asarray(image.convert("L").resize(THUMB, Image.Resampling.BILINEAR), dtype=np.float32)


def changed_share(a: np.ndarray, b: np.ndarray, level: float) -> float:
    """The share of thumbnail pixels that differ by more than ``level`` grey levels.

    A share, not a mean difference: a new caption or sign changes a small area a lot, while sensor
    and compression noise change every pixel a little; a mean would confuse the two.
    """
    return float((np.abs(a - b) > level).mean())


@dataclass
class OcrStats:
    read: int = 0  # frames OCR'd
    reused: int = 0  # frames that matched the last one read


class FrameTextReader:
    """Reads the frames of one video in time order, skipping frames that match the last one read."""

    def __init__(self, engine: OcrEngine, max_side: int, skip_share: float, skip_level: float) -> None:
        self.engine, self.max_side = engine, max_side
        self.skip_share, self.skip_level = skip_share, skip_level
        self.stats = OcrStats()
        self._last_thumb: np.ndarray | None = None
        self._last_lines: list[str] = []

    def lines(self, image: Image.Image) -> list[str]:
        thumb = thumbnail(image)
        last = self._last_thumb
        if last is not None and changed_share(thumb, last, self.skip_level) < self.skip_share:
            self.stats.reused += 1
            return self._last_lines
        if max(image.size) > self.max_side:
            scale = self.max_side / max(image.size)
            image = image.resize((max(1, round(image.width * scale)), max(1, round(image.height * scale))),
                                 Image.Resampling.BILINEAR)
        self._last_thumb, self._last_lines = thumb, self.engine.read(image)
        self.stats.read += 1
        return self._last_lines

    def chunk_text(self, images: Sequence[Image.Image]) -> str:
        """The distinct lines of a chunk's frames, in order of first appearance, one per line."""
        seen: dict[str, None] = {}
        for image in images:
            for line in self.lines(image):
                seen.setdefault(line, None)
        return "\n".join(seen)
