"""The "index" queue: in-process worker threads by default; with Redis, `playlisteval worker` processes
(here: one real subprocess, as on another machine) take the videos and the coordinator reads the
outcomes from the store. Leases make duplicate deliveries harmless."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from sqlmodel import Session, select

from playlisteval.actors.indexing import index_collection
from playlisteval.index.collection import add_paths
from playlisteval.index.outcome import read_outcome
from playlisteval.index.work import claim, index_video, release
from playlisteval.store import identity, open_store
from playlisteval.store.tables import Video
from tests.helpers import env_for, project
from tests.index_helpers import make_video, write_srt

FAST = {"index__ocr": "none", "index__embedder": "hash", "index__segment_min_s": 10, "index__segment_max_s": 20}


def _course(root: Path, n: int) -> Path:
    folder = root / "media" / "Talks"
    for i in range(n):
        make_video(folder / f"Talk {i + 1}.mp4", 12)
        write_srt(folder / f"Talk {i + 1}.srt", [(1, 4, f"talk number {i} about rivers and bridges")])
    return folder


def _outcomes(engine) -> dict[str, object]:  # type: ignore[no-untyped-def]
    with Session(engine) as s:
        return {v.title: read_outcome(v.index_report) for v in s.exec(select(Video))}


def test_in_process_threads_index_every_video(tmp_path: Path) -> None:
    settings = project(tmp_path, **FAST, index__threads=2)
    engine = open_store(settings)
    add_paths(engine, "Education", [_course(tmp_path, 4)])
    seen: list[tuple[str, int, int]] = []
    report = index_collection(settings, engine, progress=lambda *a: seen.append(a))
    assert report.videos_indexed == 4 and report.unfinished == [] and report.transcript_sources == {"captions": 4}
    assert ("videos", 0, 4) in seen and ("videos", 4, 4) in seen
    outcomes = _outcomes(engine)
    assert all(o is not None and o.status == "indexed" and o.worker.endswith(":index") for o in outcomes.values())


def test_redis_workers_on_other_machines_do_the_work(tmp_path: Path, redis_url: str) -> None:
    overrides = {**FAST, "broker__url": redis_url}
    settings = project(tmp_path, **overrides, index__threads=0)  # this process only coordinates
    engine = open_store(settings)
    add_paths(engine, "Education", [_course(tmp_path, 3)])
    exe = str(Path(sys.executable).parent / "playlisteval")
    env = {**os.environ, **env_for(**overrides)}
    worker = subprocess.Popen([exe, "--project", str(tmp_path), "worker", "--threads", "2"], env=env,
                              stdout=subprocess.DEVNULL, stderr=(tmp_path / "worker.log").open("wb"))
    try:
        report = index_collection(settings, engine)
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=60)
    assert report.videos_indexed == 3 and report.unfinished == [], (tmp_path / "worker.log").read_text()[-2000:]
    workers = {o.worker for o in _outcomes(engine).values() if o is not None}
    # all done by the worker process (an identity of host, pid, PID namespace and nonce: store/identity.py)
    assert {(identity.parse(w).host, identity.parse(w).pid) for w in workers} == {(os.uname().nodename, worker.pid)}
    assert len(workers) == 1
    assert report.segments.videos == 3
    # a second run finds nothing to do and sends nothing
    again = index_collection(settings, engine)
    assert (again.videos_indexed, again.embedded) == (0, 0)


def test_duplicate_and_concurrent_deliveries_do_nothing(tmp_path: Path) -> None:
    settings = project(tmp_path, **FAST)
    engine = open_store(settings)
    add_paths(engine, "Education", [_course(tmp_path, 1)])
    with Session(engine) as s:
        video_id = s.exec(select(Video.id)).one()
    assert video_id is not None
    # another worker holds the lease: this delivery does nothing
    assert claim(engine, video_id, "elsewhere:1", lease_s=60)
    assert index_video(settings, engine, video_id, "hash", "run1", "here:2") is None
    release(engine, video_id, "elsewhere:1")
    first = index_video(settings, engine, video_id, "hash", "run1", "here:2")
    assert first is not None and first.status == "indexed" and first.embedded == 1
    assert index_video(settings, engine, video_id, "hash", "run1", "here:3") is None  # same run, done
    with Session(engine) as s:
        video = s.exec(select(Video)).one()
        assert (video.status, video.lease_owner, video.lease_expires) == ("indexed", "", 0.0)


def test_an_expired_lease_can_be_taken_over(tmp_path: Path) -> None:
    settings = project(tmp_path, **FAST)
    engine = open_store(settings)
    add_paths(engine, "Education", [_course(tmp_path, 1)])
    with Session(engine) as s:
        video_id = s.exec(select(Video.id)).one()
    assert video_id is not None
    assert claim(engine, video_id, "dead:1", lease_s=0.05)  # a worker that died mid-video
    time.sleep(0.1)
    outcome = index_video(settings, engine, video_id, "hash", "run2", "alive:2")
    assert outcome is not None and outcome.status == "indexed"
