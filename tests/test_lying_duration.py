"""Issue 44 item 2: a video whose container header claims 596 h over a minute of packets is clamped to
its streams' end by `add` and `index`, with a warning naming the file and both numbers, and indexed as
the minute it is (before: `index` planned 71,520 chunks and ran for 14 minutes with nothing printed)."""

from __future__ import annotations

import json
import struct
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from sqlmodel import Session, select

from playlisteval.cli import main
from playlisteval.media.probe import probe
from playlisteval.media.stream_end import check_claim, metadata_end
from playlisteval.store import open_store
from playlisteval.store.tables import Chunk, Video
from tests.helpers import env_for, project
from tests.index_helpers import make_video

HOURS = 596
OVERRIDES: dict[str, object] = dict(index__embedder="hash", index__ocr="none", index__chunk_s=30)


def claim_hours(path: Path, hours: float, boxes: tuple[bytes, ...] = (b"mvhd",)) -> Path:
    """``path`` with the duration of each of ``boxes`` (mvhd, mdhd: version 0 or 1) set to ``hours``,
    in the box's own timescale (saturating a 32-bit field): the header lies, the samples do not."""
    data = bytearray(path.read_bytes())
    for box in boxes:
        at = data.find(box)
        while at >= 0:
            version = data[at + 4]
            if version == 1:  # version/flags, 64-bit creation and modification times, timescale, 64-bit duration
                scale = struct.unpack_from(">I", data, at + 4 + 4 + 16)[0]
                struct.pack_into(">Q", data, at + 4 + 4 + 20, int(hours * 3600 * scale))
            else:  # version/flags, 32-bit times, timescale, 32-bit duration
                scale = struct.unpack_from(">I", data, at + 4 + 4 + 8)[0]
                struct.pack_into(">I", data, at + 4 + 4 + 12, min(int(hours * 3600 * scale), 0xFFFFFFFF))
            at = data.find(box, at + 4)
    path.write_bytes(bytes(data))
    return path


def _container_duration(path: Path) -> float:
    out = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "format=duration", "-of", "json", str(path)],
                         capture_output=True, text=True, check=True).stdout
    return float(json.loads(out)["format"]["duration"])


@pytest.mark.parametrize("boxes", [(b"mvhd",), (b"mvhd", b"mdhd")], ids=["movie header", "every header"])
def test_probe_clamps_a_claimed_596_hours_to_the_streams(tmp_path: Path, boxes: tuple[bytes, ...]) -> None:
    liar = claim_hours(make_video(tmp_path / "liar.mp4", 20), HOURS, boxes)
    assert _container_duration(liar) > (HOURS - 1) * 3600  # the lie took: ffprobe believes the header
    info = probe(liar)
    assert info.duration == pytest.approx(20, abs=0.5)
    (warning,) = info.warnings
    assert str(liar) in warning and "596.0 h" in warning and "20.0" in warning


def test_honest_files_keep_their_duration_and_say_nothing(tmp_path: Path) -> None:
    info = probe(make_video(tmp_path / "honest.mp4", 12))
    assert info.duration == pytest.approx(12, abs=0.1)
    assert info.warnings == ()
    # an MKV's streams list no duration of their own: the packets are read, and agree
    mkv = tmp_path / "honest.mkv"
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-i", str(tmp_path / "honest.mp4"), "-c", "copy",
                    str(mkv)], check=True)
    assert (probe(mkv).duration, probe(mkv).warnings) == (pytest.approx(12, abs=0.2), ())


def test_stream_metadata_is_the_evidence_when_packets_cannot_be_read(tmp_path: Path) -> None:
    not_media = tmp_path / "notes.bin"
    not_media.write_bytes(b"\x00" * 1000)
    streams = [{"codec_type": "video", "nb_frames": "300", "r_frame_rate": "10/1"},
               {"codec_type": "audio", "duration": "25.5"}]
    assert metadata_end(streams) == 30.0
    clamped = check_claim(not_media, HOURS * 3600.0, streams)
    assert clamped.duration == 30.0 and "its streams say they last at 30.00 s" in clamped.warning
    # no evidence at all, or a claim within reach of it: the claim stands
    assert check_claim(not_media, HOURS * 3600.0, []).duration == HOURS * 3600.0
    assert check_claim(not_media, 31.0, streams) == check_claim(not_media, 31.0, streams[:1])
    assert check_claim(not_media, 31.0, streams).warning == ""


def _cli(root: Path, *args: str) -> Result:
    result = CliRunner().invoke(main, ["--project", str(root), *args], env=env_for(**OVERRIDES),
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


@pytest.mark.timeout(120)  # the guard: before the fix this `index` ran for 14 minutes
def test_add_and_index_of_a_lying_video_finish_with_its_real_length(tmp_path: Path) -> None:
    project(tmp_path, **OVERRIDES)
    folder = tmp_path / "videos" / "Lies"
    liar = claim_hours(make_video(folder / "liar.mp4", 65), HOURS)
    make_video(folder / "honest.mp4", 31)
    added = "".join(_cli(tmp_path, "add", "Education", str(folder)).output.split())  # rich wraps long paths
    assert "2added" in added
    assert "".join(f"warning {liar}: the container claims 2145600 s (596.0 h) but its last packets end at 65.0"
                   .split()) in added
    engine = open_store(project(tmp_path, **OVERRIDES))
    with Session(engine) as s:
        stored = {Path(v.path).name: v.duration for v in s.exec(select(Video)).all()}
    assert stored == {"liar.mp4": pytest.approx(65, abs=0.5), "honest.mp4": pytest.approx(31, abs=0.2)}

    indexed = json.loads(_cli(tmp_path, "index", "--json").output)
    assert indexed["videos_indexed"] == 2 and not indexed["skipped"] and not indexed["failed"]
    assert any(str(liar) in w and "596.0 h" in w for w in indexed["warnings"])
    with Session(engine) as s:
        rows = s.exec(select(Video).where(Video.path == str(liar))).one()
        chunks = s.exec(select(Chunk).where(Chunk.video_id == rows.id)).all()
    assert rows.status == "indexed" and rows.duration == pytest.approx(65, abs=0.5)
    assert [(c.start, round(c.end)) for c in sorted(chunks, key=lambda c: c.idx)] == [(0, 30), (30, 60), (60, 65)]
