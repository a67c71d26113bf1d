"""index/heap.py (issue 43): freed C-heap pages go back to the system, as the kernel's count of resident
pages says (``/proc/self/statm``), not as the function says of itself."""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import sys
from collections.abc import Iterator

import pytest

from playlisteval.index import heap

BLOCK, BLOCKS = 64 * 1024, 1024  # 64 MiB in blocks under glibc's mmap threshold: they live in the heap


def _resident_bytes() -> int:
    with open("/proc/self/statm", encoding="ascii") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _glibc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    return libc if hasattr(libc, "malloc_trim") else None


@contextlib.contextmanager
def _freed_heap() -> Iterator[None]:
    """BLOCKS x BLOCK made resident and freed inside the heap, under a block kept until the end: free()
    alone cannot shrink the heap past it, so only a release gives those pages back."""
    libc = _glibc()
    if libc is None:
        pytest.skip("malloc_trim is glibc's")
    libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    blocks = [libc.malloc(BLOCK) for _ in range(BLOCKS)]
    pin = libc.malloc(BLOCK)
    try:
        for b in blocks:
            ctypes.memset(b, 1, BLOCK)  # resident, not only reserved
        for b in blocks:
            libc.free(b)
        yield
    finally:
        libc.free(pin)


def test_give_back_returns_freed_heap_pages() -> None:
    with _freed_heap():
        before = _resident_bytes()
        assert heap.give_back() is True
        after = _resident_bytes()
    assert before - after >= BLOCK * BLOCKS // 2


def test_give_back_twice_is_harmless() -> None:
    heap.give_back()
    assert heap.give_back() in (True, False)  # nothing left to release is not an error


def test_with_slack_pages_go_back_only_once_the_resident_set_grew_by_it() -> None:
    if _glibc() is None:
        pytest.skip("malloc_trim is glibc's")
    heap.give_back()  # the baseline: the resident set just after a release
    assert heap.give_back(slack=BLOCK * BLOCKS) is False  # nothing grew: the freed pages stay for reuse
    with _freed_heap():
        before = _resident_bytes()
        assert heap.give_back(slack=BLOCK * BLOCKS * 4) is False  # grown by less than the slack: kept
        assert _resident_bytes() >= before - BLOCK * 16
        assert heap.give_back(slack=BLOCK * BLOCKS // 4) is True  # grown by more: released
        assert before - _resident_bytes() >= BLOCK * BLOCKS // 2
