"""probe (SPEC A2), caption parsing, sidecars, chunk spans (A4), episode order (A3)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from playlisteval.errors import MediaError
from playlisteval.index.captions import find_sidecar, parse_captions, read_captions, text_between
from playlisteval.index.chunking import chunk_spans
from playlisteval.index.episodes import episode_number, episode_order
from playlisteval.media.probe import probe
from tests.index_helpers import make_video, write_srt


def test_probe_reads_a_real_video(tmp_path: Path) -> None:
    info = probe(make_video(tmp_path / "a.mp4", 7, size="320x240"))
    assert info.duration == pytest.approx(7, abs=0.1)
    assert (info.codec, info.width, info.height, info.fps, info.has_audio) == ("h264", 320, 240, 5.0, True)
    assert info.size == (tmp_path / "a.mp4").stat().st_size
    assert probe(make_video(tmp_path / "b.mp4", 3, audio=None)).has_audio is False


@pytest.mark.parametrize(
    ("name", "make", "reason"),
    [
        ("missing.mp4", None, "missing"),
        ("empty.mp4", lambda p: p.write_bytes(b""), "zero-length file"),
        ("junk.mp4", lambda p: p.write_bytes(b"\x00\x01not a video at all" * 100), "corrupt or unreadable"),
        ("notes.txt", lambda p: p.write_text("hello\n" * 50), "corrupt or unreadable"),
        ("folder.mp4", lambda p: p.mkdir(), "not a file"),
    ],
)
def test_probe_rejects_unusable_files(tmp_path: Path, name: str, make, reason: str) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / name
    if make:
        make(path)
    with pytest.raises(MediaError) as err:
        probe(path)
    assert err.value.reason.startswith(reason)
    assert err.value.path == str(path)


def test_probe_rejects_audio_only_and_images_and_truncated(tmp_path: Path) -> None:
    run = ["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi"]
    subprocess.run([*run, "-i", "sine=duration=2", str(tmp_path / "tone.wav")], check=True)
    subprocess.run([*run, "-i", "testsrc=size=64x64:duration=1", "-frames:v", "1", str(tmp_path / "pic.png")],
                   check=True)
    with pytest.raises(MediaError, match="no video stream"):
        probe(tmp_path / "tone.wav")
    with pytest.raises(MediaError, match="still image"):
        probe(tmp_path / "pic.png")
    video = make_video(tmp_path / "whole.mp4", 4)
    cut = tmp_path / "cut.mp4"
    cut.write_bytes(video.read_bytes()[: video.stat().st_size // 3])  # moov atom is at the end: lost
    with pytest.raises(MediaError, match="corrupt"):
        probe(cut)


SRT = """1
00:00:01,000 --> 00:00:04,000
<i>Hello</i> there,
general viewer.

2
00:00:29,000 --> 00:00:33,000 X1:10 X2:20
straddles the boundary

3
00:01:00,500 --> 00:01:02,000
{\\an8}last words &amp; more
"""

VTT = """WEBVTT
Kind: captions

NOTE a comment that is not a cue

intro
00:01.000 --> 00:04.000 align:start position:0%
Hello <c.colorE5E5E5>there</c><00:00:02.000>

00:04.000 --> 00:06.000
Hello there

1:00:00.000 --> 1:00:02.500
an hour in
"""


def test_parse_srt_and_vtt() -> None:
    cues = parse_captions(SRT)
    assert [(c.start, c.end, c.text) for c in cues] == [
        (1.0, 4.0, "Hello there, general viewer."),
        (29.0, 33.0, "straddles the boundary"),
        (60.5, 62.0, "last words & more"),
    ]
    vtt = parse_captions(VTT)
    # the rolling repeat "Hello there" is merged into the cue before it
    assert [(c.start, c.end, c.text) for c in vtt] == [(1.0, 6.0, "Hello there"), (3600.0, 3602.5, "an hour in")]


def test_text_between_assigns_each_cue_once_by_midpoint() -> None:
    cues = parse_captions(SRT)
    assert text_between(cues, 0, 30) == "Hello there, general viewer."
    assert text_between(cues, 30, 60) == "straddles the boundary"  # midpoint 31 s
    assert text_between(cues, 60, 90) == "last words & more"


def test_find_sidecar_prefers_exact_then_english(tmp_path: Path) -> None:
    video = tmp_path / "Lecture 1.mp4"
    video.write_bytes(b"x")
    assert find_sidecar(video) is None
    (tmp_path / "Lecture 1.fr.srt").write_text(SRT)
    (tmp_path / "Lecture 1.part2.en.srt").write_text(SRT)  # belongs to "Lecture 1.part2"
    assert find_sidecar(video) == tmp_path / "Lecture 1.fr.srt"
    (tmp_path / "Lecture 1.en.vtt").write_text(VTT)
    assert find_sidecar(video) == tmp_path / "Lecture 1.en.vtt"
    write_srt(tmp_path / "Lecture 1.srt", [(0, 1, "x")])
    assert find_sidecar(video) == tmp_path / "Lecture 1.srt"
    assert [c.text for c in read_captions(tmp_path / "Lecture 1.srt")] == ["x"]


def test_chunk_spans_are_exact() -> None:
    assert chunk_spans(95, 30, 5) == [(0, 30), (30, 60), (60, 90), (90, 95)]
    assert chunk_spans(64, 30, 5) == [(0, 30), (30, 60)]  # a 4-s tail is dropped
    assert chunk_spans(60.0000001, 30, 5) == [(0, 30), (30, 60)]
    assert chunk_spans(3, 30, 5) == [(0, 3)]  # a tiny video is still one chunk
    assert chunk_spans(0, 30, 5) == []


def test_episode_numbers_and_order() -> None:
    assert episode_number("Episode 10 - The End") == (0, 10)
    assert episode_number("lecture_04") == (0, 4)
    assert episode_number("S02E05 Something") == (2, 5)
    assert episode_number("Season 2 Episode 3") == (2, 3)
    assert episode_number("03 - Intro") == (0, 3)
    assert episode_number("1984 documentary") is None
    titles = ["Episode 1", "Episode 10", "Episode 2", "Trailer", "Episode 3"]
    assert episode_order(titles, titles) == ["Episode 1", "Episode 2", "Episode 3", "Trailer", "Episode 10"]
    assert episode_order(["b", "a"], ["Intro", "Outro"]) == ["b", "a"]  # nothing numbered: unchanged


def test_ffmpeg_is_available() -> None:
    assert shutil.which("ffmpeg") and shutil.which("ffprobe")
