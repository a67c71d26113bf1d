"""On-screen text: rapidocr reads a rendered sign offline; frames that match the last one read are not
read again, while a changed sign (a small area changed a lot) is; chunk vectors weigh the text."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont
from pydantic import ValidationError

from playlisteval.config import IndexSettings
from playlisteval.errors import ConfigError
from playlisteval.index import ocr as ocr_module
from playlisteval.index.embedders import ChunkInput, HashingEmbedder, embed_chunks, recipe
from playlisteval.index.ocr import FrameTextReader, RapidOcr, get_ocr, share_cores
from playlisteval.world.synth.make import FONT


def _card(sign: str, noise: int = 0, seed: int = 0) -> Image.Image:
    image = Image.new("RGB", (640, 360), (20, 32, 90))
    draw = ImageDraw.Draw(image)
    draw.rectangle((240, 14, 400, 74), fill=(0, 0, 0))
    draw.text((250, 20), sign, font=ImageFont.truetype(str(FONT), 40), fill=(255, 255, 255))
    draw.ellipse((60, 150, 200, 290), fill=(229, 57, 53))
    if noise:
        rng = np.random.default_rng(seed)
        pixels = np.asarray(image, dtype=np.int16) + rng.integers(-noise, noise + 1, (360, 640, 3))
        image = Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8))
    return image


class Counting:
    name = "counting"

    def __init__(self) -> None:
        self.calls = 0

    def read(self, image: Image.Image) -> list[str]:
        self.calls += 1
        return [f"read {self.calls}"]


def test_rapidocr_reads_a_sign_offline() -> None:
    engine = get_ocr(IndexSettings())
    assert engine is not None and engine.name == "rapidocr"
    assert "KOMATU" in engine.read(_card("KOMATU"))


def test_unchanged_frames_reuse_the_last_reading() -> None:
    engine = Counting()
    reader = FrameTextReader(engine, max_side=640, skip_share=0.002, skip_level=24)
    same = reader.chunk_text([_card("KOMATU"), _card("KOMATU", noise=6, seed=1), _card("KOMATU", noise=6, seed=2)])
    assert engine.calls == 1 and same == "read 1" and reader.stats.reused == 2
    # another sign on the same backdrop changes little on average but a lot where the text is
    assert reader.chunk_text([_card("PIRESA"), _card("PIRESA")]) == "read 2"
    assert (reader.stats.read, reader.stats.reused) == (2, 3)


def test_chunk_text_keeps_distinct_lines_in_order() -> None:
    class Script:
        name = "script"
        lines = iter([["A1", "B2"], ["B2", "C3"]])

        def read(self, image: Image.Image) -> list[str]:
            return next(self.lines)

    reader = FrameTextReader(Script(), max_side=320, skip_share=0.002, skip_level=24)
    assert reader.chunk_text([_card("ONE"), _card("TWO")]) == "A1\nB2\nC3"


def test_ocr_setting() -> None:
    assert get_ocr(IndexSettings(ocr="none")) is None
    with pytest.raises(ValidationError, match="rapidocr"):  # the config refuses it when it loads …
        IndexSettings(ocr="magic")
    with pytest.raises(ConfigError, match="unknown OCR"):  # … and so does the factory, if built by hand
        get_ocr(IndexSettings.model_construct(ocr="magic"))


def test_on_screen_lines_count_as_much_as_the_narration() -> None:
    e = HashingEmbedder(4096)
    narration = "rivers carry sediment to the sea and build deltas over many centuries of floods"
    chunks = [ChunkInput(narration, ["KOMATU"]), ChunkInput(narration, ["PIRESA"]), ChunkInput("", []),
              ChunkInput("", ["ZELINA", "GUNITI"])]
    vectors = embed_chunks(e, chunks, ocr_weight=1.0)
    assert np.allclose(np.linalg.norm(vectors, axis=1), [1, 1, 0, 1], atol=1e-5)
    query = e.embed_texts(["KOMATU"])[0]
    # the sign alone is as close to its chunk as the whole narration is: 1/sqrt(2) each
    assert vectors[0] @ query == pytest.approx(2 ** -0.5, abs=0.05) and vectors[1] @ query < 0.1
    assert vectors[3] @ e.embed_texts(["GUNITI"])[0] > 0.5
    assert recipe(e, 1.0) != recipe(e, 0.5)  # a changed weight re-embeds (the hash covers the recipe)


def test_a_video_read_alone_gets_the_cores_its_siblings_would_have(monkeypatch: pytest.MonkeyPatch) -> None:
    """[index] ocr_threads = 0: the cores shared among the videos read at once; engines pooled per thread
    count, each loaded once (issue 26: one 720p lecture left a core idle while OCR ran on the other)."""
    made: list[int] = []

    class Spy(RapidOcr):
        def _make(self, RapidOCR: Any, threads: int = 1) -> Any:  # noqa: N803
            made.append(threads)
            return super()._make(RapidOCR, threads)

    ocr = Spy()
    monkeypatch.setattr(ocr_module, "get_ocr", lambda settings: ocr)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    share_cores(IndexSettings(), 1)
    assert ocr.threads == 2 and "KOMATU" in ocr.read(_card("KOMATU"))
    share_cores(IndexSettings(), 2)
    assert ocr.threads == 1 and "KOMATU" in ocr.read(_card("KOMATU"))
    share_cores(IndexSettings(ocr_threads=3), 2)
    assert ocr.threads == 3
    ocr.set_threads(2)
    assert "KOMATU" in ocr.read(_card("KOMATU"))
    assert made == [2, 1]  # the two-thread engine was idle and read again: nothing loaded twice


def test_ocr_sessions_sleep_between_calls_and_read_the_same_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """rapidocr's own ONNX sessions spin while idle, burning the core the frame decoder needs (issue 26);
    the engines get sessions of the same bundled models with spinning off, and read the same lines."""
    import onnxruntime as ort

    from playlisteval.index import ocr_sessions

    card = _card("KOMATU")
    engine = RapidOcr()._load(2)
    for part in (engine.cfg.Det, engine.cfg.Rec):
        session = part.session
        assert isinstance(session, ort.InferenceSession)
        options = session.get_session_options()
        assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"
        assert options.intra_op_num_threads == 2
    quiet = engine(card.convert("RGB"))
    monkeypatch.setattr(ocr_sessions, "use_quiet_sessions", lambda engine, threads, int8=False, int8_rec=False: False)
    plain = RapidOcr()._load(2)
    assert plain.cfg.Det.get("session") is None  # rapidocr's own sessions, made on its first call
    default = plain(card.convert("RGB"))
    assert "KOMATU" in quiet.txts and quiet.txts == default.txts and quiet.scores == default.scores


def test_an_engine_without_the_session_hook_keeps_its_own_sessions() -> None:
    """Another rapidocr (no model tables, no config to hand a session to): rapidocr's sessions, no error."""
    from types import SimpleNamespace

    from playlisteval.index.ocr_sessions import use_quiet_sessions

    assert use_quiet_sessions(SimpleNamespace(), 1) is False


def test_rapidocr_is_imported_with_its_model_table_read_once() -> None:
    """issue 43: rapidocr's import read its model table into OmegaConf twice; the second read is the first's
    object now, the tables agree with a fresh read, and OmegaConf is as it was after."""
    import subprocess
    import sys

    code = (
        "from omegaconf import OmegaConf\n"
        "before = OmegaConf.__dict__['load']\n"
        "reads = []\n"
        "real = OmegaConf.load\n"
        "def counting(f, *a, **k):\n"
        "    reads.append(str(f)); return real(f, *a, **k)\n"
        "OmegaConf.load = staticmethod(counting)\n"
        "from playlisteval.index.ocr_sessions import rapidocr_class\n"
        "cls = rapidocr_class()\n"
        "from rapidocr.inference_engine.base import InferSession, MODEL_URL_PATH\n"
        "from rapidocr.utils import model_resolver\n"
        "assert InferSession.model_info is model_resolver._MODEL_CONFIG\n"
        "assert InferSession.model_info == real(MODEL_URL_PATH)\n"
        "assert sum(r.endswith('default_models.yaml') for r in reads) == 1, reads\n"
        "assert OmegaConf.__dict__['load'].__func__ is counting and cls.__name__ == 'RapidOCR'\n"
        "assert rapidocr_class() is cls\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
