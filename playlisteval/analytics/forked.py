"""A report section's pure computation in a forked child process: on the core the GIL leaves idle.

Why: the report's sections are mostly Python (intervals, the trust figures, the attribution), and Python
runs one thread at a time. Measured at 1M judgments on a 2-core host, computing them on two threads took
as long as on one (2.64 s against 2.48 s, 3.16 against 2.84): the second core sat idle while the sections
waited for the GIL. A child process has a GIL of its own. The trust figures (~1 CPU-s of Python at 1M
judgments) are computed from data already read, so a child forked with that data in its memory computes
them while the parent's threads go on with the other sections; the child sends back the figures, pickled.

Why fork, and what the child must not do: a forked child starts with the parent's memory as it was, so
nothing is imported or copied again — but it has only the thread that forked it. The DuckDB connection
and its worker threads, the store's engine, the other section thread's locks: none may be touched by
the child, which only runs ``compute`` on data made before the fork and ends with ``os._exit`` (no
destructor, no atexit handler of the parent's runs in it). ``compute`` must be a pure function of its
argument: the same numbers in the child as in the parent, so the page is the same either way.

Where fork is unavailable or unsafe (not Linux: macOS forbids forking a threaded process that may use its
system frameworks), when the child fails, dies or sends back nothing usable, the same ``compute`` runs in
the parent: the child is a speed-up, never the only way to a number.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
import threading
import warnings
import weakref
from collections.abc import Callable
from typing import Generic, TypeVar

from playlisteval.logs import get_logger

T = TypeVar("T")
A = TypeVar("A")
log = get_logger(__name__)
ENABLED = sys.platform.startswith("linux") and hasattr(os, "fork")
#: held while a child is forked and its pipe's write end closed here: a child forked by another thread
#: meanwhile would inherit that end, and the reader would wait for both children to exit before it saw EOF
_FORKING = threading.Lock()


class Child(Generic[T]):
    """``compute(data)`` started in a forked child (see the module's doc): ``result()`` waits for it, and
    computes it here where the child could not; ``cancel()`` ends a child whose result is not wanted (it
    would block on a pipe no one reads). ``what`` names the computation in the log."""

    def __init__(self, compute: Callable[[A], T], data: A, what: str) -> None:
        self._compute: Callable[[], T] = lambda: compute(data)
        self._what, self._pid, self._read_end, self._done = what, 0, -1, False
        self._value: T | None = None
        if not ENABLED:
            self._value, self._done = self._compute(), True
            return
        with _FORKING:  # no other child forked while this one's write end is open here (it would hold it)
            read_end, write_end = os.pipe()
            try:
                with warnings.catch_warnings():  # Python 3.12+ warns of any fork in a threaded process: see above
                    warnings.filterwarnings("ignore", message=".*fork.*", category=DeprecationWarning)
                    pid = os.fork()
            except OSError as exc:  # no process to spare (limits, memory): here instead
                os.close(read_end)
                os.close(write_end)
                log.info("analytics.fork_failed", what=what, error=str(exc))
                pid = -1
            if pid == 0:  # the child: compute, send, exit without running anything of the parent's
                os.close(read_end)
                _child(self._compute, write_end)
            if pid > 0:
                os.close(write_end)
        if pid < 0:
            self._value, self._done = self._compute(), True
            return
        self._pid, self._read_end = pid, read_end
        self._reaper = weakref.finalize(self, _end, pid, read_end)  # never left behind, whatever happens

    def result(self) -> T:
        if not self._done:
            self._value, self._done = self._collected(), True
        return self._value  # type: ignore[return-value]

    def cancel(self) -> None:
        if not self._done:
            self._reaper()
            self._done = True

    def _collected(self) -> T:
        with os.fdopen(os.dup(self._read_end), "rb") as reading:
            blob = reading.read()  # until the child closes its end: finished or died (the GIL released meanwhile)
        _pid, status = os.waitpid(self._pid, 0)
        self._reaper.detach()
        os.close(self._read_end)
        code = os.waitstatus_to_exitcode(status)
        if code == 0 and blob:
            value: T = pickle.loads(blob)
            return value
        log.info("analytics.fork_gave_nothing", what=self._what, exit=code)
        return self._compute()


def start(compute: Callable[[A], T], data: A, what: str) -> Child[T]:
    """``compute(data)``, computing in a forked child where it can (see Child)."""
    return Child(compute, data, what)


def _end(pid: int, read_end: int) -> None:
    """A child whose result is not collected: killed (it may be blocked writing to the pipe), reaped."""
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass
    os.close(read_end)


def _child(compute: Callable[[], T], write_end: int) -> None:
    code = 1
    # nothing printed here: a stream's lock may have been held by another thread of the parent at the fork,
    # and would never be let go in this child (a warning shown is the only print its computations could make)
    warnings.simplefilter("ignore")
    try:
        blob = pickle.dumps(compute(), protocol=pickle.HIGHEST_PROTOCOL)
        with os.fdopen(write_end, "wb") as writing:
            writing.write(blob)
        code = 0
    except BaseException:  # noqa: BLE001 - the parent computes it again, where the error is raised and shown
        code = 1
    finally:
        os._exit(code)
