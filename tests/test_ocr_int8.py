"""The 8-bit text detector (issue 43; index/ocr_int8.py): made once into the user's cache from the detector
rapidocr ships, read back after, reading what the float detector reads on camera-like frames, and a copy
that cannot be made is an error naming the setting, never a silent fall back."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from playlisteval.config import IndexSettings
from playlisteval.errors import ConfigError
from playlisteval.index import ocr, ocr_int8
from playlisteval.index.ocr import FrameTextReader, RapidOcr
from tests.test_ocr_boxes import frame


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    ocr_int8.int8_detector.cache_clear()
    ocr_int8.int8_recognizer.cache_clear()
    yield tmp_path / "cache" / "playlisteval" / "ocr"
    ocr_int8.int8_detector.cache_clear()
    ocr_int8.int8_recognizer.cache_clear()


def shipped_detector(kind: str = "det") -> Path:
    import rapidocr

    found = sorted((Path(rapidocr.__file__).parent / "models").glob(f"*_{kind}_*.onnx"))
    assert found, f"rapidocr ships its {kind} model inside the wheel"
    return found[0]


def test_auto_follows_the_cpus_eight_bit_instructions(monkeypatch: pytest.MonkeyPatch) -> None:
    from numpy._core import _multiarray_umath

    assert ocr_int8.wants_int8("int8") and not ocr_int8.wants_int8("float")
    features = dict(_multiarray_umath.__cpu_features__)
    monkeypatch.setattr(_multiarray_umath, "__cpu_features__", {**features, "AVX512VNNI": False,
                                                                "AVXVNNI": False, "ASIMDDP": False})
    assert not ocr_int8.wants_int8("auto")
    monkeypatch.setattr(_multiarray_umath, "__cpu_features__", {**features, "ASIMDDP": True})
    assert ocr_int8.wants_int8("auto")


def test_the_settings_take_three_values() -> None:
    assert IndexSettings().ocr_detector == IndexSettings().ocr_recognizer == "auto"
    with pytest.raises(ValueError, match="ocr_detector"):
        IndexSettings(ocr_detector="fp16")
    with pytest.raises(ValueError, match="ocr_recognizer"):
        IndexSettings(ocr_recognizer="fp16")


def test_calibration_is_the_same_on_every_call() -> None:
    first, again = ocr_int8.calibration_inputs(), ocr_int8.calibration_inputs()
    assert len(first) == ocr_int8.CALIBRATION
    assert all(a.shape == b.shape and np.array_equal(a, b) for a, b in zip(first, again, strict=True))
    assert {x.shape[2:] for x in first} == set(ocr_int8.SHAPES)
    assert all(x.dtype == np.float32 and x.min() >= -1.0 and x.max() <= 1.0 for x in first)


def test_the_recognisers_calibration_lines_are_its_inputs_and_the_same_on_every_call() -> None:
    first, again = ocr_int8.line_inputs(), ocr_int8.line_inputs()
    assert len(first) == ocr_int8.LINES
    assert all(a.shape == b.shape and np.array_equal(a, b) for a, b in zip(first, again, strict=True))
    assert all(x.shape[:3] == (1, 3, ocr_int8.REC_HEIGHT) and x.shape[3] >= ocr_int8.REC_MIN_WIDTH for x in first)
    assert len({x.shape[3] for x in first}) > 5  # lines of many lengths
    assert all(x.dtype == np.float32 and x.min() >= -1.0 and x.max() <= 1.0 for x in first)


def test_made_once_then_read_from_the_cache(cache: Path) -> None:
    made = ocr_int8.int8_detector(shipped_detector())
    assert made.parent == cache and made.is_file()
    assert [p.name for p in cache.iterdir()] == [made.name]  # no temporary file left beside it
    stamp = made.stat().st_mtime_ns
    ocr_int8.int8_detector.cache_clear()  # a new process: the file is found, not made again
    assert ocr_int8.int8_detector(shipped_detector()) == made and made.stat().st_mtime_ns == stamp
    assert made.stat().st_size < shipped_detector().stat().st_size / 2  # 8-bit weights


def test_it_reads_what_the_float_models_read(cache: Path) -> None:
    readers = [FrameTextReader(RapidOcr(int8=int8, int8_rec=int8), max_side=640, skip_share=0.002, skip_level=24,
                               detect_side=384) for int8 in (False, True)]
    for seed, (clock, slide) in enumerate([("00:01:05", "Slide 3: glacier moraine"),
                                           ("00:01:06", "Slide 3: glacier moraine"),
                                           ("07:45:12", "Ice ages left layers of sediment")]):
        image = frame(clock, slide, seed)
        assert readers[1].lines(image) == readers[0].lines(image) == [clock, slide]
    assert any(p.suffix == ".onnx" for p in cache.iterdir())
    for part in ("Det", "Rec"):
        sessions = [getattr(reader.engine._load(1).cfg, part).session for reader in readers]  # type: ignore[attr-defined]
        assert [str(session._model_path).endswith(".int8.onnx") for session in sessions] == [False, True]
    made = sorted(p.name for p in cache.iterdir())
    assert len(made) == 2 and any(".rec1." in name for name in made)  # the detector's and the recogniser's


def test_the_recogniser_copy_quantises_its_convolutions_per_channel(cache: Path) -> None:
    import onnx

    model = onnx.load(str(ocr_int8.int8_recognizer(shipped_detector("rec"))))
    scales = {i.name: i for i in model.graph.initializer if i.name.endswith("_scale")}
    weights = [n for n in model.graph.node if n.op_type == "DequantizeLinear" and n.input[0].endswith("_quantized")]
    assert weights and all(len(scales[n.input[1]].dims) == 1 for n in weights)  # one scale per output channel
    assert {n.op_type for n in model.graph.node} >= {"Conv", "MatMul", "QuantizeLinear"}


def test_a_copy_that_cannot_be_made_is_an_error_naming_the_setting(cache: Path, tmp_path: Path) -> None:
    broken = tmp_path / "det.onnx"
    broken.write_bytes(b"not a model")
    with pytest.raises(ConfigError, match=r"ocr_detector = \"float\""):
        ocr_int8.int8_detector(broken)
    assert not cache.exists() or not any(cache.iterdir())  # nothing half-made left


def test_the_engine_follows_the_setting() -> None:
    engines = [ocr.get_ocr(IndexSettings(ocr_detector=choice, ocr_recognizer=other))
               for choice, other in (("int8", "float"), ("float", "int8"))]
    assert [(e.int8, e.int8_rec) for e in engines if isinstance(e, RapidOcr)] == [(True, False), (False, True)]


def test_a_cache_that_cannot_be_written_is_an_error_naming_the_way_out(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the cache folder would go")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    ocr_int8.int8_detector.cache_clear()
    try:
        with pytest.raises(ConfigError, match="XDG_CACHE_HOME"):
            ocr_int8.int8_detector(shipped_detector())
    finally:
        ocr_int8.int8_detector.cache_clear()
