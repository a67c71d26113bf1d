"""Run one function per key on a thread pool; the first error stops what has not started and is raised.

Model calls spend their time waiting on the network, so threads are enough; every task writes its own
results in its own short transaction, so whatever finished before an error (a budget pause) is kept.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from typing import TypeVar

K = TypeVar("K")


def run_each(fn: Callable[[K], None], keys: Iterable[K], workers: int) -> None:
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        futures = [pool.submit(fn, key) for key in keys]
        done, _ = wait(futures, return_when=FIRST_EXCEPTION)
        errors = [f.exception() for f in done if f.exception() is not None]
        if errors:
            for future in futures:
                future.cancel()
    if errors:
        raise errors[0]  # type: ignore[misc]
