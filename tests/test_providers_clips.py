"""Model clips (media/clips.py): exact cuts by timestamp, fps, fit size, audio on/off, content-keyed cache."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from playlisteval.errors import MediaError
from playlisteval.media.clips import ClipSpec, audio_clip, content_fingerprint, model_clip
from playlisteval.media.frames import frames_at
from playlisteval.media.probe import probe
from tests.provider_fakes import make_video


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_video(tmp_path_factory.mktemp("src") / "talk.mp4", seconds=10, size="192x144")


def _diff(a: Image.Image, b: Image.Image) -> float:
    b = b.resize(a.size)
    return float(np.abs(np.asarray(a, dtype=np.float32) - np.asarray(b, dtype=np.float32)).mean())


def test_a_clip_is_cut_exactly_resampled_and_fit(source: Path, tmp_path: Path) -> None:
    clip = model_clip(source, ClipSpec(3.3, 8.3, 2.0, (100, 100), True), tmp_path)
    info = probe(clip)
    assert (info.width, info.height) == (100, 74)  # 192x144 fit inside 100x100, aspect kept, even
    assert info.fps == pytest.approx(2.0) and info.has_audio
    assert info.duration == pytest.approx(5.0, abs=0.5)
    first = frames_at(clip, [0.0])[0]
    at_start, earlier = frames_at(source, [3.3, 1.3])
    # re-encoded from the timestamp, not from the previous keyframe (stream copies land on keyframes)
    assert _diff(first, at_start) < _diff(first, earlier)


def test_audio_can_be_dropped_and_small_sources_are_not_upscaled(source: Path, tmp_path: Path) -> None:
    clip = model_clip(source, ClipSpec(0.0, 4.0, 0.5, (1280, 720), False), tmp_path)
    info = probe(clip)
    assert not info.has_audio and (info.width, info.height) == (192, 144)


def test_clips_are_cached_by_content_and_parameters(source: Path, tmp_path: Path) -> None:
    spec = ClipSpec(1.0, 3.0, 1.0, (96, 96), True)
    first = model_clip(source, spec, tmp_path)
    stamp = first.stat().st_mtime_ns
    assert model_clip(source, spec, tmp_path) == first and first.stat().st_mtime_ns == stamp
    moved = tmp_path / "elsewhere" / "renamed.mp4"
    moved.parent.mkdir()
    shutil.copy(source, moved)
    assert content_fingerprint(moved) == content_fingerprint(source)
    assert model_clip(moved, spec, tmp_path) == first  # same content, same clip
    assert model_clip(source, ClipSpec(1.0, 3.0, 1.0, (96, 96), False), tmp_path) != first
    other = make_video(tmp_path / "other.mp4", seconds=4, size="160x120")
    assert model_clip(other, spec, tmp_path) != first
    assert not list(tmp_path.rglob(".*.mp4"))  # no partial files left behind


def test_empty_or_missing_cuts_are_media_errors(source: Path, tmp_path: Path) -> None:
    with pytest.raises(MediaError, match="empty clip"):
        model_clip(source, ClipSpec(20.0, 30.0, 1.0, None, True), tmp_path)
    with pytest.raises(MediaError, match="missing"):
        model_clip(tmp_path / "nope.mp4", ClipSpec(0.0, 1.0, 1.0, None, True), tmp_path)


def test_audio_clips(source: Path, tmp_path: Path) -> None:
    wav = audio_clip(source, 2.0, 5.0, tmp_path, fmt="wav")
    assert wav.suffix == ".wav" and probe_duration(wav) == pytest.approx(3.0, abs=0.1)
    aac = audio_clip(source, None, None, tmp_path)
    assert aac.suffix == ".aac" and aac.stat().st_size > 0
    again = audio_clip(wav, 1.0, 2.0, tmp_path, fmt="wav")  # an audio-only source works too
    assert probe_duration(again) == pytest.approx(1.0, abs=0.1)
    silent = make_video(tmp_path / "silent.mp4", seconds=2, size="64x48", audio=False)
    with pytest.raises(MediaError, match="no audio"):
        audio_clip(silent, None, None, tmp_path)


def probe_duration(path: Path) -> float:
    from playlisteval.media.probe import run_ffprobe

    return float(run_ffprobe(path)["format"]["duration"])
