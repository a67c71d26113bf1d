"""`bench steps` reports how busy SQLite's one write lock was (bench/steps_speed.py): what it counts."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from sqlalchemy import text

from bench.steps_speed import _watch_write_lock, ceilings
from playlisteval.store.engine import make_engine, read_core


def test_the_write_lock_is_held_from_begin_immediate_to_the_end_of_commit_or_rollback(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path}/t.db")
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE t (x INTEGER)"))
    held = _watch_write_lock(engine)
    with engine.begin() as conn:  # a write transaction: counted, with what it did inside
        conn.execute(text("INSERT INTO t VALUES (1)"))
        time.sleep(0.05)
    with read_core(engine) as conn:  # deferred, no write lock: not counted
        conn.execute(text("SELECT count(*) FROM t")).scalar()
        time.sleep(0.05)
    with pytest.raises(RuntimeError), engine.begin() as conn:  # rolled back: counted until the rollback
        conn.execute(text("INSERT INTO t VALUES (2)"))
        raise RuntimeError("the step failed")
    assert len(held) == 2
    assert held[0] >= 0.05 and held[1] < 0.05
    with engine.connect() as conn:  # the watch changed nothing the store does
        assert conn.execute(text("SELECT x FROM t")).scalars().all() == [1]
    engine.dispose()


def test_the_ceilings_are_one_core_and_the_write_lock() -> None:
    line = ceilings({"per_s": 120.0, "cpu_ms_per_transition": 8.0, "cpu_pct_of_wall": 100.0,
                     "write_held_ms_per_transition": 4.0, "write_held_pct_of_wall": 48.0, "write_transactions": 10})
    assert "one core 125/s" in line and "the write lock 250/s" in line and "held 48 % of wall" in line
