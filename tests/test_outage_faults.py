"""A store or broker outage logs one warning per worker, not a traceback per attempt (issue 44, deliverable
5): real `playlisteval worker` processes on a Redis and a PostgreSQL server of the test's own build a seeded
project; PostgreSQL is stopped for a few seconds mid-build (every connection refused) and started again.
Pass: each worker's log holds at most one "store unreachable" warning and then one "store reachable again"
line, no traceback, and the build ends as the fault-free run does (the same accepted questions, the same
spend, nothing paid twice)."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine

from playlisteval.actors.build_run import build
from playlisteval.models.budget import spend
from playlisteval.store import items
from tests.fault_helpers import FAST, Fleet, RedisServer, all_terminal, assert_sound, scalar, wait_until
from tests.helpers import QUIET_SIM, env_for, project, seeded_store
from tests.pg_server import own_pg

pytestmark = pytest.mark.slow
CAP = 20.0
N_ITEMS = 4
DOWN_S = 5.0


def _questions(engine: Engine) -> list[tuple[str, str]]:
    with engine.connect() as conn:
        return sorted((r[0], r[1]) for r in conn.execute(text(
            "SELECT q.question, i.state FROM item i JOIN qa q ON q.id = i.current_qa_id")))


def test_a_postgresql_outage_is_one_warning_per_worker_not_a_traceback_per_attempt(tmp_path: Path) -> None:
    base: dict[str, object] = {**FAST, "sim__latency_s": 0.3, **QUIET_SIM}
    reference = project(tmp_path / "reference", **base)
    ref_engine = seeded_store(reference, N_ITEMS)
    build(reference, budget=CAP)
    expected, expected_spend = _questions(ref_engine), spend(ref_engine)
    assert len(expected) == N_ITEMS and expected_spend.paid > 0

    redis = RedisServer(tmp_path)
    redis.start()
    try:
        with own_pg() as pg:
            overrides: dict[str, object] = {**base, "broker__url": redis.url, "store__url": pg.url}
            settings = project(tmp_path / "proj", **overrides)
            engine = seeded_store(settings, N_ITEMS)
            assert build(settings, budget=CAP).enqueued == N_ITEMS
            with Fleet(tmp_path / "proj", env_for(**overrides), 2) as fleet:
                wait_until(lambda: int(scalar(engine, "SELECT COUNT(*) FROM model_call WHERE status = 'ok'")) >= 2,
                           60, "the build to get going")
                engine.dispose()
                pg.restart(down_s=DOWN_S)
                wait_until(lambda: all_terminal(engine), 120, "every item to finish after the outage")
                time.sleep(1.5)  # a sweep after the last step: every worker has reached the store again
                logs = {log.name: log.read_text(errors="replace") for log in fleet.logs}
                output = fleet.output()
            assert_sound(engine, CAP, output=output)
            assert items.counts(engine) == {"accepted": N_ITEMS}
            assert _questions(engine) == expected
            # paid, not committed: a call the outage cut short stays counted at its estimate as
            # "interrupted" (the budget's fail-closed view); what was paid is the fault-free run's
            money = spend(engine)
            with engine.connect() as conn:
                ledger = conn.execute(text(
                    "SELECT role, status, COUNT(*), SUM(usd), SUM(estimated_usd) FROM model_call "
                    "GROUP BY role, status ORDER BY role, status")).all()
            assert money.paid == pytest.approx(expected_spend.paid, abs=1e-9), f"{money} vs {expected_spend}: {ledger}"
    finally:
        redis.kill()

    assert_one_warning_per_worker("store", logs, output)


def test_a_redis_outage_is_one_warning_per_worker_not_a_traceback_per_attempt(tmp_path: Path) -> None:
    """Redis killed and restarted empty: every worker's consumers, sweeper and sends meet it; the sweeper
    sends the lost messages again."""
    redis = RedisServer(tmp_path)
    redis.start()
    try:
        overrides: dict[str, object] = {**FAST, "sim__latency_s": 0.3, **QUIET_SIM, "broker__url": redis.url}
        settings = project(tmp_path / "proj", **overrides)
        engine = seeded_store(settings, N_ITEMS)
        assert build(settings, budget=CAP).enqueued == N_ITEMS
        with Fleet(tmp_path / "proj", env_for(**overrides), 2) as fleet:
            wait_until(lambda: int(scalar(engine, "SELECT COUNT(*) FROM model_call WHERE status = 'ok'")) >= 2,
                       60, "the build to get going")
            redis.kill()
            time.sleep(DOWN_S)
            redis.start()
            wait_until(lambda: all_terminal(engine), 120, "every item to finish after the outage")
            time.sleep(1.5)  # a sweep after the last step: every worker has reached Redis again
            logs = {log.name: log.read_text(errors="replace") for log in fleet.logs}
            output = fleet.output()
        assert_sound(engine, CAP, output=output)
        assert items.counts(engine) == {"accepted": N_ITEMS}
    finally:
        redis.kill()
    assert_one_warning_per_worker("broker", logs, output)


def assert_one_warning_per_worker(what: str, logs: dict[str, str], output: str) -> None:
    """No traceback; per worker at most one "<what> unreachable" warning, and as many "reachable again"
    lines; at least one worker noticed (else the test proved nothing)."""
    down = re.compile(rf"{what} unreachable: .+; retrying")
    back = re.compile(rf"{what} reachable again after [\d.]+ s, \d+ attempts")
    seen = 0
    for name, log in logs.items():
        assert "Traceback" not in log, f"{name}:\n{log[-4000:]}"
        n_down, n_back = len(down.findall(log)), len(back.findall(log))
        assert n_down <= 1 and n_back == n_down, f"{name}: {n_down} warnings, {n_back} ends\n{log[-4000:]}"
        seen += n_down
    assert seen >= 1, f"no worker noticed the outage:\n{output[-4000:]}"
