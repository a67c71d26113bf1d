"""Media steps of the index: frames at timestamps (decord, PyAV fallback for VP9 and broken files),
exact per-chunk 16 kHz audio from one decode, embedded subtitle tracks as a transcript source."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
from sqlmodel import Session, select

from playlisteval.actors.indexing import index_collection
from playlisteval.errors import MediaError
from playlisteval.index.captions import read_embedded
from playlisteval.index.collection import add_paths
from playlisteval.media.audio import chunk_pcm
from playlisteval.media.frames import FrameReader, frames_at, sample_times
from playlisteval.media.probe import probe
from playlisteval.store.tables import Chunk
from tests.index_helpers import make_video, settings_for, store, write_srt


def _vp9(src: Path, out: Path) -> Path:
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-i", str(src), "-c:v", "libvpx-vp9", "-deadline",
                    "realtime", "-cpu-used", "8", "-crf", "40", "-b:v", "0", "-c:a", "libopus", str(out)], check=True)
    return out


def test_sample_times_are_slice_centres() -> None:
    assert sample_times([(0, 30), (30, 40)], 3) == [[5, 15, 25], [30 + 10 / 6, 35, 40 - 10 / 6]]


def test_decord_and_pyav_read_the_same_frames(tmp_path: Path) -> None:
    mp4 = make_video(tmp_path / "a.mp4", 8, size="320x240", rate=10)
    webm = _vp9(mp4, tmp_path / "a.webm")
    times = [0.55, 3.05, 6.25]
    with FrameReader(mp4, probe(mp4).codec, (160, 160), (320, 240)) as reader:
        a = reader.read(times)
        assert reader.backend == "decord"
    with FrameReader(webm, probe(webm).codec, (160, 160), (320, 240)) as reader:
        b = reader.read(times)
        assert reader.backend == "pyav"  # decord is never asked to read VP9
    assert [im.size for im in a] == [im.size for im in b] == [(160, 120)] * 3
    for x, y in zip(a, b, strict=True):  # testsrc changes every frame: the same frame or nothing
        assert np.abs(np.asarray(x, dtype=float) - np.asarray(y, dtype=float)).mean() < 12
    # frames_at keeps the caller's order
    again = frames_at(mp4, [6.25, 0.55], probe(mp4).codec, (160, 160))
    assert np.abs(np.asarray(again[1], dtype=float) - np.asarray(a[0], dtype=float)).mean() < 3


def test_a_truncated_file_fails_with_a_reason(tmp_path: Path) -> None:
    mp4 = make_video(tmp_path / "a.mp4", 20, size="320x240", rate=10)
    data = mp4.read_bytes()
    cut = tmp_path / "cut.mp4"
    cut.write_bytes(data[: len(data) // 3])
    with pytest.raises(MediaError, match="truncated or corrupt|cannot decode"), \
            FrameReader(cut, "h264", (160, 160), (320, 240)) as reader:
        for times in sample_times([(0, 10), (10, 20)], 4):
            reader.read(times)


def test_chunk_audio_is_exact_and_padded(tmp_path: Path) -> None:
    mp4 = make_video(tmp_path / "a.mp4", 7)
    spans = [(0.0, 3.0), (3.0, 6.0), (6.0, 9.0)]  # the last runs past the end of the audio
    pieces = list(chunk_pcm(mp4, spans, 16000))
    assert [len(p) for p in pieces] == [48000, 48000, 48000]
    assert np.abs(pieces[0]).max() > 1000 and not pieces[2][20000:].any()  # a tone, then padded silence
    with pytest.raises(MediaError, match="audio decode failed"):
        list(chunk_pcm(make_video(tmp_path / "mute.mp4", 2, audio=None), [(0, 1)]))


def test_an_embedded_subtitle_track_is_a_transcript_source(tmp_path: Path) -> None:
    plain = make_video(tmp_path / "plain.mp4", 40)
    srt = write_srt(tmp_path / "subs.srt", [(2, 5, "glaciers carve valleys"), (33, 36, "rivers move sediment")])
    folder = tmp_path / "media" / "Geo"
    folder.mkdir(parents=True)
    video = folder / "with subs.mp4"
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-i", str(plain), "-i", str(srt), "-map", "0",
                    "-map", "1", "-c", "copy", "-c:s", "mov_text", str(video)], check=True)
    assert probe(video).subtitles == ("mov_text",)
    assert [c.text for c in read_embedded(video)] == ["glaciers carve valleys", "rivers move sediment"]
    settings = settings_for(tmp_path, embedder="hash")
    engine = store(settings)
    add_paths(engine, "Education", [folder])
    report = index_collection(settings, engine)
    assert report.transcript_sources == {"subtitles": 2}
    with Session(engine) as s:
        assert [c.transcript for c in s.exec(select(Chunk).order_by(Chunk.idx))] == [
            "glaciers carve valleys", "rivers move sediment"]


def test_asr_of_a_file_does_not_depend_on_the_files_before_it(tmp_path: Path) -> None:
    from playlisteval.index.asr_sphinx import pocketsphinx_words

    a = make_video(tmp_path / "a.mp4", 12, audio="speech", speech="The quick brown fox jumps over the lazy dog")
    b = make_video(tmp_path / "b.mp4", 12, audio="speech", speech="Rivers carry sediment down to the sea")
    first = pocketsphinx_words(a)
    pocketsphinx_words(b)
    assert pocketsphinx_words(a) == first


def test_the_next_chunks_frames_decode_while_this_chunk_is_read() -> None:
    """Frames are read one chunk ahead on a thread of their own (issue 26: decode ran in series with OCR),
    in order, each chunk once; what reading a chunk raised is raised when that chunk is taken."""
    import threading
    from typing import Any, cast

    from PIL import Image

    from playlisteval.index.chunk_frames import FramesAhead

    started = {i: threading.Event() for i in range(3)}
    reads: list[tuple[float, str]] = []

    class Frames:
        def read(self, times: list[float]) -> list[Image.Image]:
            reads.append((times[0], threading.current_thread().name))
            started[int(times[0])].set()
            if times[0] == 2:
                raise MediaError("lecture.mp4", "chunk 2: corrupt")
            return [Image.new("RGB", (8, 8))]

    ahead = FramesAhead(cast(Any, Frames()), [[0.0], [1.0], [2.0]])
    try:
        images, seen = ahead.take(0)
        assert len(images) == 1 and seen is None  # no detector: nothing detected ahead
        assert started[1].wait(10)  # chunk 1 is being read before anyone asked for it
        assert not started[2].is_set()  # one chunk ahead, no more
        assert len(ahead.take(1)[0]) == 1
        with pytest.raises(MediaError, match="chunk 2"):
            ahead.take(2)
    finally:
        ahead.close()
    assert [t for t, _ in reads] == [0.0, 1.0, 2.0]
    assert all(name.startswith("frames") for _, name in reads)
