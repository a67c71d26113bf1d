"""PostgreSQL restarted mid-build (issue 25, deliverable 7): a server of the test's own (tests/pg_server.py)
under a build served by real `playlisteval worker` processes is stopped (every connection dropped) for a few
seconds and started again. Pass: every item terminal with no manual step, nothing paid twice, events matching
attempts, no lease left, and the accepted questions those of a fault-free run; recovery time to the fault
log."""

from __future__ import annotations

import shutil
import tempfile
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
def pg_server() -> Iterator[PgServer]:
    problem = server_problem()
    if problem:
        pytest.skip(f"a PostgreSQL server of the test's own is needed: {problem}")
    # outside pytest's folders (mode 0700, owned by root): the server runs as postgres
    folder = Path(tempfile.mkdtemp(prefix="pe-pg-"))
    try:
        server = PgServer(folder).init()
        yield server
        forget_engines()
        server.stop("immediate")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _questions(engine: Engine) -> list[tuple[str, str]]:
    with engine.connect() as conn:
        return sorted((r[0], r[1]) for r in conn.execute(text(
            "SELECT q.question, i.state FROM item i JOIN qa q ON q.id = i.current_qa_id")))


def test_postgresql_restarted_mid_build_every_item_finishes_as_without_it(tmp_path: Path, pg_server: PgServer) -> None:
    base: dict[str, object] = {**FAST, "sim__latency_s": 0.6, **QUIET_SIM}
    reference = project(tmp_path / "reference", **base)
    ref_engine = seeded_store(reference, N_ITEMS)
    build(reference, budget=CAP)
    expected = _questions(ref_engine)
    assert len(expected) == N_ITEMS

    redis = RedisServer(tmp_path)
    redis.start()
    try:
        overrides: dict[str, object] = {**base, "broker__url": redis.url, "store__url": pg_server.url}
        settings = project(tmp_path / "proj", **overrides)
        engine = seeded_store(settings, N_ITEMS)
        assert build(settings, budget=CAP).enqueued == N_ITEMS
        with Fleet(tmp_path / "proj", env_for(**overrides), 2) as fleet:
            wait_until(lambda: int(scalar(engine, "SELECT COUNT(*) FROM model_call WHERE status = 'ok'")) >= 3, 60,
                       "the build to get going")
            engine.dispose()
            pg_server.restart(down_s=3.0)
            rec = Recovery("PostgreSQL restarted mid-build (down 3 s), 2 workers", "postgresql", bound_s(overrides))
            rec.notes["down_s"] = 3.0
            rec.measure(engine, set(), finish_within=180)
            output = fleet.output()
        assert_sound(engine, CAP, output=output)
        assert items.counts(engine) == {"accepted": N_ITEMS}
        assert _questions(engine) == expected
    finally:
        redis.kill()
