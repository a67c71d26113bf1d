"""Where `playlisteval index` spends its time, by phase (issue 26: `index --profile`).

A user times the whole command; the benchmarks timed pieces inside one process, and the two were an
order of magnitude apart with nothing showing where the rest went. Each phase of indexing a video
(decode, OCR, ASR, embedding, store, "heap release": freed memory given back, index/heap.py) and the
loading of each model add their seconds here, from whichever worker thread ran them; the command adds
its start-up (process start to the command's body) and the collection's segments and seeds. Phases run in
parallel threads (ASR beside the frames, several videos at once), so their sum can exceed the wall time:
it is thread-seconds. Beside them each phase has its CPU seconds on the thread that ran it (``time.thread_time``):
on two busy cores a phase's wall seconds include its waits for a core, and only the CPU seconds add up to
what the process used (what a native library runs on threads of its own, e.g. a decoder's, is not in them).

Always on: a ``perf_counter`` pair per chunk window and per video costs microseconds, and the
figures go to the log at debug level as well as to `--profile`.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

#: the phases in the order `--profile` prints them
ORDER = ("start-up", "imports", "model load", "probe", "decode", "OCR detection ahead", "OCR", "ASR", "embedding",
         "heap release", "store", "segments+seeds")

_lock = threading.Lock()
_seconds: dict[str, float] = {}
_counts: dict[str, int] = {}
_cpu: dict[str, float] = {}


def add(phase: str, seconds: float, count: int = 1, cpu_s: float = 0.0) -> None:
    with _lock:
        _seconds[phase] = _seconds.get(phase, 0.0) + seconds
        _counts[phase] = _counts.get(phase, 0) + count
        _cpu[phase] = _cpu.get(phase, 0.0) + cpu_s


_stack = threading.local()  # this thread's open phases: [phase, seconds, CPU seconds of the phases nested in it]


@contextmanager
def timed(phase: str) -> Iterator[None]:
    """Adds the wall seconds of the block to ``phase`` (also when it raises), less those of phases timed
    inside it on the same thread: a model loaded on the first OCR call counts as model load, not OCR."""
    open_phases: list[list[object]] = getattr(_stack, "open", None) or []
    _stack.open = open_phases
    entry: list[object] = [phase, 0.0, 0.0]
    open_phases.append(entry)
    t0, c0 = time.perf_counter(), time.thread_time()
    try:
        yield
    finally:
        elapsed, cpu = time.perf_counter() - t0, time.thread_time() - c0
        open_phases.pop()
        add(phase, elapsed - float(entry[1]), cpu_s=cpu - float(entry[2]))  # type: ignore[arg-type]
        if open_phases:
            outer = open_phases[-1]
            outer[1] = float(outer[1]) + elapsed  # type: ignore[arg-type]
            outer[2] = float(outer[2]) + cpu  # type: ignore[arg-type]


def reset() -> None:
    with _lock:
        _seconds.clear()
        _counts.clear()
        _cpu.clear()


def snapshot() -> dict[str, tuple[float, int]]:
    """phase -> (seconds, times entered), the known phases first, in ``ORDER``."""
    with _lock:
        known = [p for p in ORDER if p in _seconds]
        rest = sorted(p for p in _seconds if p not in ORDER)
        return {p: (_seconds[p], _counts[p]) for p in [*known, *rest]}


def cpu_seconds() -> dict[str, float]:
    """phase -> CPU seconds on the threads that ran it (``time.thread_time``), less its nested phases'."""
    with _lock:
        return dict(_cpu)


def since_process_start() -> float | None:
    """Wall seconds since this process started (Linux: /proc/self/stat): the start-up of a command, when
    the process is the `playlisteval` command itself; None where that is unknown, or where the command
    runs inside a longer-lived process (a test, a notebook), whose age says nothing about start-up."""
    started_as = Path(sys.argv[0])
    # ``python -m pytest`` is a __main__.py too: only the package's own counts
    if started_as.name not in ("playlisteval", "cli.py") and started_as.parts[-2:] != ("playlisteval", "__main__.py"):
        return None
    try:
        with open("/proc/self/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        with open("/proc/uptime", encoding="ascii") as f:
            uptime = float(f.read().split()[0])
        started = int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22 of stat: starttime, in clock ticks
        return max(0.0, uptime - started)
    except (OSError, ValueError, IndexError):
        return None
