"""Faults between machines (issue 25, deliverable 7): a worker on a host of its own (a network namespace joined
by a veth pair) reaches Redis and PostgreSQL only across the link; mid-step the host is cut off for longer
than its lease, then comes back. Pass: every item terminal with no manual step, nothing lost, nothing paid
twice, events matching attempts, no lease left, and the accepted questions those of a fault-free run. The
recovery time goes to ``PLAYLISTEVAL_FAULT_LOG`` with the rest of the fault table.

Skipped where ``ip netns`` cannot be used (no root, no iproute2)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine

from playlisteval.actors.build_run import build
from playlisteval.store import items
from tests.fault_helpers import (
    FAST,
    REPO,
    Fleet,
    Recovery,
    assert_sound,
    bound_s,
    scalar,
    wait_until,
    working_snapshot,
)
from tests.helpers import QUIET_SIM, env_for, project, seeded_store
from tests.netns_helpers import Host, Relay, netns_problem

pytestmark = pytest.mark.slow
CAP = 20.0
N_ITEMS = 8


@pytest.fixture
def host() -> Iterator[Host]:
    problem = netns_problem()
    if problem:
        pytest.skip(f"faults between hosts need network namespaces: {problem}")
    made = Host().up()
    yield made
    made.down()


def _questions(engine: Engine) -> list[tuple[str, str]]:
    with engine.connect() as conn:
        return sorted((r[0], r[1]) for r in conn.execute(text(
            "SELECT q.question, i.state FROM item i JOIN qa q ON q.id = i.current_qa_id")))


def test_a_worker_host_cut_off_mid_step_past_its_lease_then_back(tmp_path: Path, host: Host, pg_url: str) -> None:
    # cut off mid-transaction, the far worker's session would keep its locks (the budget's among them) until the
    # server's TCP gives up, hours: the server ends it after this many silent seconds (store/engine.py)
    idle_s = 5.0
    base: dict[str, object] = {**FAST, "sim__latency_s": 0.6, **QUIET_SIM, "store__idle_in_transaction_s": idle_s}
    # the fault-free run: in-process, same seeds
    reference = project(tmp_path / "reference", **base)
    ref_engine = seeded_store(reference, N_ITEMS)
    build(reference, budget=CAP)
    expected = _questions(ref_engine)
    assert len(expected) == N_ITEMS

    redis_port = _free_port(host.here)
    redis = subprocess.Popen([shutil.which("redis-server") or "redis-server", "--port", str(redis_port), "--bind",
                              f"127.0.0.1 {host.here}", "--save", "", "--appendonly", "no", "--protected-mode", "no",
                              "--dir", str(tmp_path)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    relay = Relay(host.here, ("127.0.0.1", 5432))
    root = tmp_path / "hosts"
    try:
        overrides: dict[str, object] = {**base, "broker__url": f"redis://127.0.0.1:{redis_port}/0",
                                        "store__url": pg_url}
        settings = project(root, **overrides)
        engine = seeded_store(settings, N_ITEMS)
        wait_until(lambda: _reachable("127.0.0.1", redis_port), 10, "redis")
        assert build(settings, budget=CAP).enqueued == N_ITEMS
        # the far host sees Redis and PostgreSQL at this side's veth address only
        far = {**overrides, "broker__url": f"redis://{host.here}:{redis_port}/0",
               "store__url": pg_url.replace("127.0.0.1:5432", f"{host.here}:{relay.port}")}
        log = (root / "far.log").open("ab")
        far_worker = subprocess.Popen(host.command(
            [sys.executable, "-m", "playlisteval.cli", "--project", str(root), "-v", "worker", "--threads", "2"]),
            env={**os.environ, "PYTHONPATH": str(REPO), **env_for(**far)}, stdout=log, stderr=subprocess.STDOUT)
        with Fleet(root, env_for(**overrides), 1) as fleet:  # the near host's worker
            try:
                wait_until(lambda: bool(working_snapshot(engine, held_by=far_worker.pid)), 60,
                           "the far worker to hold an item mid-step")
                held = working_snapshot(engine, held_by=far_worker.pid)
                host.cut()
                cut_s = float(overrides["broker__lease_s"]) * 2.5  # type: ignore[arg-type]
                rec = Recovery("worker host cut off mid-step past its lease (netns), then back", "postgresql",
                               bound_s(overrides) + idle_s)
                # while it is cut off, the near worker's sweeper takes back what the far one held
                rec.recovered_s = rec.wait_in_motion(engine, held, dead={far_worker.pid})
                time.sleep(max(0.0, cut_s - rec.recovered_s))
                host.restore()
                rec.notes.update(cut_s=cut_s, held_when_cut=len(held))
                rec.measure(engine, {far_worker.pid}, finish_within=180)
            finally:
                far_worker.terminate()
                try:
                    far_worker.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    far_worker.kill()
            output = fleet.output() + (root / "far.log").read_text(errors="replace")
        assert_sound(engine, CAP, output=output)
        assert items.counts(engine) == {"accepted": N_ITEMS}
        assert _questions(engine) == expected
        assert int(scalar(engine, "SELECT COUNT(*) FROM item WHERE lease_owner IS NOT NULL")) == 0
    finally:
        relay.close()
        redis.kill()
        redis.wait(timeout=10)


def _free_port(host_address: str) -> int:
    import socket

    with socket.socket() as s:
        s.bind((host_address, 0))
        return int(s.getsockname()[1])


def _reachable(address: str, port: int) -> bool:
    import socket

    try:
        with socket.create_connection((address, port), timeout=0.5):
            return True
    except OSError:
        return False
