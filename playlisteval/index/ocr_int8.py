"""An 8-bit copy of rapidocr's text detector, made once per machine (issue 43: `index` at the paper's scale).

Detection of every sampled frame was the largest single cost of `index` on camera-like video: ~63 ms a
frame at 384 px on one core of the bench host, 2.7 of ~9.7 CPU-s for five minutes of 720p30 at 2.7 Mbit/s.
ONNX Runtime runs the same network quantised to 8 bits (QDQ: 8-bit activations, 8-bit weights, one scale a
tensor) in ~13 ms there: CPUs with VNNI or AMX multiply 8-bit numbers several times faster than floats.

The copy is made from the detector the installed rapidocr ships, with ONNX Runtime's own quantiser
(``quantize_static``, min/max calibration) on ``CALIBRATION`` synthetic frames drawn here from a fixed
seed: gradients, noise, and text lines of many sizes and colours, some on see-through boxes, at the
detection sizes the index uses. So the copy is the same on every machine with the same rapidocr and ONNX
Runtime, whatever collection it first indexed. It lives in the user's cache (``$XDG_CACHE_HOME`` or
``~/.cache``, then ``playlisteval/ocr``), named by the source model's SHA-256, ONNX Runtime's version and
``RECIPE``; it is written to a temporary name and renamed, so processes that make it at once cannot
leave half a file.

What it loses: the probability map moves by up to ~0.8 at single pixels, so a line's box can end a few
pixels sooner or later. On the bench's camera video, 2 of the 120 lines read on 40 frames differ, both at
the frame's edge where a ticker is cut (one letter more, one letter less). Recognition is unchanged (the
recogniser stays in floats). ``[index] ocr_detector`` picks: "auto" (8-bit where the CPU has 8-bit
dot products), "int8" or "float".
"""

from __future__ import annotations

import functools
import hashlib
import os
import tempfile
import threading
from pathlib import Path

import numpy as np

from playlisteval.config import user_cache  # $XDG_CACHE_HOME/playlisteval
from playlisteval.errors import ConfigError
from playlisteval.logs import get_logger

log = get_logger(__name__)

#: bump when the calibration or the quantiser's options change: the file name changes with it
RECIPE = 1
#: synthetic calibration frames; more moves the scales little (min/max over text, edges and flat areas)
CALIBRATION = 24
#: (height, width) of the calibration inputs: 16:9 and 4:3 frames at the default detection side, padded to
#: multiples of 32 as rapidocr pads them, and a portrait one
SHAPES = ((224, 384), (288, 384), (384, 224))
#: rapidocr's detection pre-processing: pixels / 255, less the mean, over the standard deviation
MEAN, STD = 0.5, 0.5


#: NumPy's names for CPU features that multiply 8-bit numbers natively (x86 VNNI, with AMX; Arm's dot product)
EIGHT_BIT_FEATURES = ("AVX512VNNI", "AVXVNNI", "ASIMDDP")


def wants_int8(choice: str) -> bool:
    """Whether ``[index] ocr_detector`` (auto, int8, float) picks the 8-bit detector on this CPU. Without
    8-bit dot products ONNX Runtime's 8-bit kernels can saturate (its quantiser's ``reduce_range`` note), so
    auto keeps floats there."""
    if choice != "auto":
        return choice == "int8"
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as features  # what NumPy dispatches on
    except ImportError:
        return False
    return any(features.get(name, False) for name in EIGHT_BIT_FEATURES)


_making = threading.Lock()  # the detection-ahead and reading threads load their engines at once


@functools.cache
def int8_detector(source: Path) -> Path:
    """The 8-bit copy of the detector at ``source``: made on first use (3.3 s on the bench host), then
    read from the cache. A ConfigError when it cannot be made, naming the setting that avoids it."""
    import onnxruntime as ort

    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:16]
    target = user_cache.root() / "ocr" / f"{source.stem}.{digest}.ort{ort.__version__}.r{RECIPE}.int8.onnx"
    with _making:
        if target.is_file():
            return target
        log.info("ocr.int8_making", source=str(source), target=str(target))  # once a machine: a few seconds
        try:
            _make(source, target)
        except Exception as exc:  # noqa: BLE001  (the quantiser's errors have no common type)
            raise ConfigError(f"could not make the 8-bit OCR detector from {source} into {target}: "
                              f"{type(exc).__name__}: {exc}; set XDG_CACHE_HOME to a writable folder, or [index] "
                              f"ocr_detector = \"float\" to use the float detector") from exc
    return target


def _make(source: Path, target: Path) -> None:
    import onnxruntime as ort
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    name = ort.InferenceSession(str(source), providers=["CPUExecutionProvider"]).get_inputs()[0].name
    batches = [{name: x} for x in calibration_inputs()]

    class Frames(CalibrationDataReader):
        def __init__(self) -> None:
            self.left = iter(batches)

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self.left, None)

    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".making-") as work:
        prepared, made = Path(work) / "prepared.onnx", Path(work) / "int8.onnx"
        # the detector's dynamic sizes defeat symbolic shape inference; ONNX's own inference suffices
        quant_pre_process(str(source), str(prepared), skip_symbolic_shape=True)
        # one scale a tensor: the model's opset predates per-channel DequantizeLinear
        quantize_static(str(prepared), str(made), Frames(), quant_format=QuantFormat.QDQ, per_channel=False,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
        ort.InferenceSession(str(made), providers=["CPUExecutionProvider"])  # it loads, or nothing is kept
        os.replace(made, target)


def calibration_inputs() -> list[np.ndarray]:
    """``CALIBRATION`` detector inputs (1 x 3 x H x W, float32), the same on every call and machine."""
    rng = np.random.default_rng(43)
    return [_normalised(_frame(rng, *SHAPES[i % len(SHAPES)])) for i in range(CALIBRATION)]


def _frame(rng: np.random.Generator, height: int, width: int) -> np.ndarray:
    """A frame like the index's: a drifting gradient under noise, with lines of text on it."""
    from PIL import Image, ImageDraw, ImageFont

    ys, xs = np.mgrid[0:height, 0:width].astype(np.float32)
    base = np.empty((height, width, 3), np.float32)
    for c in range(3):
        a, b, phase = rng.uniform(-0.6, 0.6, 2).tolist() + [float(rng.uniform(0, 255))]
        base[..., c] = phase + a * xs + b * ys
    base += rng.normal(0, float(rng.uniform(2, 14)), base.shape)
    image = Image.fromarray(np.clip(base % 256, 0, 255).astype(np.uint8))
    draw = ImageDraw.Draw(image, "RGBA")
    words = ("slide", "glacier", "moraine", "frame", "00:01:23", "LIVE", "news", "weather", "traffic",
             "Chapter", "3.2", "results", "ice", "ages", "sediment", "the", "and", "on", "2026")
    for _ in range(int(rng.integers(2, 7))):
        size = int(rng.integers(7, 40))
        text = " ".join(str(w) for w in rng.choice(words, int(rng.integers(1, 7))))
        x, y = int(rng.integers(0, max(1, width - 40))), int(rng.integers(0, max(1, height - size)))
        font = ImageFont.load_default(size)
        colour = tuple(int(v) for v in rng.integers(0, 256, 3))
        if rng.random() < 0.5:  # a caption's or ticker's see-through box behind the text
            box = draw.textbbox((x, y), text, font=font)
            shade = tuple(int(v) for v in rng.integers(0, 80, 3)) + (int(rng.integers(90, 230)),)
            draw.rectangle((box[0] - 6, box[1] - 4, box[2] + 6, box[3] + 4), fill=shade)
        draw.text((x, y), text, fill=colour, font=font)
    return np.asarray(image)


def _normalised(pixels: np.ndarray) -> np.ndarray:
    chw = ((pixels.astype(np.float32) / 255.0 - MEAN) / STD).transpose(2, 0, 1)
    return np.ascontiguousarray(chw[None])
