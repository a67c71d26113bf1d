"""Video leases on the engine's rules (issue 25, deliverable 1): short and renewed while the video is indexed, a
dead holder's taken back at once by `index` and by every worker's sweeper, and whatever `index` cannot take
named — which video, held by whom, until when. The storm with real workers is tests/test_index_faults.py."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from dramatiq import Message
from dramatiq.brokers.stub import StubBroker
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from playlisteval.actors import App, tasks
from playlisteval.actors.indexing import index_collection
from playlisteval.actors.workers import sweep_once
from playlisteval.commands.index_output import index_exit, index_json
from playlisteval.index import leases, work
from playlisteval.index.chunk_frames import ChunkFrames
from playlisteval.index.collection import add_paths
from playlisteval.index.work import claim
from playlisteval.media.frames import keyframe_times
from playlisteval.media.kept import KeptFrames
from playlisteval.media.probe import probe
from playlisteval.store import identity, open_store
from playlisteval.store.tables import Chunk, Video
from playlisteval.world.synth.make import FONT
from tests.helpers import project
from tests.index_helpers import make_video, write_srt

FAST = {"index__ocr": "none", "index__embedder": "hash", "index__segment_min_s": 10, "index__segment_max_s": 20,
        "index__poll_s": 0.1, "broker__lease_s": 1, "broker__sweep_every_s": 0.2}


def _videos(root: Path, n: int) -> Path:
    folder = root / "media" / "Talks"
    for i in range(n):
        make_video(folder / f"Talk {i + 1}.mp4", 12)
        write_srt(folder / f"Talk {i + 1}.srt", [(1, 4, f"talk number {i} about rivers and bridges")])
    return folder


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _dead_here() -> str:
    """The identity a gone process of this PID namespace had (store/identity.py)."""
    return f"{socket.gethostname()}:{_dead_pid()}:{identity.place()}.00000000"


def _ids(engine: Engine) -> list[int]:
    with Session(engine) as s:
        return [int(v or 0) for v in s.exec(select(Video.id).order_by(col(Video.id)))]


def test_a_video_held_by_a_dead_process_is_taken_back_and_indexed_at_once(tmp_path: Path) -> None:
    settings = project(tmp_path, **FAST)
    engine = open_store(settings)
    add_paths(engine, "Education", [_videos(tmp_path, 2)])
    first, second = _ids(engine)
    # what a SIGKILLed `index` and worker leave: hour-long leases under pids that are gone
    assert claim(engine, first, f"{_dead_here()}:index", lease_s=3600)
    assert claim(engine, second, _dead_here(), lease_s=3600)
    started = time.monotonic()
    report = index_collection(settings, engine)
    assert (report.videos_indexed, report.unfinished, report.held) == (2, [], [])
    assert time.monotonic() - started < 30
    assert index_exit(report) == 0
    with Session(engine) as s:
        assert {(v.status, v.lease_owner) for v in s.exec(select(Video))} == {("indexed", "")}


def test_a_live_holder_is_waited_for_and_named_then_its_video_is_done_when_it_stops(tmp_path: Path) -> None:
    settings = project(tmp_path, **FAST, index__wait_stall_s=1.5)
    engine = open_store(settings)
    add_paths(engine, "Education", [_videos(tmp_path, 2)])
    first, second = _ids(engine)
    owner = "another-host:4242"  # alive as far as anyone here can tell: it renews its lease
    assert claim(engine, second, owner, lease_s=1)
    renewal = leases.Renewal(engine, second, owner, lease_s=1)
    renewal.start()
    try:
        report = index_collection(settings, engine)
    finally:
        renewal.stop()
    assert report.videos_indexed == 1 and report.unfinished == [second]
    [held] = report.held
    assert (held.video_id, held.owner) == (second, owner) and held.path.endswith("Talk 2.mp4")
    assert held.until > time.time() - 5  # the lease's end, as it stood
    said = index_json(report, engine, settings)
    assert said["held"] == [{"video_id": second, "path": held.path, "owner": owner, "until": round(held.until, 3)}]
    assert index_exit(report) == 3
    # its holder stopped renewing: its lease lapses within lease_s and the next `index` does the video
    again = index_collection(settings, engine)
    assert (again.videos_indexed, again.unfinished, again.held) == (1, [], [])


def test_the_lease_is_renewed_while_its_holder_lives_and_lapses_when_it_stops(tmp_path: Path) -> None:
    settings = project(tmp_path, **FAST)
    engine = open_store(settings)
    add_paths(engine, "Education", [_videos(tmp_path, 1)])
    [video_id] = _ids(engine)
    assert claim(engine, video_id, "here:1", lease_s=0.3)
    with leases.renewed(engine, video_id, "here:1", 0.3) as renewal:
        time.sleep(1.0)  # three lease lengths
        assert not claim(engine, video_id, "there:2", lease_s=0.3)  # still held
        assert not renewal.lost
    time.sleep(0.4)
    assert claim(engine, video_id, "there:2", lease_s=0.3)  # lapsed once nobody renews it


def test_a_video_committed_by_its_holder_is_never_reported_as_a_lease_lost(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The commit gives the lease back; a renewal after it found the lease gone and logged `index.lease_lost`
    for a video this worker had just finished (a fault-free run saw it on a busy host). The renewal ends
    before the commit: here a commit slowed to span several renewal periods meets no failed renewal."""
    settings = project(tmp_path, **{**FAST, "broker__lease_s": 0.3})  # renewed every 0.1 s
    engine = open_store(settings)
    add_paths(engine, "Education", [_videos(tmp_path, 1)])
    renewals: list[bool] = []
    real_renew, real_commit = leases.renew, work._commit

    def renew(*args: Any) -> bool:
        renewals.append(real_renew(*args))
        return renewals[-1]

    def slow_commit(*args: Any) -> None:
        real_commit(*args)
        time.sleep(0.35)  # three renewal periods after the lease was given back

    monkeypatch.setattr(leases, "renew", renew)
    monkeypatch.setattr(work, "_commit", slow_commit)
    [video_id] = _ids(engine)
    outcome = work.index_video(settings, engine, video_id, "hash", "run-1", "here:1")
    assert outcome is not None and outcome.status == "indexed", outcome
    assert False not in renewals, renewals  # no renewal found the lease gone
    with Session(engine) as s:
        row = s.get(Video, video_id)
        assert row is not None and row.status == "indexed" and row.lease_owner == ""


def test_every_workers_sweeper_sends_a_dead_holders_video_again_for_the_run_in_progress(tmp_path: Path) -> None:
    settings = project(tmp_path, **FAST)
    engine = open_store(settings)
    add_paths(engine, "Education", [_videos(tmp_path, 2)])
    first, second = _ids(engine)
    broker = StubBroker()
    app = App(settings, engine=engine, broker=broker)
    try:
        leases.record_run(engine, "run-1", "hash")
        assert claim(engine, first, _dead_here(), lease_s=3600)
        assert claim(engine, second, "another-host:1", lease_s=3600)  # alive, for all we know
        assert sweep_once(app) == 1
        queued = [Message.decode(m).args for m in broker.queues[tasks.INDEX_QUEUE].queue]
        assert queued == [(first, "hash", "run-1")]
        with Session(engine) as s:
            rows = {v.id: (v.lease_owner, v.lease_expires) for v in s.exec(select(Video))}
        assert rows[first] == ("", 0.0) and rows[second][0] == "another-host:1"
        assert sweep_once(app) == 0  # freed once: not sent again every sweep
        leases.end_run(engine, "run-1")
        assert leases.active_run(engine) is None
    finally:
        app.leases.close()
        broker.close()


def test_the_renewal_stops_when_its_lease_was_taken_back(tmp_path: Path) -> None:
    settings = project(tmp_path, **FAST)
    engine = open_store(settings)
    add_paths(engine, "Education", [_videos(tmp_path, 1)])
    [video_id] = _ids(engine)
    assert claim(engine, video_id, "frozen:1", lease_s=0.2)
    renewal = leases.Renewal(engine, video_id, "frozen:1", 0.2)
    time.sleep(0.3)
    assert leases.take_back_expired(engine) == [video_id] and claim(engine, video_id, "alive:2", lease_s=30)
    renewal.start()
    deadline = time.monotonic() + 3
    while not renewal.lost and time.monotonic() < deadline:
        time.sleep(0.05)
    renewal.stop()
    assert renewal.lost



def test_frames_decoded_now_are_the_frames_kept_for_later(tmp_path: Path) -> None:
    """A worker killed mid-video leaves some of its frames kept; the next indexing of the video loads those and
    decodes the rest. What it reads must be, pixel for pixel, what a run that decoded every frame read."""
    video = make_video(tmp_path / "Talk.mp4", 12)
    info = probe(video)
    times = [1.0, 5.0, 9.0]

    def read(root: Path) -> list[bytes]:
        frames = ChunkFrames(str(video), info.codec, 640, (info.width, info.height), keyframe_times(video),
                              KeptFrames(root, video))
        try:
            return [image.tobytes() for image in frames.read(times)]
        finally:
            frames.close()

    decoded = read(tmp_path / "kept")  # decoded, and kept
    assert len(list((tmp_path / "kept").rglob("*.jpg"))) == 3
    assert read(tmp_path / "kept") == decoded  # loaded from the kept files
    partly = tmp_path / "partly"  # one frame kept by a run that died, the others decoded now
    one = KeptFrames(partly, video)
    one.folder.mkdir(parents=True)
    shutil.copy(KeptFrames(tmp_path / "kept", video).path(5.0), one.path(5.0))
    assert read(partly) == decoded


def test_a_video_makes_the_same_chunks_whether_its_frames_are_decoded_now_or_were_kept(tmp_path: Path) -> None:
    """A worker killed mid-video leaves some frames kept; the video's next indexing loads those and decodes the
    rest: its on-screen text must be what a run that decoded every frame read."""
    folder = tmp_path / "media" / "Talks"
    folder.mkdir(parents=True)
    card = (f"drawtext=fontfile='{FONT}':text='RIVER BRIDGE 42':fontsize=18:fontcolor=white:x=10:y=(h-text_h)/2")
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc=s=320x240:d=20:r=5",
                    "-vf", card, "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p",
                    str(folder / "Talk.mp4")], check=True)
    chunks = []
    for name in ("first", "second"):  # the second project loads the frames the first one kept
        settings = project(tmp_path / name, **{**FAST, "index__ocr": "rapidocr"}, index__chunk_s=10,
                           index__frames_per_chunk=2, media__dir=str(tmp_path / "kept"))
        engine = open_store(settings)
        add_paths(engine, "Education", [folder])
        report = index_collection(settings, engine)
        assert report.videos_indexed == 1
        with Session(engine) as s:
            chunks.append([(c.idx, c.ocr_text) for c in s.exec(select(Chunk).order_by(col(Chunk.idx)))])
    kept = list((tmp_path / "kept").rglob("*.jpg"))
    assert len(kept) == 4 and chunks[0] == chunks[1] and any(text for _, text in chunks[0])
