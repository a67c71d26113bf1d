"""Qwen3-VL-Embedding's loading and pooling code on a tiny random Qwen3-VL built here (no download):
frames + transcript in one vector, at most 16 frames, per-frame pixel bounds, last-token pooling
that padding does not change, Matryoshka truncation, and the index path that decodes frames for it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from sqlmodel import Session, select

from playlisteval.actors.indexing import index_collection
from playlisteval.config import IndexSettings
from playlisteval.errors import ConfigError
from playlisteval.index.collection import add_paths
from playlisteval.index.embedders import ChunkInput, get_embedder, needs_frames
from playlisteval.index.pipeline import search
from playlisteval.index.qwen_vl import QwenVLEmbedder, frame_size, pick_frames
from playlisteval.index.vectors import decode
from playlisteval.store.tables import ChunkVector
from tests.index_helpers import make_video, settings_for, store, tiny_qwen_vl, write_srt

NAME = "qwen3-vl-embedding"


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_qwen_vl(tmp_path_factory.mktemp("tiny-qwen3-vl"))


def _frames(n: int, shade: int = 0) -> list[Image.Image]:
    return [Image.new("RGB", (320, 180), ((shade + 17 * i) % 256, 40, 200 - i)) for i in range(n)]


def test_pixel_bounds_and_frame_cap() -> None:
    for w, h in [(1920, 1080), (640, 360), (64, 48), (3000, 200)]:
        fw, fh = frame_size(w, h, 64 * 64, 960 * 720)
        assert fw % 32 == 0 and fh % 32 == 0 and 64 * 64 <= fw * fh <= 960 * 720
    assert frame_size(1920, 1080, 4096, 960 * 720) == (1088, 608)  # aspect kept within a patch
    assert len(pick_frames(_frames(20), 16)) == 16 and len(pick_frames(_frames(5), 16)) == 6  # frames pair up
    frames = _frames(20)
    assert pick_frames(frames, 16)[0] is frames[0] and pick_frames(frames, 16)[-1] is frames[-1]


def test_loading_needs_a_local_model(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="vl_model"):
        QwenVLEmbedder("")
    with pytest.raises(ConfigError, match="no config.json"):
        QwenVLEmbedder(str(tmp_path))


def test_vectors_from_frames_and_transcript(model_dir: Path) -> None:
    e = get_embedder(NAME, 0, IndexSettings(vl_model=str(model_dir), vl_max_pixels=128 * 128))
    assert e.name == NAME and e.dim == 32 and needs_frames(e)
    q = e.embed_texts(["roman legions marched", "rivers carry sediment"])
    assert q.shape == (2, 32) and np.allclose(np.linalg.norm(q, axis=1), 1, atol=1e-5)
    assert not np.allclose(q[0], q[1])
    chunks = [ChunkInput("roman legions marched", [], _frames(20)), ChunkInput("", [], []),
              ChunkInput("rivers", [], _frames(4, shade=90)), ChunkInput("glaciers", [], [])]
    v = e.embed_chunks(chunks)  # type: ignore[attr-defined]
    assert np.allclose(np.linalg.norm(v, axis=1), [1, 0, 1, 1], atol=1e-5)
    # left padding: a chunk's vector does not depend on what else is in its batch
    alone = e.embed_chunks([chunks[2]])  # type: ignore[attr-defined]
    assert np.allclose(alone[0], v[2], atol=1e-5)
    # the frames are part of the vector
    other = e.embed_chunks([ChunkInput("rivers", [], _frames(4, shade=200))])  # type: ignore[attr-defined]
    assert not np.allclose(other[0], v[2], atol=1e-4)


def test_matryoshka_truncation(model_dir: Path) -> None:
    settings = IndexSettings(vl_model=str(model_dir), vl_max_pixels=128 * 128)
    full = get_embedder(NAME, 0, settings)
    small = get_embedder(f"{NAME}:8", 0, settings)
    assert (small.name, small.dim) == (f"{NAME}:8", 8) and needs_frames(small)
    chunk = [ChunkInput("roman legions", [], _frames(6))]
    a, b = full.embed_chunks(chunk)[0], small.embed_chunks(chunk)[0]  # type: ignore[attr-defined]
    assert np.allclose(b, a[:8] / np.linalg.norm(a[:8]), atol=1e-5)


def test_index_reads_frames_for_the_vl_embedder(tmp_path: Path, model_dir: Path) -> None:
    # a random model puts every vector close together: no near-duplicate check here
    settings = settings_for(tmp_path, embedder=NAME, vl_model=str(model_dir), vl_max_pixels=128 * 128,
                            frames_per_chunk=2, vl_max_frames=4, near_duplicate=1.01)  # [A5] vl_max_frames rules
    engine = store(settings)
    folder = tmp_path / "Lectures"
    make_video(folder / "one.mp4", 40, size="320x180")
    write_srt(folder / "one.srt", [(1, 4, "roman legions marched")])
    make_video(folder / "two.mp4", 20, audio=None, size="320x180")  # no sound: the frames still embed
    add_paths(engine, "History", [folder])
    report = index_collection(settings, engine)
    assert report.videos_indexed == 2 and report.skipped == [] and report.frames == (2 + 1) * 4
    with Session(engine) as s:
        rows = s.exec(select(ChunkVector).where(ChunkVector.embedder == NAME)).all()
    assert len(rows) == 3 and all(r.dim == 32 for r in rows)
    assert all(np.linalg.norm(decode(r.vector)) == pytest.approx(1, abs=1e-5) for r in rows)
    hits = search(settings, engine, "roman legions", k=3)
    assert len(hits) == 3 and {Path(h.path).name for h in hits} == {"one.mp4", "two.mp4"}
    assert index_collection(settings, engine).embedded == 0
