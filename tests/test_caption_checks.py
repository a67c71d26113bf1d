"""Captions checked before they are trusted (issue 44, deliverable 3): a garbage sidecar, one of another video's
span, one giving text to too few chunks, or one older than its re-encoded video is not the transcript; a warning
names the file and why, and a narrated video gets its transcript from speech recognition instead."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlmodel import Session, col, select

from playlisteval.actors.indexing import index_collection
from playlisteval.config import IndexSettings
from playlisteval.index import asr_whisper, caption_checks
from playlisteval.index.captions import Cue, parse_caption_file, place_words
from playlisteval.index.collection import add_paths
from playlisteval.store.tables import Chunk
from tests.index_helpers import make_narrated, settings_for, srt_time, store, write_srt

SPANS = [(0.0, 30.0), (30.0, 60.0), (60.0, 70.0)]
GARBAGE = "\n\n".join(["Lorem 12 ipsum", "00:00:01 -> 00:00:04\nnot a timing line", "}}}{{{ ??? ###",
                       "junk\n1\n2"]) + "\n"


def _srt(cues: list[tuple[float, float, str]]) -> str:
    return "\n".join(f"{i}\n{srt_time(s)} --> {srt_time(e)}\n{text}\n" for i, (s, e, text) in enumerate(cues, 1))


def _check(text: str, duration: float = 70.0, **cfg: object) -> caption_checks.Verdict:
    found = parse_caption_file(text)
    return caption_checks.check(found, place_words(found.cues, SPANS), duration, IndexSettings(**cfg))


def test_good_captions_pass_and_say_nothing() -> None:
    assert _check(_srt([(1, 4, "glaciers"), (35, 38, "legions"), (62, 64, "tides")])) == caption_checks.Verdict()


def test_garbage_and_binary_files_are_unfit() -> None:
    assert _check(GARBAGE).problems == ["no cue could be read (4 block(s), none with text under a "
                                        "'start --> end' timing line)"]
    assert _check("\x00\x01PK\x03\x04 zip bytes").problems[0] == "not a text file (control characters)"
    mostly = _check(_srt([(1, 4, "glaciers")]) + "\n" + GARBAGE + "\n" + _srt([(35, 38, "legions")]))
    assert mostly.problems == ["4 of 6 blocks unreadable"]
    one_bad = _check(_srt([(1, 4, "a"), (35, 38, "b"), (62, 64, "c")]) + "\nnonsense here\n")
    assert one_bad.problems == [] and one_bad.notes == ["1 of 4 blocks unreadable, skipped"]


def test_captions_of_another_videos_span_are_unfit_and_a_few_strays_are_said() -> None:
    longer = _check(_srt([(1, 4, "a"), (35, 38, "b"), (62, 64, "c"), (300, 305, "d"), (900, 905, "e")]))
    assert longer.problems == ["2 of 5 cues start past the video's end (the video is 70.0 s, the last cue ends at "
                               "905.0 s): captions of another video"]
    strays = _check(_srt([(float(s), s + 2.0, f"w{s}") for s in range(0, 66, 3)] + [(80, 82, "stray")]))
    assert strays.problems == [] and strays.notes == [
        "1 of 23 cues start past the video's end (the video is 70.0 s, the last cue ends at 82.0 s); dropped"]


def test_captions_giving_text_to_too_few_chunks_are_unfit() -> None:
    sparse = _srt([(1, 4, "glaciers")])  # one chunk of three
    assert _check(sparse).problems == []  # 1/3 over the default 0.25
    assert _check(sparse, captions_min_share=0.5).problems == [
        "only 1 of 3 chunks get any text (under [index] captions_min_share = 0.5)"]


def test_a_sidecar_older_than_its_re_encoded_video_is_unfit(tmp_path: Path) -> None:
    video, sidecar = tmp_path / "v.mp4", write_srt(tmp_path / "v.srt", [(1, 4, "a"), (35, 38, "b"), (62, 64, "c")])
    video.write_bytes(b"re-encoded")
    day = 86_400.0
    os.utime(sidecar, (video.stat().st_mtime - day, video.stat().st_mtime - day))
    found = parse_caption_file(sidecar.read_text())
    texts = place_words(found.cues, SPANS)
    stale = caption_checks.check(found, texts, 70.0, IndexSettings(), sidecar=sidecar, video=video)
    assert stale.problems == ["older than its video by 24.0 h (over [index] captions_stale_s = 3600 s): the video "
                              "was re-encoded or replaced after its captions"]
    unchecked = caption_checks.check(found, texts, 70.0, IndexSettings(captions_stale_s=0), sidecar=sidecar,
                                     video=video)
    assert unchecked.problems == []


NARRATION = [(3, "Glaciers carve deep valleys into the mountains."),
             (40, "The Roman legions marched along stone roads."),
             (62, "The moon pulls the oceans and makes the tides.")]
RIGHT = [(3, 6, "Glaciers carve deep valleys into the mountains."), (40, 43, "The Roman legions marched."),
         (62, 65, "The moon pulls the oceans.")]


@pytest.fixture(scope="module")
def narrated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_narrated(tmp_path_factory.mktemp("narrated") / "talk.mp4", 70, NARRATION)


def _garbage(srt: Path) -> None:
    srt.write_text(GARBAGE)


def _another_episode(srt: Path) -> None:  # a longer episode's captions: most of its cues past this one's end
    write_srt(srt, [(3, 6, "welcome back"), *[(float(t), t + 3.0, f"part {t}") for t in range(100, 1900, 60)]])


def _stale(srt: Path) -> None:  # right text, but written a day before the video was re-encoded in place
    write_srt(srt, RIGHT)
    video = srt.with_suffix(".mp4")
    os.utime(srt, (video.stat().st_mtime - 86_400, video.stat().st_mtime - 86_400))


@pytest.mark.skipif(not (shutil.which("ffmpeg") and shutil.which("espeak-ng")),
                    reason="ffmpeg and espeak-ng make the narrated test video")
@pytest.mark.parametrize(("make", "why"), [
    (_garbage, "no cue could be read (4 block(s), none with text under a 'start --> end' timing line)"),
    (_another_episode, "30 of 31 cues start past the video's end (the video is 70.0 s, the last cue ends at "
                       "1843.0 s): captions of another video"),
    (_stale, "older than its video by 24.0 h (over [index] captions_stale_s = 3600 s): the video was re-encoded "
             "or replaced after its captions"),
])
def test_unfit_captions_beside_a_narrated_video_give_way_to_speech_recognition_with_a_warning(
        tmp_path: Path, narrated: Path, make: Callable[[Path], None], why: str) -> None:
    folder = tmp_path / "Geo"
    folder.mkdir()
    shutil.copy2(narrated, folder / "talk.mp4")
    srt = folder / "talk.srt"
    make(srt)
    settings = settings_for(tmp_path, embedder="hash")
    engine = store(settings)
    add_paths(engine, "Education", [folder])
    report = index_collection(settings, engine)
    assert report.videos_indexed == 1 and report.transcript_sources == {"faster-whisper": 3}, report.warnings
    assert report.transcript_models == {asr_whisper.BUNDLED_NAME: 3}
    named = [w for w in report.warnings if str(srt) in w]
    assert named == [f"{srt}: not used as the transcript: {why}; speech recognition instead"], report.warnings
    with Session(engine) as s:
        chunks = s.exec(select(Chunk).order_by(col(Chunk.idx))).all()
    words = [{w.strip(".,!?").lower() for w in c.transcript.split()} for c in chunks]
    assert {"glaciers", "valleys"} <= words[0] and {"legions", "roads"} <= words[1] and {"moon", "tides"} <= words[2]
    assert {c.transcript_source for c in chunks} == {"faster-whisper"}


@pytest.mark.skipif(not shutil.which("ffmpeg"), reason="ffmpeg makes the video")
def test_fitting_captions_beside_the_same_video_are_its_transcript(tmp_path: Path, narrated: Path) -> None:
    folder = tmp_path / "Geo"
    folder.mkdir()
    shutil.copy2(narrated, folder / "talk.mp4")
    write_srt(folder / "talk.srt", RIGHT)
    settings = settings_for(tmp_path, embedder="hash")
    engine = store(settings)
    add_paths(engine, "Education", [folder])
    report = index_collection(settings, engine)
    assert report.transcript_sources == {"captions": 3} and report.warnings == []


def test_cues_place_by_midpoint_unchanged() -> None:
    # the checks read the cues as placed: a cue straddling a chunk boundary still lands once
    assert place_words([Cue(28.0, 33.0, "across")], SPANS) == ["", "across", ""]
