"""Cold evidence (issue 26, item 4): a frame `index` did not keep moves onto the nearest keyframe inside its
own slot (never out of its chunk or into a neighbour's), is decoded there cheaply and recorded as served
there; ``cold_frames = "exact"`` keeps the sampled timestamps; keyframe lists are cached per file."""

from __future__ import annotations

import io
import os
import subprocess
from pathlib import Path
from typing import Any, cast

import numpy as np
import pytest
from PIL import Image

from playlisteval.config import Settings
from playlisteval.eval import media as eval_media
from playlisteval.eval.corpus import Corpora, CorpusChunk, CorpusVideo, GoldSegment, Question
from playlisteval.eval.evidence import Evidence, chunk_frames, on_keyframes, select_evidence, uniform
from playlisteval.eval.media import image_parts
from playlisteval.media import keyframe_cache
from playlisteval.media.frames import frames_at, keyframe_times
from playlisteval.media.keyframe_cache import cache_file, cached_keyframes
from tests.index_helpers import settings_for

GOP_S = 3  # a keyframe every 3 s: 0, 3, …, 39


def _video(path: Path, pattern: str) -> Path:
    """40 s of 320x180, 30 fps H.264 with a fixed GOP (no scene-cut keyframes), so keyframes are known."""
    gop = str(GOP_S * 30)
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi",
                    "-i", f"{pattern}=size=320x180:rate=30:duration=40", "-c:v", "libx264", "-preset", "ultrafast",
                    "-pix_fmt", "yuv420p", "-g", gop, "-keyint_min", gop, "-sc_threshold", "0", str(path)],
                   check=True)
    return path


@pytest.fixture(scope="module")
def videos(tmp_path_factory: pytest.TempPathFactory) -> list[CorpusVideo]:
    folder = tmp_path_factory.mktemp("cold")
    out = []
    for n, pattern in enumerate(("testsrc", "testsrc2")):
        path = _video(folder / f"v{n}.mp4", pattern)
        chunks = tuple(CorpusChunk(100 * n + i, n + 1, i, 10.0 * i, 10.0 * (i + 1), f"chunk {i}") for i in range(4))
        out.append(CorpusVideo(n + 1, n, str(path), "h264", chunks))
    return out


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return settings_for(tmp_path)


def _chunk(ev: Evidence, chunk_id: int) -> CorpusChunk:
    return next(c for c in ev.chunks if c.chunk_id == chunk_id)


def test_keyframe_times_of_the_test_video(videos: list[CorpusVideo]) -> None:
    assert keyframe_times(videos[0].path) == [float(t) for t in range(0, 40, GOP_S)]


def test_uniform_frames_move_onto_keyframes_inside_their_slots(videos: list[CorpusVideo],
                                                               settings: Settings) -> None:
    raw = uniform(videos[:1], 8)  # spacing 5 s: samples at 2.5, 7.5, …; slots [0, 5), [5, 10), …
    before = [f.t for f in raw.frames]
    moved = on_keyframes(uniform(videos[:1], 8), settings.media_dir)
    # nearest keyframe inside the slot, the earlier one on a tie (7.5 is 1.5 s from both 6 and 9)
    assert [f.t for f in moved.frames] == [3.0, 6.0, 12.0, 18.0, 21.0, 27.0, 33.0, 36.0]
    keys = set(keyframe_times(videos[0].path))
    for frame, t in zip(moved.frames, before, strict=True):
        chunk = _chunk(moved, frame.chunk_id)
        assert chunk.start <= frame.t < chunk.end and abs(frame.t - t) < 2.5 and frame.t in keys
    assert moved.record()["frames"] == [[1, f.t] for f in moved.frames]  # what is served is what is stored


def test_a_slot_without_a_keyframe_keeps_the_exact_timestamp(videos: list[CorpusVideo],
                                                             settings: Settings) -> None:
    raw = uniform(videos[:1], 40)  # spacing 1 s: the slot [3, 4) of 3.5 holds the keyframe 3, [1, 2) none
    before = [f.t for f in raw.frames]
    after = [f.t for f in on_keyframes(raw, settings.media_dir).frames]
    for b, a in zip(before, after, strict=True):
        has_key = any(b - 0.5 <= k < b + 0.5 for k in range(0, 40, GOP_S))
        assert a == (b - 0.5 if has_key else b)
    assert len(set(after)) == len(after)


def test_retrieved_frames_stay_in_their_slice_of_the_chunk(videos: list[CorpusVideo], settings: Settings) -> None:
    video = videos[0]
    chunk = video.chunks[1]  # 10-20 s; slices [10, 15) and [15, 20); keyframes 12, 15, 18
    raw = Evidence("retrieved", "domain", chunk_frames(video, chunk, 2), [chunk], 1, 40.0)
    assert [f.t for f in on_keyframes(raw, settings.media_dir).frames] == [12.0, 18.0]
    chunk = video.chunks[0]  # 0-10 s with 4 frames: slices of 2.5 s, keyframes 0, 3, 6, 9
    raw = Evidence("retrieved", "domain", chunk_frames(video, chunk, 4), [chunk], 1, 40.0)
    assert [f.t for f in on_keyframes(raw, settings.media_dir).frames] == [0.0, 3.0, 6.0, 9.0]


class _Corpora:
    def __init__(self, settings: Settings, videos: list[CorpusVideo]) -> None:
        self.settings = settings
        self.videos = videos

    def scope(self, question: Question, scope: str) -> list[CorpusVideo]:
        return self.videos


def _question() -> Question:
    gold = GoldSegment(0, 1, 0, 0)
    return Question(1, 1, "d", "what is shown", (gold, gold))


def test_exact_setting_keeps_the_sampled_timestamps(videos: list[CorpusVideo], settings: Settings) -> None:
    corpora = cast(Corpora, _Corpora(settings, videos))
    sampled = [f.t for f in uniform(videos, 16).frames]
    settings.eval.cold_frames = "exact"
    assert [f.t for f in select_evidence(corpora, None, _question(), "uniform", "domain", 16, 2).frames] == sampled
    settings.eval.cold_frames = "keyframe"
    settings.eval.materialize_frames = False  # nothing is decoded: nothing to save
    assert [f.t for f in select_evidence(corpora, None, _question(), "uniform", "domain", 16, 2).frames] == sampled
    settings.eval.materialize_frames = True
    keyed = [f.t for f in select_evidence(corpora, None, _question(), "uniform", "domain", 16, 2).frames]
    assert keyed != sampled and all(t in set(map(float, range(0, 40, GOP_S))) for t in keyed)


def _as_saved(image: Image.Image) -> Image.Image:
    """``image`` through the JPEG encoding frame files get (quality 85), so only decoding differences remain."""
    buffer = io.BytesIO()
    image.convert("RGB").save(buffer, "JPEG", quality=85)
    with Image.open(buffer) as im:
        return im.convert("RGB")


def _mean_diff(a: Image.Image, b: Image.Image) -> float:
    assert a.size == b.size
    return float(np.abs(np.asarray(a.convert("RGB"), float) - np.asarray(b.convert("RGB"), float)).mean())


def test_moved_frames_decode_as_the_keyframe_exactly(videos: list[CorpusVideo], settings: Settings,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    corpora = cast(Corpora, _Corpora(settings, videos))
    ev = select_evidence(corpora, None, _question(), "uniform", "domain", 16, 2)
    given: list[Any] = []
    real = eval_media.save_frames

    def spy(*args: Any, **kw: Any) -> list[Path]:
        given.append(kw.get("keyframes"))
        return real(*args, **kw)

    monkeypatch.setattr(eval_media, "save_frames", spy)
    parts = image_parts(settings, ev, (320, 180))
    assert len(given) == 2 and all(g for g in given)  # each video read once, knowing its keyframes
    for part, frame in zip(parts, ev.frames, strict=True):
        assert part.timestamp == frame.t and part.source == frame.path
        exact = frames_at(frame.path, [frame.t], "h264", (320, 180))[0]  # decord/PyAV exact, no keyframes
        keyed = frames_at(frame.path, [frame.t], "h264", (320, 180), keyframes=keyframe_times(frame.path))[0]
        assert _mean_diff(keyed, exact) < 0.05  # decoding with non-key frames skipped: the same picture
        # the neighbouring frame differs by ~0.4 on this pattern, JPEG encoding by ~3: compare like with like
        nxt = frames_at(frame.path, [frame.t + 1 / 30], "h264", (320, 180))[0]
        with Image.open(part.path) as shown:
            assert _mean_diff(shown, _as_saved(exact)) < 0.05 < 0.2 < _mean_diff(shown, _as_saved(nxt))


def test_keyframe_lists_are_cached_per_file(videos: list[CorpusVideo], settings: Settings,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    def counting(path: str | Path) -> list[float]:
        calls.append(str(path))
        return keyframe_times(path)

    monkeypatch.setattr(keyframe_cache, "keyframe_times", counting)
    path = videos[1].path
    first = cached_keyframes(settings.media_dir, path)
    target = cache_file(settings.media_dir, path)
    assert target is not None and target.is_file() and target.parent == settings.media_dir / "keyframes"
    assert cached_keyframes(settings.media_dir, path) == first and len(calls) == 1
    on_keyframes(uniform(videos[1:], 8), settings.media_dir)  # the evidence reads the same list
    assert len(calls) == 1
    target.write_text("{not json")  # a damaged list is made again
    assert cached_keyframes(settings.media_dir, path) == first and len(calls) == 2
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))  # a changed file: a new list
    assert cached_keyframes(settings.media_dir, path) == first and len(calls) == 3
    assert not list(target.parent.glob("*.tmp"))


def test_a_missing_source_keeps_exact_timestamps(videos: list[CorpusVideo], settings: Settings,
                                                 tmp_path: Path) -> None:
    gone = str(tmp_path / "gone.mp4")
    missing = [CorpusVideo(9, 0, gone, "h264", videos[0].chunks)]
    raw = uniform(missing, 8)
    sampled = [f.t for f in raw.frames]
    assert cached_keyframes(settings.media_dir, gone) is None
    assert [f.t for f in on_keyframes(raw, settings.media_dir).frames] == sampled
    broken = tmp_path / "broken.mp4"
    broken.write_bytes(b"not a video")
    assert cached_keyframes(settings.media_dir, broken) is None  # not demuxable: not cached either
    assert not (settings.media_dir / "keyframes").exists()


def test_frames_on_kept_frames_are_not_moved(videos: list[CorpusVideo], settings: Settings) -> None:
    from playlisteval.media.kept import KeptFrames, kept_root

    kept = KeptFrames(kept_root(settings.media_dir), videos[0].path)
    ev = uniform(videos[:1], 8)
    for t in (ev.frames[0].t, ev.frames[1].t):  # 2.5 and 7.5 kept: they stay; the rest move
        kept.save(t, Image.new("RGB", (32, 18)))
    moved = [f.t for f in on_keyframes(ev, settings.media_dir).frames]
    assert moved == [2.5, 7.5, 12.0, 18.0, 21.0, 27.0, 33.0, 36.0]
