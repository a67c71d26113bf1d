"""One BLAS thread asked for by several threads at once (index/blas.py): held while any of them is inside,
and what was there before restored by the last one out, however their entries and exits interleave."""

from __future__ import annotations

import threading

import pytest

from playlisteval.index.blas import blas_threads, one_blas_thread

threadpoolctl = pytest.importorskip("threadpoolctl")


def _inside(entered: threading.Event, leave: threading.Event) -> threading.Thread:
    def hold() -> None:
        with one_blas_thread():
            entered.set()
            assert leave.wait(10)

    thread = threading.Thread(target=hold)
    thread.start()
    assert entered.wait(10)
    return thread


def test_the_limit_holds_until_the_last_caller_leaves_and_is_then_restored() -> None:
    if blas_threads() is None:
        pytest.skip("no BLAS library that threadpoolctl controls")
    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):  # a known starting point above one
        assert blas_threads() == 2
        first_in, first_out, second_in, second_out = (threading.Event() for _ in range(4))
        first = _inside(first_in, first_out)
        second = _inside(second_in, second_out)
        assert blas_threads() == 1
        first_out.set()  # the first to enter leaves first: the second is still inside
        first.join(10)
        assert blas_threads() == 1
        second_out.set()
        second.join(10)
        # threadpoolctl's own limits, entered and left in this order, would leave BLAS on one thread here
        assert blas_threads() == 2


def test_one_caller_in_one_thread() -> None:
    if blas_threads() is None:
        pytest.skip("no BLAS library that threadpoolctl controls")
    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        with one_blas_thread():
            assert blas_threads() == 1
            with one_blas_thread():  # nested in the same thread
                assert blas_threads() == 1
            assert blas_threads() == 1
        assert blas_threads() == 2
