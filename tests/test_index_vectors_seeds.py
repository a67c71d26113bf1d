"""Vectors (A5, A8), embedders, segment bounds (A6) and the seed rules (P1, P2) on hand-made segments."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from playlisteval.config import IndexSettings
from playlisteval.errors import ConfigError
from playlisteval.index.embedders import HashingEmbedder, get_embedder
from playlisteval.index.seeds import build_seeds
from playlisteval.index.segments import segment_bounds
from playlisteval.index.vectors import VectorIndex, content_hash, decode, encode, exact_search
from playlisteval.store.engine import transaction
from playlisteval.store.tables import Domain, Playlist, Seed, Segment, Video
from tests.index_helpers import settings_for, store


def test_blob_roundtrip_and_content_hash() -> None:
    v = np.array([0.25, -1.5, 3.0], dtype=np.float32)
    assert encode(v) == b"\x00\x00\x80>\x00\x00\xc0\xbf\x00\x00@@"  # little-endian float32
    assert np.array_equal(decode(encode(v), 3), v)
    with pytest.raises(ValueError):
        decode(encode(v), 4)
    assert content_hash("text", "minilm") != content_hash("text", "hash") != content_hash("text2", "hash")


def test_exact_search_is_ordered_and_deterministic() -> None:
    m = np.array([[1, 0], [0, 1], [1, 0], [0.6, 0.8]], dtype=np.float32)
    idx, scores = exact_search(m, np.array([1, 0], dtype=np.float32), 3)
    assert idx.tolist() == [0, 2, 3] and scores.tolist() == pytest.approx([1, 1, 0.6])
    assert exact_search(m, np.array([1, 0], dtype=np.float32), 10)[0].shape == (4,)


def test_hnsw_agrees_with_exact_search() -> None:
    rng = np.random.default_rng(7)
    m = rng.normal(size=(3000, 32)).astype(np.float32)
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    exact, hnsw = VectorIndex(m, exact_max=5000), VectorIndex(m, exact_max=100)
    assert exact.exact and not hnsw.exact
    recall = []
    for q in m[:50] + 0.1 * rng.normal(size=(50, 32)).astype(np.float32):
        q = q / np.linalg.norm(q)
        a, sa = exact.search(q, 10)
        b, sb = hnsw.search(q, 10)
        recall.append(len(set(a) & set(b)) / 10)
        assert sb[0] == pytest.approx(sa[0], abs=1e-4)
    assert np.mean(recall) >= 0.95


def test_hashing_embedder_and_truncation() -> None:
    e = HashingEmbedder()
    a, b = e.embed_texts(["roman roads and legions", "roman roads and legions"]), e.embed_texts([""])
    assert np.array_equal(a[0], a[1]) and np.linalg.norm(a[0]) == pytest.approx(1)
    assert not b.any()
    small = get_embedder("hash:64")
    assert (small.name, small.dim) == ("hash:64", 64) and get_embedder("hash", 64) is small
    assert np.linalg.norm(small.embed_texts(["x y z"])[0]) == pytest.approx(1)
    with pytest.raises(ConfigError, match="unknown embedder"):
        get_embedder("nope")


def test_minilm_loads_offline_and_is_semantic() -> None:
    e = get_embedder("minilm")
    v = e.embed_texts(["A cat sits on the mat.", "A kitten is lying on a rug.", "The stock market crashed."])
    assert v.shape == (3, 384) and v.dtype == np.float32
    assert np.linalg.norm(v, axis=1) == pytest.approx([1, 1, 1], abs=1e-5)
    assert v[0] @ v[1] > v[0] @ v[2] + 0.2


@pytest.mark.parametrize(
    ("n_chunks", "expected"),
    [
        (10, [(0, 9)]),  # 5 min: shorter than the minimum → one segment
        (40, [(0, 39)]),  # 20 min: one segment
        (60, [(0, 59)]),  # exactly 30 min
        (120, [(0, 59), (60, 119)]),  # 60 min: two of 30
        (130, [(0, 42), (43, 86), (87, 129)]),  # 65 min: three of ~21.7
    ],
)
def test_segment_bounds(n_chunks: int, expected: list[tuple[int, int]]) -> None:
    spans = [(i * 30.0, i * 30.0 + 30) for i in range(n_chunks)]
    bounds = segment_bounds(spans, 600, 1800)
    assert bounds == expected
    for first, last in bounds:
        length = spans[last][1] - spans[first][0]
        assert length <= 1800 and (length >= 600 or len(bounds) == 1)


def _unit(**parts: float) -> np.ndarray:
    v = np.zeros(8, dtype=np.float32)
    for k, x in parts.items():
        v[int(k[1:])] = x
    return v / np.linalg.norm(v)


def _seed_world(engine: Engine) -> dict[str, int]:
    """Domain D1: playlist P1 (videos V1 with 3 segments, V2, duplicate V3), playlist P2 (V4); domain D2 (V5)."""
    r = math.sqrt(1 - 0.95**2)
    layout = {
        # name: (domain, playlist, video, status, start, end, vector)
        "s0": ("D1", "P1", "V1", "indexed", 0, 600, _unit(e0=1)),
        "s1": ("D1", "P1", "V1", "indexed", 600, 1200, _unit(e0=0.6, e1=0.8)),  # s0·s1 = .6, adjacent
        "s2": ("D1", "P1", "V1", "indexed", 1200, 1800, _unit(e0=0.6, e2=0.8)),  # s0·s2 = .6, 600 s apart
        "t0": ("D1", "P1", "V2", "indexed", 0, 600, _unit(e0=0.95, e4=r)),  # s0·t0 = .95: too close
        "u0": ("D1", "P1", "V3", "duplicate", 0, 600, _unit(e0=0.6, e5=0.8)),
        "w0": ("D1", "P2", "V4", "indexed", 0, 600, _unit(e0=0.7, e6=math.sqrt(0.51))),
        "x0": ("D2", "P9", "V5", "indexed", 0, 600, _unit(e0=1)),
    }
    ids: dict[str, int] = {}
    with transaction(engine) as s:
        domains: dict[str, Domain] = {}
        playlists: dict[str, Playlist] = {}
        videos: dict[str, Video] = {}
        for name, (d, p, v, status, start, end, vec) in layout.items():
            if d not in domains:
                domains[d] = Domain(name=d)
                s.add(domains[d])
                s.flush()
            if p not in playlists:
                playlists[p] = Playlist(domain_id=domains[d].id, name=p)
                s.add(playlists[p])
                s.flush()
            if v not in videos:
                videos[v] = Video(playlist_id=playlists[p].id, path=f"/{v}.mp4", title=v, status=status,
                                  position=int(v[1:]))
                s.add(videos[v])
                s.flush()
            seg = Segment(video_id=videos[v].id, idx=int(start // 600), embedder="e", start=start, end=end,
                          first_chunk=0, last_chunk=0, vector=encode(vec))
            s.add(seg)
            s.flush()
            ids[name] = seg.id  # type: ignore[assignment]
    return ids


def _pairs(engine: Engine, ids: dict[str, int]) -> set[tuple[str, str]]:
    names = {v: k for k, v in ids.items()}
    with Session(engine) as s:
        return {(names[a], names[b]) for a, b in s.exec(select(Seed.segment1_id, Seed.segment2_id)).all()}


def test_seed_rules_and_incremental_insert(tmp_path: Path) -> None:
    engine = store(settings_for(tmp_path))
    ids = _seed_world(engine)
    cfg = IndexSettings()  # [0.40, 0.90], 240 s apart, same playlist
    report = build_seeds(engine, cfg, "e")
    # s0·s2 (.6, 600 s apart), s1·t0 and s2·t0 (.57); not s0·s1 (adjacent), s1·s2 (.36), s0·t0 (.95),
    # nothing with the duplicate u0, the other playlist's w0 or the other domain's x0
    assert _pairs(engine, ids) == {("s0", "s2"), ("s1", "t0"), ("s2", "t0")}
    assert (report.candidates, report.inserted) == (3, 3)
    with Session(engine) as s:
        sims = {(a, b): sim for a, b, sim in s.exec(select(Seed.segment1_id, Seed.segment2_id, Seed.similarity))}
    assert sims[(ids["s0"], ids["s2"])] == pytest.approx(0.6, abs=1e-6)
    assert build_seeds(engine, cfg, "e").inserted == 0  # incremental: nothing new
    # the gap rule is "at least": s0 and s2 are 600 s apart
    assert build_seeds(engine, IndexSettings(seed_min_gap_s=600), "e").candidates == 3
    assert build_seeds(engine, IndexSettings(seed_min_gap_s=601), "e").candidates == 2
    # the whole domain instead of one playlist: w0 pairs with s0 (.7), s1 (.42), s2 (.42), t0 (.665)
    wide = IndexSettings(seeds_same_playlist=False)
    assert build_seeds(engine, wide, "e").inserted == 4
    assert {p for p in _pairs(engine, ids) if "w0" in p} == {("s0", "w0"), ("s1", "w0"), ("s2", "w0"), ("t0", "w0")}
