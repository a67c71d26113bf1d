"""The met / NOT met lines every benchmark ends with: each goal, what the run saw, and whether it holds.

Beside them, the share of CPU time the machine's host took away while the benchmark ran (``steal`` in
/proc/stat): on a shared virtual machine the same command took 0.45 s and 0.89 s half an hour apart with the
load average under 1.2 both times, and top showed 50 % steal at the slow moment. A figure taken under heavy
steal is the host's, not the code's.
"""

from __future__ import annotations

from pathlib import Path

_STAT = Path("/proc/stat")


def _cpu_times() -> list[int] | None:
    """The first line of /proc/stat (all CPUs): user nice system idle iowait irq softirq steal …; None off Linux."""
    try:
        fields = _STAT.read_text().splitlines()[0].split()
    except (OSError, IndexError):
        return None
    return [int(x) for x in fields[1:9]] if fields and fields[0] == "cpu" else None


_START = _cpu_times()  # when the benchmark's process imported this module: its whole run is measured


def stolen(since: list[int] | None, now: list[int] | None) -> float | None:
    """The share of CPU time the host stole between two readings of ``_cpu_times``; None without both."""
    if since is None or now is None:
        return None
    delta = [b - a for a, b in zip(since, now, strict=True)]
    total = sum(delta)
    return delta[7] / total if total > 0 else None


def steal_share(since: list[int] | None = _START) -> float | None:
    """The share of CPU time stolen by the host since ``since`` (default: this process's start), or None."""
    return stolen(since, _cpu_times())


def print_goals(title: str, goals: dict[str, tuple[str, bool]], width: int = 18) -> None:
    print(title)
    for goal, (seen, met) in goals.items():
        print(f"  {goal:<52} {seen:>{width}}  {'met' if met else 'NOT met'}", flush=True)
    steal = steal_share()
    if steal is not None:
        print(f"  (CPU time taken by the host while this benchmark ran — steal: {100 * steal:.0f} %; "
              "figures taken under heavy steal are slower than the code)", flush=True)
