"""`index` under SIGKILL storms (issue 25, deliverable 1): real `playlisteval worker` processes and a real
`playlisteval index` coordinator on a Redis of the test's own, killed mid-video; the next `index` — and the
one that lives through the storm — finishes unaided with the same chunks, vectors, segments and seeds as a
fault-free run, and no video is left leased.

Each video costs a couple of seconds of real work (OCR of one frame per 10-s chunk), so a kill lands while a
worker holds a video's lease; leases are 3 s and sweeps every second, so recovery takes seconds. Recovery
times go to ``PLAYLISTEVAL_FAULT_LOG`` like the rest of the fault suite's.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine

from playlisteval.actors.indexing import index_collection
from playlisteval.index.collection import add_paths
from playlisteval.store import identity, open_store
from tests.fault_helpers import REPO, Fleet, RedisServer, wait_until
from tests.helpers import env_for, project
from tests.index_helpers import make_video, write_srt

pytestmark = pytest.mark.slow

WORDS = ["rivers", "bridges", "valleys", "harbours", "canals", "tunnels"]
INDEX: dict[str, object] = {"index__embedder": "hash", "index__chunk_s": 10, "index__frames_per_chunk": 1,
                            "index__segment_min_s": 10, "index__segment_max_s": 20, "index__poll_s": 0.2,
                            "index__seed_min_gap_s": 0, "index__seed_similarity_min": 0.05,
                            "index__seed_similarity_max": 0.99}
ENGINE: dict[str, object] = {"broker__lease_s": 3, "broker__sweep_every_s": 1, "broker__sweep_grace_s": 2,
                             "store__busy_timeout_s": 30, "index__threads": 0}


def _media(root: Path, n: int = 6) -> Path:
    folder = root / "media" / "Engineering"
    for i in range(n):
        make_video(folder / f"Lecture {i + 1}.mp4", 40)
        a, b = WORDS[i % len(WORDS)], WORDS[(i + 1) % len(WORDS)]
        write_srt(folder / f"Lecture {i + 1}.srt", [(1, 8, f"how {a} meet {b} in old towns"),
                                                    (21, 28, f"building {b} beside {a} and roads")])
    return folder


def snapshot(engine: Engine) -> dict[str, list[Any]]:
    """Everything `index` makes, keyed by content (file names, positions), not by row ids."""
    def rows(sql: str) -> list[Any]:
        with engine.connect() as conn:
            return sorted(tuple(r) for r in conn.execute(text(sql)))

    def digest(blob: bytes) -> str:
        return hashlib.sha256(bytes(blob)).hexdigest()[:16]

    title = "v.title"
    return {
        "videos": rows("SELECT title, status, duration FROM video v"),
        "chunks": rows(f"SELECT {title}, c.idx, c.start, c.\"end\", c.transcript, c.ocr_text, c.transcript_source "
                       "FROM chunk c JOIN video v ON v.id = c.video_id"),
        "vectors": [(*r[:4], digest(r[4])) for r in rows(
            f"SELECT {title}, c.idx, cv.embedder, cv.content_hash, cv.vector FROM chunk_vector cv "
            "JOIN chunk c ON c.id = cv.chunk_id JOIN video v ON v.id = c.video_id")],
        "segments": [(*r[:7], digest(r[7])) for r in rows(
            f"SELECT {title}, s.idx, s.embedder, s.start, s.\"end\", s.first_chunk, s.last_chunk, s.vector "
            "FROM segment s JOIN video v ON v.id = s.video_id")],
        "seeds": [(*r[:4], round(float(r[4]), 6)) for r in rows(
            "SELECT v1.title, s1.idx, v2.title, s2.idx, sd.similarity "
            "FROM seed sd JOIN segment s1 ON s1.id = sd.segment1_id JOIN video v1 ON v1.id = s1.video_id "
            "JOIN segment s2 ON s2.id = sd.segment2_id JOIN video v2 ON v2.id = s2.video_id")],
    }


def _leases(engine: Engine) -> list[tuple[str, str, float]]:
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(text(
            "SELECT title, lease_owner, lease_expires FROM video WHERE lease_owner != '' ORDER BY id"))]


def _indexed(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(text("SELECT COUNT(*) FROM video WHERE status = 'indexed'")).scalar() or 0)


def _pid(owner: str) -> int:
    return identity.parse(owner).pid


def _coordinator(project_dir: Path, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """A real `playlisteval index --json` process (its stdout: the report; stderr: its log)."""
    return subprocess.Popen([sys.executable, "-m", "playlisteval.cli", "--project", str(project_dir), "index",
                             "--json"], env={**os.environ, "PYTHONPATH": str(REPO), **env},
                            stdout=subprocess.PIPE, stderr=log.open("ab"))


def _record(row: dict[str, Any]) -> None:
    print("FAULT", json.dumps(row))
    path = os.environ.get("PLAYLISTEVAL_FAULT_LOG")
    if path:
        with open(path, "a") as fh:
            fh.write(json.dumps(row) + "\n")


def _kill_a_holder(engine: Engine, fleet: Fleet, timeout: float = 30) -> tuple[str, str]:
    """SIGKILL the worker that holds a video's lease mid-video, start it again; (video, its dead holder)."""
    found: dict[str, Any] = {}

    def holder() -> bool:
        pids = fleet.pids()
        for video, owner, _ in _leases(engine):
            if _pid(owner) in pids:
                found.update(i=[p.pid for p in fleet.procs].index(_pid(owner)), video=video, owner=owner)
                return True
        return False

    wait_until(holder, timeout, "a worker holding a video")
    fleet.restart(found["i"])
    return found["video"], found["owner"]


def _moving_again(engine: Engine, video: str, dead_owner: str) -> bool:
    with engine.connect() as conn:
        status, owner = conn.execute(text("SELECT status, lease_owner FROM video WHERE title = :t"), {"t": video}).one()
    return bool(status == "indexed" or (owner and owner != dead_owner))


@pytest.fixture(params=["sqlite", "postgresql"])
def storm_store(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "postgresql":
        return str(request.getfixturevalue("pg_url"))
    return f"sqlite:///{tmp_path}/storm.db"


def test_index_storm_with_workers_killed_mid_video_ends_as_a_fault_free_run(tmp_path: Path, storm_store: str) -> None:
    media = _media(tmp_path / "shared")
    # the fault-free run: in-process threads
    reference = project(tmp_path / "reference", **INDEX, index__threads=2)
    ref_engine = open_store(reference)
    add_paths(ref_engine, "Engineering", [media])
    clean = index_collection(reference, ref_engine)
    assert clean.videos_indexed == 6 and clean.unfinished == []
    expected = snapshot(ref_engine)
    assert expected["seeds"] and expected["segments"], "the course must make seeds to compare"

    server = RedisServer(tmp_path)
    server.start()
    root = tmp_path / "storm"
    overrides = {**INDEX, **ENGINE, "broker__url": server.url, "store__url": storm_store}
    settings = project(root, **overrides)
    engine = open_store(settings)
    add_paths(engine, "Engineering", [media])
    env = env_for(**overrides)
    fleet = Fleet(root, env, n=2, threads=1)
    try:
        with fleet:
            # 1. everything killed at once mid-index: the coordinator and both workers, leases left behind
            # all at once, the moment a worker holds a video; a loaded machine can still let the holder
            # finish in between (CI saw it once): then everything starts again, up to three times
            for _attempt in range(3):
                first = _coordinator(root, env, root / f"index1-{_attempt}.log")
                wait_until(lambda: _indexed(engine) >= 1
                           and any(_pid(o) in fleet.pids() for _, o, _ in _leases(engine)),
                           60, "a video indexed and another held")
                fleet.kill_all(first)
                left = _leases(engine)
                if left:
                    break
                for i in range(fleet.n):
                    fleet.restart(i)
            assert left, "the kill left no lease behind in three tries: nothing was tested"
            # 2. `index` again, with workers killed under it mid-video: it finishes unaided
            for i in range(fleet.n):
                fleet.restart(i)
            started = time.monotonic()
            second = _coordinator(root, env, root / "index2.log")
            recoveries = []
            for _ in range(2):
                video, dead = _kill_a_holder(engine, fleet)
                recoveries.append(wait_until(lambda v=video, d=dead: _moving_again(engine, v, d),  # type: ignore[misc]
                                             30, f"{video} taken again"))
            out, _ = second.communicate(timeout=120)
            finished_s = time.monotonic() - started
            logs = (root / "index2.log").read_text(errors="replace")[-3000:] + fleet.output()[-3000:]
            assert second.returncode == 0, logs
            report = json.loads(out)
            assert report["unfinished"] == [] and report["held"] == [], report
    finally:
        server.kill()
    assert _leases(engine) == [], "videos left leased"
    got = snapshot(engine)
    for part in ("videos", "chunks", "vectors", "segments", "seeds"):
        assert got[part] == expected[part], part
    _record({"scenario": "index storm: coordinator and workers SIGKILLed, then workers killed mid-video",
             "store": engine.dialect.name, "recovered_s": round(max(recoveries), 2), "finished_s": round(finished_s, 2),
             "bound_s": float(ENGINE["broker__lease_s"]) + float(ENGINE["broker__sweep_every_s"]),  # type: ignore[arg-type]
             "left_leased": len(left), "kills": fleet.kills + 1, "load": round(os.getloadavg()[0], 2)})
