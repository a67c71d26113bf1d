"""PostgreSQL out of disk mid-build (issue 25, deliverable 7): a server of the test's own whose data folder is
a small tmpfs, filled to the last byte under a build served by real `playlisteval worker` processes for longer
than a lease, then freed. Pass: every item terminal with no manual step, nothing paid twice, events matching
attempts, no lease left, and the accepted questions those of a fault-free run; recovery time to the fault
log. Skipped where tmpfs cannot be mounted (not root) or PostgreSQL's binaries are missing."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine

from playlisteval.actors.build_run import build
from playlisteval.store import forget_engines, items
from tests.fault_helpers import FAST, Fleet, Recovery, RedisServer, assert_sound, bound_s, scalar, wait_until
from tests.helpers import QUIET_SIM, env_for, project, seeded_store
from tests.pg_server import PgServer, server_problem

pytestmark = pytest.mark.slow
CAP = 20.0
N_ITEMS = 8


@pytest.fixture
def small_disk_pg() -> Iterator[tuple[PgServer, Path]]:
    problem = server_problem()
    if problem:
        pytest.skip(f"a PostgreSQL server of the test's own is needed: {problem}")
    folder = Path(tempfile.mkdtemp(prefix="pe-pgfull-"))
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=160m", "tmpfs", str(folder)], capture_output=True)
    if mounted.returncode != 0:
        folder.rmdir()
        pytest.skip(f"cannot mount a small tmpfs for the data folder: {mounted.stderr.decode().strip()}")
    try:
        server = PgServer(folder).init()
        yield server, folder
        forget_engines()
        server.stop("immediate")
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


def _fill(folder: Path) -> Path:
    """Write a file until the disk is full (ENOSPC); the file."""
    filler = folder / "filler"
    chunk = b"\0" * (1 << 20)
    with filler.open("wb", buffering=0) as fh:
        try:
            while True:
                fh.write(chunk)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
        try:
            while True:
                fh.write(b"\0" * 4096)
        except OSError:
            pass
    return filler


def _questions(engine: Engine) -> list[tuple[str, str]]:
    with engine.connect() as conn:
        return sorted((r[0], r[1]) for r in conn.execute(text(
            "SELECT q.question, i.state FROM item i JOIN qa q ON q.id = i.current_qa_id")))


def test_postgresql_out_of_disk_mid_build_then_freed(tmp_path: Path, small_disk_pg: tuple[PgServer, Path]) -> None:
    pg, folder = small_disk_pg
    base: dict[str, object] = {**FAST, "sim__latency_s": 0.6, **QUIET_SIM}
    reference = project(tmp_path / "reference", **base)
    ref_engine = seeded_store(reference, N_ITEMS)
    build(reference, budget=CAP)
    expected = _questions(ref_engine)

    redis = RedisServer(tmp_path)
    redis.start()
    try:
        overrides: dict[str, object] = {**base, "broker__url": redis.url, "store__url": pg.url}
        settings = project(tmp_path / "proj", **overrides)
        engine = seeded_store(settings, N_ITEMS)
        assert build(settings, budget=CAP).enqueued == N_ITEMS
        with Fleet(tmp_path / "proj", env_for(**overrides), 2) as fleet:
            wait_until(lambda: int(scalar(engine, "SELECT COUNT(*) FROM model_call WHERE status = 'ok'")) >= 3, 60,
                       "the build to get going")
            filler = _fill(folder)
            full_s = float(overrides["broker__lease_s"]) * 2  # type: ignore[arg-type]
            time.sleep(full_s)
            os.remove(filler)
            rec = Recovery(f"PostgreSQL out of disk mid-build ({full_s:g} s), 2 workers", "postgresql",
                           bound_s(overrides))
            rec.notes["full_s"] = full_s
            rec.measure(engine, set(), finish_within=180)
            output = fleet.output()
        assert "No space left on device" in output or "could not extend" in output or \
            "No space" in (folder / "server.log").read_text(errors="replace"), "the disk was never found full"
        assert_sound(engine, CAP, output=output)
        assert items.counts(engine) == {"accepted": N_ITEMS}
        assert _questions(engine) == expected
    finally:
        redis.kill()
