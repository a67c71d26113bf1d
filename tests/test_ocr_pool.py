"""index/ocr_pool.py (issue 43): engines loaded ahead on a thread of their own, a reading that comes meanwhile
waits for them instead of loading one more, and a failed warm-up is raised by the reading that needs it."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from playlisteval.index.ocr_pool import EnginePool


class Loads:
    def __init__(self, seconds: float = 0.0, fail: bool = False) -> None:
        self.made: list[tuple[int, str]] = []
        self.seconds, self.fail = seconds, fail

    def __call__(self, threads: int) -> Any:
        time.sleep(self.seconds)
        self.made.append((threads, threading.current_thread().name))
        if self.fail:
            raise RuntimeError("the model file is broken")
        return object()


def test_a_warm_up_loads_on_its_own_thread_and_a_reading_waits_for_it() -> None:
    loads = Loads(seconds=0.2)
    pool = EnginePool(loads)
    pool.threads = 2
    pool.warm(1, 0)  # one of one thread for detection ahead, then the reader's (the pool's setting)
    threads, engine = pool.take()  # at once: the warm-up is still loading
    assert threads == 2 and engine is not None
    assert sorted(loads.made) == [(1, "ocr-warm"), (2, "ocr-warm")] and pool.loaded == 2
    assert pool.take(1)[0] == 1 and pool.loaded == 2  # the other one was loaded too, not again


def test_no_warm_up_when_the_engines_are_idle_already() -> None:
    loads = Loads()
    pool = EnginePool(loads)
    engines = [pool.take(1), pool.take(1)]
    for e in engines:
        pool.give(*e)
    pool.warm(1, 1)
    assert pool._warm is None  # no thread started at all, not merely none finished yet
    assert pool.loaded == 2 and len(loads.made) == 2


def test_a_failed_warm_up_is_raised_by_the_reading_that_needs_the_engine() -> None:
    loads = Loads(fail=True)
    pool = EnginePool(loads)
    pool.warm(0)
    with pytest.raises(RuntimeError, match="broken"):
        pool.take()
    assert [name for _, name in loads.made] == ["ocr-warm", "MainThread"]


def test_each_engine_is_lent_as_soon_as_it_is_loaded_and_idle_ones_are_not_loaded_again() -> None:
    loads = Loads(seconds=0.3)
    pool = EnginePool(loads)
    pool.threads = 2
    pool.give(1, object())  # one of one thread is idle already
    pool.warm(1, 1, 0)  # so one more of one thread, then the reader's
    started = time.monotonic()
    assert pool.take(1)[0] == 1 and pool.take(1)[0] == 1  # the idle one, then the first loaded
    assert time.monotonic() - started < 0.55  # not after both loads
    assert pool.take()[0] == 2
    assert [t for t, _ in loads.made] == [1, 2] and pool.loaded == 2


def test_the_first_warm_up_freezes_what_it_loaded_for_the_collector_and_only_the_first() -> None:
    import gc

    gc.unfreeze()
    try:
        pool = EnginePool(Loads())
        pool.warm(1)
        pool.take(1)
        assert pool.froze and gc.get_freeze_count() > 0
        gc.unfreeze()
        pool.warm(1, 1)  # two more of one thread (the first is lent): loaded, the process not frozen again
        pool.take(1)
        assert pool.loaded == 3 and gc.get_freeze_count() == 0
    finally:
        gc.unfreeze()
