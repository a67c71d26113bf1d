"""`playlisteval index --profile`: the command's time by phase (index/phases.py), on stderr.

Printed on stderr so that `index --json --profile | jq` still reads one JSON document; with --json the
same figures are also under the document's "profile" key.
"""

from __future__ import annotations

import resource
from typing import Any

from rich.table import Table

from playlisteval.commands.support import err_console
from playlisteval.index import phases


def profile(wall_s: float, startup_s: float | None, video_s: float,
            startup_cpu_s: float | None = None) -> dict[str, Any]:
    """Seconds per phase (thread-seconds: parallel phases overlap) with their CPU seconds, the command's
    wall time from process start, what no phase accounts for, the process's CPU seconds, and how many times
    real time the whole command ran. ``startup_cpu_s``: the process's CPU when the command began (the
    interpreter and the CLI's imports, on one thread)."""
    seen, cpu = phases.snapshot(), phases.cpu_seconds()
    rows: dict[str, dict[str, Any]] = {name: {"s": round(s, 3), "cpu_s": round(cpu.get(name, 0.0), 3), "n": n}
                                       for name, (s, n) in seen.items()}
    if startup_s is not None:
        cpu = {**cpu, "start-up": startup_cpu_s or 0.0}
        rows = {"start-up": {"s": round(startup_s, 3),
                             "cpu_s": None if startup_cpu_s is None else round(startup_cpu_s, 3), "n": 1}, **rows}
    total = wall_s + (startup_s or 0.0)
    accounted = sum(r["s"] for r in rows.values())
    usage = resource.getrusage(resource.RUSAGE_SELF)
    process_cpu = usage.ru_utime + usage.ru_stime  # every thread's, native ones included, since the process began
    return {"wall_s": round(total, 3), "phases": rows,
            "other_s": round(max(0.0, total - accounted), 3),  # segments, seeds, the coordinator's waits
            "cpu_s": round(process_cpu, 3),
            # segments and seeds, the workers' own bookkeeping, and what native libraries (ONNX Runtime's,
            # libavcodec's, BLAS's) ran on threads of their own; start-up's CPU is its row's when known
            "other_cpu_s": round(max(0.0, process_cpu - sum(cpu.values())), 3),
            "video_s": round(video_s, 1), "x_real_time": round(video_s / total, 1) if total > 0 else None}


def print_profile(data: dict[str, Any]) -> None:
    table = Table(title=f"index --profile: {data['wall_s']:.2f} s from process start"
                        + (f", {data['x_real_time']}x real time" if data["x_real_time"] else ""))
    table.add_column("phase")
    table.add_column("seconds", justify="right")
    table.add_column("share", justify="right")
    table.add_column("calls", justify="right")
    table.add_column("CPU s", justify="right")
    table.add_column("CPU share", justify="right")
    wall, cpu = data["wall_s"] or 1.0, data.get("cpu_s") or 1.0

    def cpu_cells(value: float | None) -> tuple[str, str]:
        return ("", "") if value is None else (f"{value:.2f}", f"{100 * value / cpu:.0f} %")

    for name, row in data["phases"].items():
        table.add_row(name, f"{row['s']:.2f}", f"{100 * row['s'] / wall:.0f} %", str(row["n"]),
                      *cpu_cells(row.get("cpu_s")))
    table.add_row("other (segments, seeds, waiting)", f"{data['other_s']:.2f}",
                  f"{100 * data['other_s'] / wall:.0f} %", "", *cpu_cells(data.get("other_cpu_s")))
    err_console.print(table)
    err_console.print(f"  the process used {data.get('cpu_s', 0.0):.2f} CPU-s. Phases are thread-seconds: ASR runs "
                      "beside the frames and videos run in parallel, so they can add up to more than the wall "
                      "time; CPU s is each phase's on its own thread (start-up's: the interpreter and the CLI's "
                      "imports; imports: the work's modules and the store's opening), and the last row's CPU is "
                      "the rest (segments and seeds, native libraries' own threads)", highlight=False)
