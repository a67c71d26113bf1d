"""Shared machinery of the fault-injection suite (issue 10, deliverable 6): a Redis server the test can
kill, restart empty or freeze, a fleet of real `playlisteval worker` processes, the recovery clock, and
the checks every scenario ends with (every item terminal, nothing paid twice, one event per attempt,
spend within the cap).

Recovery time: from the moment a fault ends to the moment every item the fault left in a working state
is moving again (claimed anew by a live worker or a step further on). The engine promises this within
``lease_s + sweep_grace_s`` (plus the sweeper's period); the scenarios wait for it with that bound plus
a slack for a loaded machine, and record what they measured (``PLAYLISTEVAL_FAULT_LOG``: one JSON line per
scenario, for the README's table).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine

from playlisteval.models.budget import spend
from playlisteval.store import identity, items
from playlisteval.store.states import TERMINAL, WORKING
from tests.conftest import free_port

REPO = Path(__file__).resolve().parents[1]
TERMINAL_VALUES = {s.value for s in TERMINAL}
WORKING_VALUES = {s.value for s in WORKING}

#: Short leases and a busy sweeper, so that a scenario's recovery takes seconds, not minutes.
FAST: dict[str, object] = dict(broker__lease_s=4, broker__sweep_every_s=1, broker__sweep_grace_s=2,
                               store__busy_timeout_s=30)
#: Time a loaded two-core machine may add on top of the engine's bound (process starts, a step's calls).
SLACK_S = 30.0


def bound_s(overrides: dict[str, object]) -> float:
    """What the engine promises: a lost item is moving again within lease + grace (+ one sweep)."""
    return float(overrides["broker__lease_s"]) + float(overrides["broker__sweep_grace_s"]) + float(  # type: ignore[arg-type]
        overrides["broker__sweep_every_s"])  # type: ignore[arg-type]


# -- Redis ----------------------------------------------------------------------------------------
class RedisServer:
    """A redis-server of the test's own: killed (SIGKILL), restarted empty, or frozen (SIGSTOP)."""

    def __init__(self, folder: Path) -> None:
        self.folder, self.port = folder, free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        exe = shutil.which("redis-server")
        if exe is None:
            pytest.fail("redis-server is not installed (make test installs it)")
        self.proc = subprocess.Popen([exe, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                                      "--appendonly", "no", "--dir", str(self.folder)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.05)
        raise AssertionError("redis-server did not start")

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)  # a frozen server must be able to die
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=10)

    def pause(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGSTOP)

    def cont(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGCONT)


# -- worker processes -----------------------------------------------------------------------------
@dataclass
class Fleet:
    """``n`` real `playlisteval worker` processes on one project, each logging to its own file."""

    project_dir: Path
    env: dict[str, str]
    n: int
    threads: int = 2
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    logs: list[Path] = field(default_factory=list)
    kills: int = 0

    def __enter__(self) -> Fleet:
        for i in range(self.n):
            self.logs.append(self.project_dir / f"worker{i}.log")
            self.procs.append(self._spawn(i))
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _spawn(self, i: int) -> subprocess.Popen[bytes]:
        env = {**os.environ, "PYTHONPATH": str(REPO), **self.env}
        with self.logs[i].open("ab") as log:
            return subprocess.Popen(
                [sys.executable, "-m", "playlisteval.cli", "--project", str(self.project_dir), "-v", "worker",
                 "--threads", str(self.threads)], env=env, stdout=log, stderr=subprocess.STDOUT)

    def kill(self, i: int) -> None:
        """SIGKILL worker ``i`` (no cleanup of any kind: leases, slots and messages stay behind)."""
        proc = self.procs[i]
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=10)
            self.kills += 1

    def kill_all(self, *others: subprocess.Popen[bytes]) -> None:
        """SIGKILL every worker (and ``others``) at once, then reap them: no worker finishes its step
        between one kill and the next."""
        alive = [p for p in (*self.procs, *others) if p.poll() is None]
        for proc in alive:
            proc.send_signal(signal.SIGKILL)
        for proc in alive:
            proc.wait(timeout=10)
        self.kills += sum(1 for p in alive if p in self.procs)

    def restart(self, i: int) -> None:
        self.kill(i)
        self.procs[i] = self._spawn(i)

    def pids(self) -> list[int]:
        return [p.pid for p in self.procs if p.poll() is None]

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def output(self) -> str:
        return "\n".join(log.read_text(errors="replace") for log in self.logs if log.exists())


# -- waiting and measuring ------------------------------------------------------------------------
def scalar(engine: Engine, sql: str, **params: Any) -> Any:
    with engine.connect() as conn:
        return conn.execute(text(sql), params).scalar()


def wait_until(predicate: Callable[[], bool], timeout: float, what: str) -> float:
    """Poll ``predicate``; the seconds it took (an AssertionError naming ``what`` after ``timeout``)."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        try:
            if predicate():
                return time.monotonic() - start
        except Exception:  # noqa: BLE001  (the store may be the thing that is down)
            pass
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")


def all_terminal(engine: Engine) -> bool:
    counts = items.counts(engine)
    return bool(counts) and all(state in TERMINAL_VALUES for state in counts)


def working_snapshot(engine: Engine, held_by: int | None = None) -> dict[int, tuple[int, str | None]]:
    """Working items (those whose lease process ``held_by`` holds, if given): id → (version, lease holder)."""
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT id, state, version, lease_owner FROM item ORDER BY id")).all()
    return {int(r[0]): (int(r[2]), r[3]) for r in rows if r[1] in WORKING_VALUES
            and (held_by is None or (r[3] is not None and _pid_of(r[3]) == held_by))}


def in_motion(engine: Engine, before: dict[int, tuple[int, str | None]], dead: set[int]) -> bool:
    """Every item of ``before`` has moved on a step, or is held by a new claim of a live process."""
    with engine.connect() as conn:
        rows = {int(r[0]): (r[1], int(r[2]), r[3]) for r in conn.execute(
            text("SELECT id, state, version, lease_owner FROM item"))}
    for item_id, (version, owner) in before.items():
        state, now_version, now_owner = rows[item_id]
        if now_version > version or state in TERMINAL_VALUES:
            continue
        if now_owner is not None and now_owner != owner and _pid_of(now_owner) not in dead:
            continue
        return False
    return True


def _pid_of(token: str) -> int:
    return identity.parse(token).pid


@dataclass
class Recovery:
    """The clock of one fault: started when the fault ends, stopped when every item it left behind
    is moving again, and again when every item is terminal."""

    scenario: str
    store: str
    bound: float
    recovered_s: float = float("nan")
    finished_s: float = float("nan")
    notes: dict[str, Any] = field(default_factory=dict)

    def wait_in_motion(self, engine: Engine, before: dict[int, tuple[int, str | None]], dead: set[int]) -> float:
        """Seconds until every item of ``before`` moves again (within the bound + slack)."""
        return wait_until(lambda: in_motion(engine, before, dead), self.bound + SLACK_S,
                          f"{self.scenario}: {len(before)} items to move again (bound {self.bound:g}s)")

    def measure(self, engine: Engine, dead_pids: set[int] | None = None, finish_within: float = 120) -> None:
        """Call right after the fault ended: waits for recovery (within bound + slack), then the finish."""
        t0 = time.monotonic()
        before = working_snapshot(engine)
        self.notes["left_working"] = len(before)
        recovered = self.wait_in_motion(engine, before, dead_pids or set())
        self.recovered_s = max(recovered, self.recovered_s) if self.recovered_s == self.recovered_s else recovered
        wait_until(lambda: all_terminal(engine), finish_within, f"{self.scenario}: every item to finish unaided")
        self.finished_s = time.monotonic() - t0
        self.report()

    def report(self) -> None:
        row = {"scenario": self.scenario, "store": self.store, "recovered_s": round(self.recovered_s, 2),
               "finished_s": round(self.finished_s, 2), "bound_s": self.bound,
               "load": round(os.getloadavg()[0], 2), **self.notes}
        print("FAULT", json.dumps(row))
        path = os.environ.get("PLAYLISTEVAL_FAULT_LOG")
        if path:
            with open(path, "a") as fh:
                fh.write(json.dumps(row) + "\n")


# -- what every scenario ends with ----------------------------------------------------------------
def paid_twice(engine: Engine) -> list[str]:
    """Request hashes with two `ok` ledger rows (the answer paid for twice)."""
    with engine.connect() as conn:
        rows = conn.execute(text(
            "SELECT request_hash FROM model_call WHERE status = 'ok' GROUP BY request_hash, role "
            "HAVING COUNT(*) > 1")).all()
    return [r[0] for r in rows]


def events_match_attempts(engine: Engine) -> list[str]:
    """Items whose events disagree with their attempts: one event per committed step, versions 1…n, as
    many Phase I / Phase II generation events as attempts (a step committed twice breaks one of these)."""
    with engine.connect() as conn:
        rows = conn.execute(text(
            "SELECT i.id, i.phase1_attempts, i.phase2_attempts, i.version, "
            "SUM(CASE WHEN e.from_state = 'pending' THEN 1 ELSE 0 END), "
            "SUM(CASE WHEN e.from_state = 'gated' THEN 1 ELSE 0 END), COUNT(e.id), "
            "COUNT(DISTINCT e.version), MAX(e.version) "
            "FROM item i LEFT JOIN item_event e ON e.item_id = i.id "
            "GROUP BY i.id, i.phase1_attempts, i.phase2_attempts, i.version ORDER BY i.id")).all()
    bad = []
    for item_id, p1, p2, version, gen1, gen2, n, distinct, top in rows:
        if (int(gen1 or 0), int(gen2 or 0)) != (p1, p2) or not (n == distinct == version == int(top or 0)):
            bad.append(f"item {item_id}: attempts {p1}/{p2}, generations {gen1}/{gen2}, {n} events, "
                       f"version {version}")
    return bad


def assert_sound(engine: Engine, cap: float, *, output: str = "", allow_failed: bool = False) -> None:
    """Every item terminal, none failed (unless allowed), nothing paid twice, events == attempts, no call
    left in flight, spend (paid + open reservations) within the cap."""
    counts = items.counts(engine)
    assert all(s in TERMINAL_VALUES for s in counts), counts
    if not allow_failed:
        with engine.connect() as conn:
            errors = conn.execute(text("SELECT id, error FROM item WHERE state = 'failed'")).all()
        assert not errors, f"failed items: {errors}\n{output[-3000:]}"
    # (this module's asserts are not rewritten by pytest: each says what it found)
    twice = paid_twice(engine)
    assert twice == [], f"requests with two `ok` ledger rows: {twice}"
    mismatched = events_match_attempts(engine)
    assert mismatched == [], f"events != attempts: {mismatched}"
    with engine.connect() as conn:
        flying = conn.execute(text("SELECT id, role, worker, item_id FROM model_call WHERE status = 'in_flight'")).all()
        leased = conn.execute(text("SELECT id, state, lease_owner FROM item WHERE lease_owner IS NOT NULL")).all()
    assert not flying, f"calls left in flight: {flying}\n{output[-3000:]}"
    money = spend(engine)
    assert money.committed <= cap + 1e-9, f"spend {money} over the cap {cap}"
    assert not leased, f"items left leased: {leased}\n{output[-3000:]}"
