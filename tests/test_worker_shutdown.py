"""A busy `playlisteval worker` stops within a bounded time on SIGTERM whatever Redis does (issue 25,
deliverable 6): a real worker process mid-step, its own redis-server frozen (SIGSTOP), SIGTERM; it exits
within ``[broker] stop_timeout_s`` plus a margin and its item's lease is given back, not left to lapse."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from playlisteval.actors.build_run import build
from tests.fault_helpers import REPO, RedisServer, scalar, wait_until
from tests.helpers import QUIET_SIM, env_for, project, seeded_store

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("redis_fault", ["frozen", "healthy"])
def test_a_busy_worker_stops_soon_on_sigterm_and_gives_back_its_item(tmp_path: Path, redis_fault: str) -> None:
    server = RedisServer(tmp_path)
    server.start()
    overrides: dict[str, object] = {"broker__url": server.url, "broker__lease_s": 60, "broker__stop_timeout_s": 4,
                                    "broker__sweep_every_s": 1, "sim__latency_s": 30, **QUIET_SIM}
    settings = project(tmp_path, **overrides)
    engine = seeded_store(settings, 2)
    assert build(settings, budget=5.0).enqueued == 2
    log = (tmp_path / "worker.log").open("wb")
    proc = subprocess.Popen([sys.executable, "-m", "playlisteval.cli", "--project", str(tmp_path), "-v", "worker",
                             "--threads", "1"], env={**os.environ, "PYTHONPATH": str(REPO), **env_for(**overrides)},
                            stdout=log, stderr=subprocess.STDOUT)
    owner = f"%:{proc.pid}:%"  # host:pid:place.nonce/claim (store/identity.py)
    try:
        # busy: a step holds its item and waits on a 30-s model call
        wait_until(lambda: scalar(engine, "SELECT COUNT(*) FROM item WHERE lease_owner LIKE :o", o=owner) == 1,
                   60, "the worker to hold an item")
        if redis_fault == "frozen":
            server.pause()
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            pytest.fail(f"worker alive 15 s after SIGTERM (Redis {redis_fault})\n"
                        + (tmp_path / "worker.log").read_text(errors="replace")[-3000:])
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
        server.kill()
    output = (tmp_path / "worker.log").read_text(errors="replace")
    assert took < 4 + 8, (took, output[-2000:])
    held = scalar(engine, "SELECT COUNT(*) FROM item WHERE lease_owner LIKE :o AND lease_expires > :t",
                  o=owner, t=time.time())
    assert held == 0, output[-2000:]  # given back: the sweepers take it at once, not after the 60-s lease
    if redis_fault == "frozen":
        assert "worker.stopped_forcibly" in output and "lease.given_back" in output, output[-2000:]
