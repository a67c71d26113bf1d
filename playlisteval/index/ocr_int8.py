"""8-bit copies of rapidocr's text detector and recogniser, made once per machine (issue 43: `index` at the
paper's scale).

Detection of every sampled frame was the largest single cost of `index` on camera-like video: ~63 ms a
frame at 384 px on one core of the bench host, 2.7 of ~9.7 CPU-s for five minutes of 720p30 at 2.7 Mbit/s.
ONNX Runtime runs the same network quantised to 8 bits (QDQ: 8-bit activations, 8-bit weights, one scale a
tensor) in ~13 ms there: CPUs with VNNI or AMX multiply 8-bit numbers several times faster than floats.
With detection in 8 bits, recognition of the changed lines became the largest: 94 lines of the same video
took 3.6 CPU-s in floats on an AMD EPYC host (its convolutions 69 % of the network's time), 2.1 in 8 bits.

Each copy is made from the model the installed rapidocr ships, with ONNX Runtime's own quantiser
(``quantize_static``, min/max calibration) on synthetic inputs drawn here from a fixed seed: for the
detector ``CALIBRATION`` frames (gradients, noise, and text lines of many sizes and colours, some on
see-through boxes, at the detection sizes the index uses); for the recogniser ``LINES`` single text lines
as its 48-px-high input. So a copy is the same on every machine with the same rapidocr and ONNX Runtime,
whatever collection it first indexed. It lives in the user's cache (``$XDG_CACHE_HOME`` or ``~/.cache``,
then ``playlisteval/ocr``), named by the source model's SHA-256, ONNX Runtime's version and the recipe; it
is written to a temporary name and renamed, so processes that make it at once cannot leave half a file.

What they lose. The detector: the probability map moves by up to ~0.8 at single pixels, so a line's box can
end a few pixels sooner or later; on the bench's camera video 2 of the 120 lines read on 40 frames differ,
both at the frame's edge where a ticker is cut (one letter more, one letter less). The recogniser (only its
convolutions in 8 bits, one scale per output channel; attention and the output head stay in floats): on 300
lines of DejaVu fonts it never saw, over noisy gradients, the character error rate went from 2.84 % to
3.25 % (205 lines exact either way); on the camera video's 94 lines 6 differ, three read better
("00:003:08.333" → "00:00:08.333", "oreak" → "break"), two worse ("traffic on" → "trafficon", "LIVE" →
"LiVE") and one lost a trailing space. An earlier recipe that quantised every operator
with one scale a tensor misread a dozen lines ("LiIVE", "nes") and was dropped. ``[index] ocr_detector`` and
``ocr_recognizer`` pick each: "auto" (8-bit where the CPU has 8-bit dot products), "int8" or "float".
"""

from __future__ import annotations

import functools
import hashlib
import os
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np

from playlisteval.config import user_cache  # $XDG_CACHE_HOME/playlisteval
from playlisteval.errors import ConfigError
from playlisteval.logs import get_logger

log = get_logger(__name__)

#: bump when the calibration or the quantiser's options change: the file name changes with it
RECIPE = 1
REC_RECIPE = 1  # the recogniser's
#: synthetic calibration frames; more moves the scales little (min/max over text, edges and flat areas)
CALIBRATION = 24
#: (height, width) of the calibration inputs: 16:9 and 4:3 frames at the default detection side, padded to
#: multiples of 32 as rapidocr pads them, and a portrait one
SHAPES = ((224, 384), (288, 384), (384, 224))
#: rapidocr's detection pre-processing: pixels / 255, less the mean, over the standard deviation
MEAN, STD = 0.5, 0.5
#: rapidocr's recogniser takes lines scaled to REC_HEIGHT px tall, at least REC_MIN_WIDTH wide (ocr.py batches
#: by that width); LINES synthetic ones calibrate its 8-bit copy
REC_HEIGHT, REC_MIN_WIDTH, LINES = 48, 320, 32
#: per-channel scales need DequantizeLinear's axis, which came with ONNX opset 13 (the recogniser ships at 11)
PER_CHANNEL_OPSET = 13


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
    return _copy(source, f"r{RECIPE}", "ocr_detector", calibration_inputs, per_channel=False, ops=None)


@functools.cache
def int8_recognizer(source: Path) -> Path:
    """The 8-bit copy of the recogniser at ``source`` (its convolutions, one scale per channel): made on
    first use (~4 s), then read from the cache; a ConfigError as ``int8_detector``'s."""
    return _copy(source, f"rec{REC_RECIPE}", "ocr_recognizer", line_inputs, per_channel=True, ops=["Conv"])


def _copy(source: Path, recipe: str, setting: str, inputs: Callable[[], list[np.ndarray]], *,
          per_channel: bool, ops: list[str] | None) -> Path:
    import onnxruntime as ort

    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:16]
    target = user_cache.root() / "ocr" / f"{source.stem}.{digest}.ort{ort.__version__}.{recipe}.int8.onnx"
    with _making:
        if target.is_file():
            return target
        log.info("ocr.int8_making", source=str(source), target=str(target))  # once a machine: a few seconds
        try:
            _make(source, target, inputs(), per_channel, ops)
        except Exception as exc:  # noqa: BLE001  (the quantiser's errors have no common type)
            raise ConfigError(f"could not make the 8-bit OCR model from {source} into {target}: "
                              f"{type(exc).__name__}: {exc}; set XDG_CACHE_HOME to a writable folder, or [index] "
                              f"{setting} = \"float\" to use the float model") from exc
    return target


def _make(source: Path, target: Path, inputs: list[np.ndarray], per_channel: bool, ops: list[str] | None) -> None:
    import onnxruntime as ort
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    name = ort.InferenceSession(str(source), providers=["CPUExecutionProvider"]).get_inputs()[0].name
    batches = [{name: x} for x in inputs]

    class Samples(CalibrationDataReader):
        def __init__(self) -> None:
            self.left = iter(batches)

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self.left, None)

    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".making-") as work:
        prepared, made = Path(work) / "prepared.onnx", Path(work) / "int8.onnx"
        # the models' dynamic sizes defeat symbolic shape inference; ONNX's own inference suffices
        quant_pre_process(str(source), str(prepared), skip_symbolic_shape=True)
        if per_channel:
            _raise_opset(prepared, PER_CHANNEL_OPSET)
        quantize_static(str(prepared), str(made), Samples(), quant_format=QuantFormat.QDQ, per_channel=per_channel,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8, op_types_to_quantize=ops)
        ort.InferenceSession(str(made), providers=["CPUExecutionProvider"])  # it loads, or nothing is kept
        os.replace(made, target)


def _raise_opset(path: Path, opset: int) -> None:
    import onnx
    from onnx import version_converter

    model = onnx.load(str(path))
    if next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), opset) < opset:
        onnx.save(version_converter.convert_version(model, opset), str(path))


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


def line_inputs() -> list[np.ndarray]:
    """``LINES`` recogniser inputs (1 x 3 x 48 x W, float32): single text lines over noisy gradients, scaled
    and padded as rapidocr feeds its recogniser; the same on every call and machine."""
    from PIL import Image, ImageDraw, ImageFont

    rng = np.random.default_rng(4343)
    words = ("slide", "glacier", "moraine", "frame", "00:01:23", "LIVE", "news", "weather", "traffic",
             "Chapter", "3.2", "results", "ice", "ages", "sediment", "the", "and", "on", "2026", "Quarterly")
    out = []
    for _ in range(LINES):
        font = ImageFont.load_default(int(rng.integers(14, 40)))
        text = " ".join(str(w) for w in rng.choice(words, int(rng.integers(1, 8))))
        _left, top, right, bottom = (int(v) for v in font.getbbox(text))
        width, height = right + 12, bottom - top + 10
        ys, xs = np.mgrid[0:height, 0:width].astype(np.float32)
        base = np.empty((height, width, 3), np.float32)
        for c in range(3):
            a, b = rng.uniform(-2, 2, 2).tolist()
            base[..., c] = float(rng.uniform(0, 255)) + a * xs + b * ys
        base += rng.normal(0, float(rng.uniform(2, 14)), base.shape)
        image = Image.fromarray(np.clip(base % 256, 0, 255).astype(np.uint8))
        colour = tuple(int(v) for v in rng.integers(0, 256, 3))
        ImageDraw.Draw(image).text((6, 5 - top), text, fill=colour, font=font)
        scaled_width = int(np.ceil(REC_HEIGHT * width / height))
        scaled = np.asarray(image.resize((scaled_width, REC_HEIGHT)), np.float32) / 255.0
        padded = np.zeros((REC_HEIGHT, max(REC_MIN_WIDTH, scaled_width), 3), np.float32)
        padded[:, :scaled_width] = (scaled - MEAN) / STD
        out.append(np.ascontiguousarray(padded.transpose(2, 0, 1)[None]))
    return out
