"""Giving the C heap's freed memory back to the system while `index` works (issue 43, deliverable 3).

What a video's frames and OCR allocate outside Python (decoded pictures, ONNX Runtime's tensors for
crops of ever-new shapes, PIL buffers) is freed once read, but glibc keeps freed blocks below its top
in each thread's arena for reuse, and with several threads (a video per index thread, a frame reader
each, ONNX's) those arenas hold more and more of the pages ever touched: measured on camera-like
720p, OCR of 80 kept frames in one thread left 416 MB resident, 165 MB after ``malloc_trim``.
``give_back`` asks glibc to return the free pages of every arena (``malloc_trim(0)``); elsewhere (musl,
macOS) it does nothing. Nothing live is touched: only pages no allocation holds are released.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
import threading
from typing import Any

from playlisteval.logs import get_logger

log = get_logger(__name__)

_lock = threading.Lock()
_trim: Any = None  # libc's malloc_trim once looked up; False where there is none


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


def give_back() -> bool:
    """Return the C heap's free pages to the system; True when glibc released some."""
    trim = _malloc_trim()
    return bool(trim(0)) if trim else False
