"""Giving the C heap's freed memory back to the system while `index` works (issue 43, deliverable 3).

What a video's frames and OCR allocate outside Python (decoded pictures, ONNX Runtime's tensors for
crops of ever-new shapes, PIL buffers) is freed once read, but glibc keeps freed blocks below its top
in each thread's arena for reuse, and with several threads (a video per index thread, a frame reader
each, ONNX's) those arenas hold more and more of the pages ever touched: measured on camera-like
720p, OCR of 80 kept frames in one thread left 416 MB resident, 165 MB after ``malloc_trim``.
``give_back`` asks glibc to return the free pages of every arena (``malloc_trim(0)``); elsewhere (musl,
macOS) it does nothing. Nothing live is touched: only pages no allocation holds are released.

Released pages are not free to use again: the next allocation of that memory faults each 4-KiB page back
in, zeroed by the kernel. Released after every chunk and every embedding batch, the 5-minute camera-like
bench video took 484k page faults and 1.48 s of system time (of ~10.5 CPU-s); so the frequent callers pass
``slack``: the pages go back only once the resident set has grown by that much since the last release
(``SLACK``), which bounds what the arenas hold as tightly while the same pages are reused in between.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
import threading
from typing import Any

from playlisteval.logs import get_logger

log = get_logger(__name__)

_lock = threading.Lock()
_trim: Any = None  # libc's malloc_trim once looked up; False where there is none
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
#: what the resident set may grow by between two releases of the frequent callers (chunks, embedding batches)
SLACK = 96 * 2**20
_low = 0  # the resident set just after the last release, in bytes


def _malloc_trim() -> Any:
    global _trim
    with _lock:
        if _trim is None:
            _trim = False
            if sys.platform.startswith("linux"):
                try:
                    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
                    trim = libc.malloc_trim  # glibc only: musl has no such symbol
                    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
                    _trim = trim
                except (OSError, AttributeError) as exc:
                    log.debug("heap.no_malloc_trim", error=str(exc)[:200])
        return _trim


def resident_bytes() -> int:
    """The process's resident set as the kernel counts it (0 where /proc has no statm)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0


def give_back(slack: int = 0) -> bool:
    """Return the C heap's free pages to the system; True when glibc released some. With ``slack``, only
    when the resident set has grown by more than ``slack`` bytes since the last release (else False)."""
    global _low
    trim = _malloc_trim()
    if not trim:
        return False
    if slack and resident_bytes() - _low <= slack:
        return False
    released = bool(trim(0))
    _low = resident_bytes()
    return released
