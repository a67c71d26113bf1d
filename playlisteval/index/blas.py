"""numpy's BLAS held at one thread while any caller in the process asks for it.

OpenBLAS spreads even a five-token MiniLM query or a small matrix-vector product over every core, and
on a busy machine its threads' waking and waiting cost more than the work (index/minilm.py,
index/vectors.py give the measurements). The limit is process-wide, so it is counted: the first caller
sets it and the last one out restores what was there before. Two threads each entering and leaving
threadpoolctl's own ``threadpool_limits`` could interleave so that the second restored the first's
limit of one, leaving BLAS on one thread for good (and threadpoolctl ignores a limit asked by any
thread but the first that set one: ``_set``); a lock around each product would instead serialize
callers that gain nothing from waiting for each other.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy  # noqa: F401  # loaded before threadpoolctl lists the process's libraries: its BLAS is the one limited

_lock = threading.Lock()
_holders = 0  # callers inside one_blas_thread right now
_restore: list[tuple[Any, int]] = []  # (library, its thread count before) while _holders > 0
_libraries: list[Any] | None = None  # threadpoolctl's controllers of the BLAS libraries, listed once


def _blas_libraries() -> list[Any]:
    """The process's BLAS libraries as threadpoolctl finds them (none without threadpoolctl). Listed once:
    listing costs 0.2 ms, a limit a few microseconds."""
    global _libraries
    if _libraries is None:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:
            _libraries = []
        else:
            _libraries = [lib for lib in ThreadpoolController().lib_controllers if lib.user_api == "blas"]
    return _libraries


def _set(lib: Any, threads: int) -> None:
    # threadpoolctl lets only the first Python thread that set an OpenBLAS (pthreads) limit set one again,
    # and ignores every other thread's without a word: in a worker thread the limit was silently not
    # applied. The count here is process-wide and decided by all callers together, so it is set directly.
    getattr(lib, "_real_set_num_threads", lib.set_num_threads)(threads)


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """BLAS on one thread for the block, whichever threads of the process are in such a block too."""
    global _holders
    libraries = _blas_libraries()
    shared = [lib for lib in libraries if lib.threading_layer != "openmp"]
    own = [(lib, lib.get_num_threads()) for lib in libraries if lib.threading_layer == "openmp"]
    for lib, _ in own:  # an OpenMP BLAS keeps a limit per thread: this thread's, set and restored here
        _set(lib, 1)
    with _lock:
        if _holders == 0:
            _restore[:] = [(lib, lib.get_num_threads()) for lib in shared]
            for lib in shared:
                _set(lib, 1)
        _holders += 1
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0:
                for lib, threads in _restore:
                    _set(lib, threads)
                _restore.clear()
        for lib, threads in own:
            _set(lib, threads)


def blas_threads() -> int | None:
    """BLAS's thread count now (the first BLAS library's), None without threadpoolctl: for tests."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return None
    found = [int(lib["num_threads"]) for lib in threadpool_info() if lib.get("user_api") == "blas"]
    return found[0] if found else None
