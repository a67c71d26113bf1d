"""Two workers with one hostname in two PID namespaces (issue 44, deliverable 1): what Docker ``--network host``
or Kubernetes ``hostNetwork`` gives a container beside a worker of the host. With ``host:pid`` owners and a
pid check, the one in its own namespace saw the other's pid as dead and took its live leases at every sweep
(paid steps thrown away, videos indexed twice). Now each build and index ends with no lease lost, the spend
and the questions of a fault-free run, and the same chunks, vectors, segments and seeds.

One worker runs in this machine's PID namespace, the other under ``unshare --pid --fork`` (root needed; the
test is skipped without it), where the first one's pid does not exist.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine

from playlisteval.actors.build_run import build
from playlisteval.actors.indexing import index_collection
from playlisteval.index.collection import add_paths
from playlisteval.models.budget import spend
from playlisteval.store import identity, items
from tests.fault_helpers import FAST, REPO, RedisServer, all_terminal, assert_sound, scalar, wait_until
from tests.helpers import QUIET_SIM, env_for, project, seeded_store
from tests.test_index_faults import INDEX, _media, snapshot

pytestmark = pytest.mark.slow
CAP = 20.0
N_ITEMS = 8
LOST = ("lease.lost", "lease_lost")


def _unshare_problem() -> str:
    exe = shutil.which("unshare")
    if exe is None:
        return "unshare is not installed"
    if os.geteuid() != 0:
        return "a PID namespace needs root"
    done = subprocess.run([exe, "--pid", "--fork", "--", sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, timeout=30, check=False)
    return "" if done.returncode == 0 and done.stdout.strip() == "1" else f"unshare failed: {done.stderr.strip()}"


class Worker:
    """A real `playlisteval worker`, in this PID namespace or (``own_namespace``) in a new one of its own."""

    def __init__(self, project_dir: Path, env: dict[str, str], log: Path, *, own_namespace: bool) -> None:
        command = [sys.executable, "-m", "playlisteval.cli", "--project", str(project_dir), "-v", "worker",
                   "--threads", "2"]
        if own_namespace:  # the worker is pid 1 of its namespace; unshare waits for it
            command = ["unshare", "--pid", "--fork", "--kill-child=SIGKILL", "--", *command]
        self.log = log
        with log.open("ab") as out:
            self.proc = subprocess.Popen(command, env={**os.environ, "PYTHONPATH": str(REPO), **env},
                                         stdout=out, stderr=subprocess.STDOUT)
        self.own_namespace = own_namespace

    def _worker_pid(self) -> int:
        """The worker's pid as this namespace sees it (unshare's child, when it runs in a namespace of its own)."""
        if not self.own_namespace:
            return self.proc.pid
        try:
            children = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children").read_text().split()
        except OSError:
            return -1
        return int(children[0]) if children else -1

    def stop(self) -> None:
        """SIGTERM to the worker itself (unshare does not pass it on), then wait for it."""
        pid = self._worker_pid()
        if self.proc.poll() is None and pid > 0:
            os.kill(pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()  # unshare's --kill-child takes the worker with it
            self.proc.wait()

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    problem = _unshare_problem()
    if problem:
        pytest.skip(f"two PID namespaces need unshare: {problem}")
    server = RedisServer(tmp_path)
    server.start()
    yield server
    server.kill()


def _index_real_videos_only(engine: Engine) -> None:
    """Set aside the seeds' made-up videos (no file behind them): an indexed video whose file is gone is never
    reported by a worker's re-embedding, and a coordinator on Redis would wait ``wait_stall_s`` for it."""
    with engine.begin() as conn:
        conn.execute(text("UPDATE video SET status = 'skipped', reason = 'made up'"))


def _questions(engine: Engine) -> list[tuple[str, str]]:
    with engine.connect() as conn:
        return sorted((r[0], r[1]) for r in conn.execute(text(
            "SELECT q.question, i.state FROM item i JOIN qa q ON q.id = i.current_qa_id")))


def _workers_seen(engine: Engine) -> set[str]:
    """The namespaces (identity places) of the processes that made model calls."""
    with engine.connect() as conn:
        return {identity.parse(str(w)).place for (w,) in conn.execute(text("SELECT DISTINCT worker FROM model_call"))}


def test_two_workers_of_one_hostname_in_two_pid_namespaces_build_and_index_as_a_fault_free_run(
        tmp_path: Path, redis_server: RedisServer) -> None:
    # steps and videos of a few seconds, leases of 6 s and a sweep every second: a holder judged dead by its
    # pid would lose what it holds within a sweep or two
    base: dict[str, object] = {**FAST, "broker__lease_s": 6, "sim__latency_s": 0.5, **QUIET_SIM, **INDEX}
    reference = project(tmp_path / "reference", **base, index__threads=2)
    ref_engine = seeded_store(reference, N_ITEMS)
    build(reference, budget=CAP)
    media = _media(tmp_path / "shared", 4)
    _index_real_videos_only(ref_engine)
    add_paths(ref_engine, "Engineering", [media])
    assert index_collection(reference, ref_engine).videos_indexed == 4
    expected_spend, expected_questions = spend(ref_engine).committed, _questions(ref_engine)
    expected_index = snapshot(ref_engine)

    root = tmp_path / "fleet"
    overrides = {**base, "broker__url": redis_server.url, "index__threads": 0}
    settings = project(root, **overrides)
    engine = seeded_store(settings, N_ITEMS)
    env = env_for(**overrides)
    workers = [Worker(root, env, root / "host.log", own_namespace=False),
               Worker(root, env, root / "unshared.log", own_namespace=True)]
    try:
        assert build(settings, budget=CAP).enqueued == N_ITEMS
        wait_until(lambda: all_terminal(engine), 240, "the build to finish on the two workers")
        _index_real_videos_only(engine)
        add_paths(engine, "Engineering", [media])  # after the build: the simulated world knows none of them
        report = index_collection(settings, engine)
        assert (report.videos_indexed, report.unfinished, report.held) == (4, [], [])
    finally:
        for worker in workers:
            worker.stop()
    output = "\n".join(w.output() for w in workers)
    assert not [line for line in output.splitlines() if any(word in line for word in LOST)], output[-3000:]
    assert_sound(engine, CAP, output=output)
    assert items.counts(engine) == items.counts(ref_engine)
    assert _questions(engine) == expected_questions
    assert round(spend(engine).committed, 9) == round(expected_spend, 9)  # nothing paid twice or thrown away
    assert len(_workers_seen(engine)) == 2, "both namespaces did some of the build"
    assert snapshot(engine) == expected_index
    assert int(scalar(engine, "SELECT COUNT(*) FROM video WHERE lease_owner != ''")) == 0
