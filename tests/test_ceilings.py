"""Start-to-close ceilings (issue 44, deliverable 2): work that runs past its configured ceiling is failed with
the reason by its lease heartbeat while the real `playlisteval worker` doing it is alive and the thread is still
inside the call (a model call's wait here, a decoder in the field); the late result writes nothing."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import text

from playlisteval.actors import ceilings
from playlisteval.actors.build_run import build
from playlisteval.actors.indexing import index_collection
from playlisteval.index.collection import add_paths
from playlisteval.store import open_store
from tests.fault_helpers import REPO, scalar
from tests.helpers import QUIET_SIM, env_for, project, seeded_store
from tests.index_helpers import make_video, write_srt
from tests.test_spine import all_terminal, stop, wait_until

pytestmark = pytest.mark.slow


def _worker(root: Path, overrides: dict[str, object], log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "playlisteval.cli", "--project", str(root), "-v", "worker",
                             "--threads", "2"], env={**os.environ, "PYTHONPATH": str(REPO), **env_for(**overrides)},
                            stdout=log.open("ab"), stderr=subprocess.STDOUT)


def test_a_build_step_past_its_ceiling_fails_with_the_reason_while_its_worker_lives(
        tmp_path: Path, redis_url: str) -> None:
    # each call waits 5 s; the ceiling is 1.5 s, far shorter than the 10 s between renewals of the 30-s leases
    # (the heartbeat wakes for the ceiling: a step would otherwise commit before it was checked)
    overrides: dict[str, object] = dict(broker__url=redis_url, broker__lease_s=30, broker__sweep_every_s=1,
                                        broker__sweep_grace_s=2, broker__step_ceiling_s=1.5, sim__latency_s=5,
                                        **QUIET_SIM)
    settings = project(tmp_path, **overrides)
    engine = seeded_store(settings, 2)
    assert build(settings).enqueued == 2
    log = tmp_path / "worker.log"
    worker = _worker(tmp_path, overrides, log)
    try:
        wait_until(lambda: all_terminal(engine), 90, "both items to end")
        alive = worker.poll() is None
    finally:
        stop(worker)
    assert alive, "the worker died: the ceiling was not what failed the step"
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT state, error FROM item ORDER BY id")).all()
    why = ceilings.reason("the pending step", 1.5, "[broker] step_ceiling_s")
    assert [tuple(r) for r in rows] == [("failed", why), ("failed", why)], log.read_text()[-3000:]
    assert "exceeded its start-to-close ceiling of 1.5 s" in why
    output = log.read_text(errors="replace")
    assert output.count("step.ceiling") == 2, output[-3000:]
    # each failure is one event; the calls that were still waiting wrote no step after it
    assert int(scalar(engine, "SELECT COUNT(*) FROM item_event WHERE to_state = 'failed'")) == 2
    assert int(scalar(engine, "SELECT COUNT(*) FROM item_event")) == 2
    assert int(scalar(engine, "SELECT COUNT(*) FROM item WHERE lease_owner IS NOT NULL")) == 0


def test_a_video_past_its_ceiling_is_skipped_with_the_reason_while_its_worker_lives(
        tmp_path: Path, redis_url: str) -> None:
    folder = tmp_path / "media" / "Talks"
    make_video(folder / "Talk.mp4", 60, rate=10)
    write_srt(folder / "Talk.srt", [(1, 4, "rivers"), (31, 34, "bridges")])
    # OCR of every frame of a 60-s video takes seconds; its ceiling is half a second
    overrides: dict[str, object] = dict(broker__url=redis_url, broker__lease_s=3, broker__sweep_every_s=1,
                                        broker__sweep_grace_s=2, index__lease_s=0.5, index__threads=0,
                                        index__embedder="hash", index__chunk_s=10, index__frames_per_chunk=8,
                                        index__poll_s=0.2)
    settings = project(tmp_path, **overrides)
    engine = open_store(settings)
    add_paths(engine, "Education", [folder])
    log = tmp_path / "worker.log"
    worker = _worker(tmp_path, overrides, log)
    try:
        report = index_collection(settings, engine)
        alive = worker.poll() is None
    finally:
        stop(worker)
    assert alive
    output = log.read_text(errors="replace")
    assert report.videos_indexed == 0 and len(report.skipped) == 1, output[-3000:]
    [skipped] = report.skipped
    assert skipped.path.endswith("Talk.mp4")
    assert skipped.reason == ("indexing exceeded its start-to-close ceiling of 0.5 s ([index] lease_s); failed while "
                              "its worker lived")
    assert "index.ceiling" in output
    with engine.connect() as conn:
        assert conn.execute(text("SELECT status, reason, lease_owner FROM video")).all() == [
            ("skipped", skipped.reason, "")]
        assert conn.execute(text("SELECT COUNT(*) FROM chunk")).scalar() == 0  # the late commit wrote nothing


def test_a_job_past_its_ceiling_is_failed_with_the_reason_and_its_late_result_is_not_kept(tmp_path: Path) -> None:
    from playlisteval.actors import jobs

    settings = project(tmp_path, broker__job_ceiling_s=0.3)
    engine = open_store(settings)
    [job_id] = jobs.prepare(engine, "judge", 7, [1], jobs.new_pass(), {})
    assert jobs.claim(engine, job_id, "me", lease_s=30) is not None
    ceiling = ceilings.job_s(settings)
    why = ceilings.reason("the judge job", ceiling, "[broker] job_ceiling_s")
    started = time.monotonic()
    with jobs.renewed(engine, job_id, "me", 30, ceiling, lambda: jobs.finish(engine, job_id, "me", error=why)):
        time.sleep(1.0)  # the work runs on past its ceiling
    assert time.monotonic() - started < 5
    jobs.finish(engine, job_id, "me", {"questions": 1})  # the late result
    with engine.connect() as conn:
        row = conn.execute(text("SELECT state, error, result FROM work_job WHERE id = :i"), {"i": job_id}).one()
    assert (row[0], row[1]) == ("failed", why) and why.startswith("the judge job exceeded its start-to-close "
                                                                   "ceiling of 0.3 s")
    assert jobs.tally(engine, [job_id]).failed == [why]
