"""A section's pure computation in a forked child (analytics/forked.py, issue 43): the same value as computed
here, computed here again when the child fails or dies, a child no one waits for ended, and the report's
page the same with the trust figures computed in a child as without."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from playlisteval.analytics import forked, section_threads
from playlisteval.analytics.tabular import Deferred, Section
from tests.test_report_cache import fresh, store  # noqa: F401 - the fixture

pytestmark = pytest.mark.skipif(not forked.ENABLED, reason="fork is used on Linux only")


def _stats(data: tuple[int, np.ndarray]) -> dict[str, Any]:
    seed, values = data
    rng = np.random.default_rng(seed)
    return {"pid": os.getpid(), "mean": float(values.mean()), "draws": rng.standard_normal(5).tolist()}


def _no_children() -> bool:
    try:
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


def test_the_child_computes_what_this_process_would() -> None:
    data = (7, np.linspace(0, 1, 10_001))
    got = forked.start(_stats, data, "test").result()
    here = _stats(data)
    assert got["pid"] != os.getpid()  # computed elsewhere ...
    assert {k: v for k, v in got.items() if k != "pid"} == {k: v for k, v in here.items() if k != "pid"}  # ... alike
    assert _no_children()


def _fails_in_the_child(parent: int) -> int:
    if os.getpid() != parent:
        raise RuntimeError("only in the child")
    return 41 + 1


def _dies_in_the_child(parent: int) -> int:
    if os.getpid() != parent:
        os.kill(os.getpid(), signal.SIGKILL)
    return 42


def _raises(_: None) -> int:
    raise ValueError("the computation's own error")


@pytest.mark.parametrize("compute", [_fails_in_the_child, _dies_in_the_child])
def test_a_child_that_fails_or_dies_is_computed_here(compute: Any) -> None:
    assert forked.start(compute, os.getpid(), "test").result() == 42
    assert _no_children()


def test_an_error_is_raised_here_as_the_computation_raises_it() -> None:
    child = forked.start(_raises, None, "test")
    with pytest.raises(ValueError, match="the computation's own error"):
        child.result()
    assert _no_children()


def _big(_: None) -> bytes:
    return b"x" * (4 << 20)  # more than a pipe holds: the child blocks until someone reads


def test_a_child_no_one_waits_for_is_ended() -> None:
    child = forked.start(_big, None, "test")
    time.sleep(0.2)
    child.cancel()
    assert _no_children()
    child.cancel()  # twice: nothing more


def test_where_fork_is_not_used_it_is_computed_here(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(forked, "ENABLED", False)
    got = forked.start(_stats, (7, np.arange(3.0)), "test").result()
    assert got["pid"] == os.getpid()


def test_a_failing_section_ends_the_children_started_beside_it() -> None:
    cancelled: list[str] = []
    made = threading.Event()

    def deferred() -> Deferred:
        made.set()
        return Deferred(lambda: Section("d", "D"), lambda: cancelled.append("d"))

    def fails() -> Section:
        made.wait(10)  # once the other section has started its work
        raise RuntimeError("a section failed")

    with pytest.raises(RuntimeError, match="a section failed"):
        section_threads.compute([("fails", fails), ("d", deferred)])
    assert cancelled == ["d"]


def test_the_page_is_the_same_with_the_trust_figures_from_a_child(store: Any, tmp_path: Path,  # noqa: F811
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    settings, engine = store
    calls: list[int] = []
    real = forked.Child.__init__

    def counted(self: Any, *args: Any, **kwargs: Any) -> None:
        calls.append(1)
        real(self, *args, **kwargs)

    monkeypatch.setattr(forked.Child, "__init__", counted)
    in_child = fresh(settings, engine, tmp_path / "child.html")
    assert calls  # the trust figures were started in a child
    monkeypatch.setattr(forked, "ENABLED", False)
    here = fresh(settings, engine, tmp_path / "here.html")
    assert in_child == here and "Power, paired comparisons" in here
    assert _no_children()
