"""Keyframe-aware reading (issue 43, 4): keyframe lists from the MP4 index equal a full demux's, and the
PyAV reader given keyframes (a keyframe: seek, one packet, drain; an exact timestamp: non-reference
frames skipped until near it) shows the same picture as decoding every frame of the file."""

from __future__ import annotations

import subprocess
from pathlib import Path

import av
import numpy as np
import pytest

from playlisteval.media.frames import frames_at, keyframe_times
from playlisteval.media.keyframe_cache import cache_file, cached_keyframes_of

SIZE = (320, 180)


def _video(path: Path, gop: int) -> Path:
    """24 s of 320x180 30-fps H.264 with B-frames (x264's default b-pyramid) and audio, keyframes every ``gop``."""
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i",
                    "testsrc2=size=320x180:rate=30:duration=24", "-f", "lavfi", "-i", "sine=duration=24",
                    "-c:v", "libx264", "-preset", "veryfast", "-bf", "3", "-pix_fmt", "yuv420p", "-g", str(gop),
                    "-keyint_min", str(gop), "-sc_threshold", "0", "-c:a", "aac", str(path)], check=True)
    return path


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("keyed")


def _demuxed_keyframes(path: Path) -> list[float]:
    """The keyframe times by reading every packet (the independent way)."""
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        return sorted({float(p.pts * stream.time_base) for p in container.demux(stream)
                       if p.is_keyframe and p.pts is not None})


def _every_frame(path: Path) -> list[tuple[float, np.ndarray]]:
    with av.open(str(path)) as container:
        return [(float(f.pts * f.time_base), np.asarray(f.to_image(width=SIZE[0], height=SIZE[1]), float))
                for f in container.decode(video=0)]


def _shown_at(frames: list[tuple[float, np.ndarray]], t: float) -> np.ndarray:
    return next((image for when, image in frames if when >= t - 1e-3), frames[-1][1])


@pytest.mark.parametrize(("name", "gop"), [("a.mp4", 75), ("b.mp4", 37), ("c.mkv", 75), ("d.ts", 75),
                                           ("e.frag.mp4", 75)])
def test_keyframe_lists_equal_a_full_demux(folder: Path, name: str, gop: int) -> None:
    """MP4 from the index (37: keyframes off the half-second grid), MKV and MPEG-TS by demuxing, and a
    fragmented MP4 (its index is built as fragments are read)."""
    path = _video(folder / name, gop)
    if name.endswith(".frag.mp4"):
        whole = path.with_name("whole.mp4")
        path.replace(whole)
        subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-i", str(whole), "-c", "copy", "-movflags",
                        "frag_keyframe+empty_moov", str(path)], check=True)
    keys = keyframe_times(path)
    assert keys == _demuxed_keyframes(path)
    assert len(keys) == -(-24 * 30 // gop)  # a fixed GOP: every gop-th frame from the first


def test_keyed_reads_show_what_a_full_decode_shows(folder: Path) -> None:
    path = _video(folder / "read.mp4", 75)  # keyframes every 2.5 s
    keys = keyframe_times(path)
    # keyframes, exact frames right after and long after a keyframe, two in one GOP, one frame apart,
    # a keyframe after an exact frame of its GOP, the last frame and past the end
    times = sorted({*keys[::2], 0.5, 2.6, 4.9, 5.0, 5.0 + 1 / 30, 7.4, 9.9, 12.5 + 1 / 30, 23.95, 30.0})
    decoded = _every_frame(path)
    keyed = frames_at(path, times, "h264", SIZE, keyframes=keys)
    plain = frames_at(path, list(reversed(times)), "h264", SIZE, keyframes=keys)[::-1]  # order does not matter
    for t, a, b in zip(times, keyed, plain, strict=True):
        want = _shown_at(decoded, t)
        assert np.abs(np.asarray(a, float) - want).mean() < 0.05, t
        assert np.abs(np.asarray(b, float) - want).mean() < 0.05, t
    # frames one apart differ: the comparison would see a wrong frame
    assert np.abs(_shown_at(decoded, 5.0) - _shown_at(decoded, 5.0 + 1 / 30)).mean() > 0.2


def test_a_pairs_lists_are_made_at_once_and_cached(folder: Path, tmp_path: Path) -> None:
    a, b = _video(folder / "pair-a.mp4", 75), _video(folder / "pair-b.mp4", 37)
    listed = cached_keyframes_of(tmp_path, [str(a), str(b), str(a), str(tmp_path / "gone.mp4")])
    assert listed == {str(a): _demuxed_keyframes(a), str(b): _demuxed_keyframes(b), str(tmp_path / "gone.mp4"): None}
    assert all((f := cache_file(tmp_path, v)) is not None and f.is_file() for v in (a, b))
