"""The cyclic garbage collector paused while a benchmark's rows are built (issue 43).

Building a version's rows makes a million small containers at 100k pairs (row tuples, segment dicts,
decoded JSON), all alive until the version is sealed: each generation-2 pass of the collector walks every
one of them again, and at that size the passes cost as much as the build itself (measured on the bench store
of 10k questions: gathering the rows 1.62 -> 0.80 CPU-s, the annotations 0.91 -> 0.30). None of it is
cyclic garbage — what a build drops is freed by reference counting as ever — so the collector waits until
the build returns, and runs as it did before after that.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused() -> Iterator[None]:
    """No cyclic collection inside the block; the collector as it was (on or off) after it."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
