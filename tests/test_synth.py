"""synth: tiny real videos (ffmpeg + espeak-ng; H.264 and VP9), WebVTT captions, worlds, the manifest."""

from __future__ import annotations

import csv
import random
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from playlisteval.errors import PlaylistEvalError
from playlisteval.index.captions import read_captions
from playlisteval.index.collection import add_manifest
from playlisteval.world.synth import facts, make, vocab
from playlisteval.world.synth.world import facts_visible_at, load_world, scene_at, scenes_in
from tests.index_helpers import settings_for, store

needs_tools = pytest.mark.skipif(
    not (shutil.which("ffmpeg") and shutil.which("espeak-ng") and make.FONT.is_file()),
    reason="ffmpeg, espeak-ng and DejaVu Sans are needed to render videos",
)


def _probe(path: Path, entries: str) -> str:
    out = subprocess.run(["ffprobe", "-v", "error", "-show_entries", entries, "-of", "csv=p=0", str(path)],
                         capture_output=True, text=True, check=True)
    return out.stdout.strip()


def _pixel(video: Path, t: float, x: int, y: int) -> tuple[int, int, int]:
    raw = subprocess.run(
        ["ffmpeg", "-v", "error", "-ss", f"{t}", "-i", str(video), "-frames:v", "1",
         "-vf", f"crop=2:2:{x}:{y}", "-f", "rawvideo", "-pix_fmt", "rgb24", "-"],
        capture_output=True, check=True).stdout
    return raw[0], raw[1], raw[2]


def _vtt_cues(text: str) -> list[tuple[float, float, str]]:
    def sec(stamp: str) -> float:
        h, m, rest = stamp.split(":")
        s, ms = rest.split(".")
        return int(h) * 3600 + int(m) * 60 + int(s) + int(ms) / 1000

    header, _, body = text.partition("\n\n")
    assert header == "WEBVTT"
    cues = []
    for block in body.strip().split("\n\n"):
        lines = block.splitlines()
        a, b = lines[1].split(" --> ")
        cues.append((sec(a), sec(b), " ".join(lines[2:])))
    return cues


@needs_tools
def test_tiny_collection(tmp_path: Path) -> None:
    start = time.monotonic()
    paths = make.make_collection(tmp_path, domains=1, playlists=1, videos=1, minutes=0.5, seed=3, vp9=0)
    assert time.monotonic() - start < 30
    assert [p.relative_to(tmp_path).as_posix() for p in paths] == [
        "Education/Earth Science Basics/01 - Earth Science Episode 1.mp4"]
    video = paths[0]
    assert abs(float(_probe(video, "format=duration")) - 30.0) < 0.2
    codecs = _probe(video, "stream=codec_name,width,height").splitlines()
    assert codecs[0] == "h264,640,360" and codecs[1].startswith("aac")

    world = load_world(video)
    assert world is not None and world.duration == 30.0 and world.domain == "Education"
    assert world.scenes[0].start == 0 and world.scenes[-1].end == 30.0
    for scene in world.scenes:
        assert not set(facts.visual_words(scene.narration)), "narration must not say what is shown"
        assert scene.topic_words and all(w in scene.narration for w in scene.topic_words)

    cues = _vtt_cues(video.with_suffix(".vtt").read_text())
    # the project's own caption reader reads them back the same
    assert [(c.start, c.end, c.text) for c in read_captions(video.with_suffix(".vtt"))] == cues
    assert " ".join(c[2] for c in cues) == " ".join(s.narration for s in world.scenes)
    for a, b, text in cues:
        owner = scene_at(world, a)
        assert owner is not None and text in owner.narration and b <= owner.end + 1e-6 and a < b

    # the frame really shows the world: backdrop colour in a corner, sign box at the top
    mid = (world.scenes[0].start + world.scenes[0].end) / 2
    want = int(vocab.BACKGROUNDS[world.scenes[0].visual.background], 16)
    got = _pixel(video, mid, 4, 350)
    assert all(abs(g - w) <= 12 for g, w in zip(got, ((want >> 16) & 255, (want >> 8) & 255, want & 255),
                                               strict=True))

    # a second run finds the same world on disk and does not re-encode
    mtime = video.stat().st_mtime_ns
    again = make.make_collection(tmp_path, domains=1, playlists=1, videos=1, minutes=0.5, seed=3, vp9=0)
    assert again == paths and video.stat().st_mtime_ns == mtime


@needs_tools
def test_vp9_video_and_manifest(tmp_path: Path) -> None:
    out = tmp_path / "out"
    paths = make.make_collection(out, domains=2, playlists=1, videos=2, minutes=0.25, seed=5, vp9=1)
    assert [p.suffix for p in paths] == [".mp4", ".mp4", ".mp4", ".webm"]
    webm = paths[-1]
    assert _probe(webm, "stream=codec_name").splitlines() == ["vp9", "opus"]
    assert webm.with_suffix(".vtt").is_file() and load_world(webm) is not None
    rows = list(csv.DictReader((out / "manifest.csv").read_text().splitlines()))
    assert [(r["domain"], r["path"], r["position"]) for r in rows] == [
        ("Education", "Education/Earth Science Basics/01 - Earth Science Episode 1.mp4", "0"),
        ("Education", "Education/Earth Science Basics/02 - Earth Science Episode 2.mp4", "1"),
        ("History", "History/Ancient Rome/01 - Rome Rising Episode 1.mp4", "0"),
        ("History", "History/Ancient Rome/02 - Rome Rising Episode 2.webm", "1"),
    ]
    assert {r["title"] for r in rows} >= {"Earth Science Episode 1", "Rome Rising Episode 2"}
    # `add --manifest` takes it as it is, wherever it is run from
    report = add_manifest(store(settings_for(tmp_path)), out / "manifest.csv")
    assert len(report.added) == 4 and report.skipped == []
    assert report.playlists == ["Education/Earth Science Basics", "History/Ancient Rome"]


def test_missing_tool_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(make.shutil, "which", lambda tool: None if tool == "espeak-ng" else "/usr/bin/x")
    with pytest.raises(PlaylistEvalError, match="espeak-ng"):
        make.make_collection(tmp_path, domains=1, videos=1, minutes=0.5)


def test_plan_world_is_deterministic_and_well_formed() -> None:
    def plan(seed: int):
        return make.plan_world(random.Random(seed), set(), domain="History", playlist="Ancient Rome",
                               topic="Ancient Rome", title="Rome Rising Episode 2", episode=2,
                               duration=300, seed=seed)

    a, b = plan(5), plan(5)
    assert a == b and a != plan(6)
    assert a.scenes[-1].end == 300
    for prev, nxt in zip(a.scenes, a.scenes[1:], strict=False):
        assert prev.end == nxt.start
    assert all(15 <= s.end - s.start <= 30 for s in a.scenes)
    assert len({s.visual.sign for s in a.scenes}) == len(a.scenes)
    assert all(vocab.TOPIC_OF_WORD[w] == "Ancient Rome" for s in a.scenes for w in s.topic_words)


def test_scene_lookups() -> None:
    w = make.plan_world(random.Random(1), set(), domain="Art", playlist="Modern Sculpture",
                        topic="Modern Sculpture", title="Form and Space Episode 1", episode=1, duration=120)
    first, second = w.scenes[0], w.scenes[1]
    assert facts_visible_at(w, 0) == first.visual
    assert facts_visible_at(w, first.end) == second.visual  # scenes are half-open
    assert facts_visible_at(w, 120) == w.scenes[-1].visual and facts_visible_at(w, 121) is None
    assert scenes_in(w, first.end - 1, first.end + 1) == [first, second]
    assert scenes_in(w, first.end, first.end + 1) == [second]


def test_vocabularies_are_disjoint() -> None:
    visual = set(vocab.VISUAL_WORDS)
    assert not visual & set(vocab.TOPIC_OF_WORD)
    nouns = [n for topics in vocab.TOPICS.values() for _, _, ns in topics for n in ns]
    assert len(nouns) == len(set(nouns)), "a topic noun must name one topic"
    for template in vocab.SENTENCES:
        words = set(re.findall(r"[a-z]+", template.lower()))
        assert not words & visual
    for topics in vocab.TOPICS.values():
        for name, _, _ in topics:
            assert not set(re.findall(r"[a-z]+", name.lower())) & visual
    rng, taken = random.Random(0), set()
    signs = [vocab.make_sign(rng, taken) for _ in range(200)]
    assert len(set(signs)) == 200 and all(facts.slot_of(s) == "sign" for s in signs)


@needs_tools
def test_the_same_seed_writes_byte_identical_files(tmp_path: Path) -> None:
    """Issue 25: bit-exact encoders and muxers — two runs with one seed give the same bytes (the exported
    video ids and cache keys come from the files' content)."""
    runs = [make.make_collection(tmp_path / name, domains=1, playlists=1, videos=2, minutes=0.1, seed=11, vp9=1)
            for name in ("one", "two")]
    files = [sorted(p for p in (tmp_path / name).rglob("*") if p.is_file()) for name in ("one", "two")]
    assert [p.suffix for p in runs[0]] == [".mp4", ".webm"] and len(files[0]) == len(files[1]) > 2
    for a, b in zip(*files, strict=True):
        assert a.relative_to(tmp_path / "one") == b.relative_to(tmp_path / "two")
        assert a.read_bytes() == b.read_bytes(), f"{a.name} differs between two runs with the same seed"
