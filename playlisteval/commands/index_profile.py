"""`playlisteval index --profile`: the command's time by phase (index/phases.py), on stderr.

Printed on stderr so that `index --json --profile | jq` still reads one JSON document; with --json the
same figures are also under the document's "profile" key.
"""

from __future__ import annotations

from typing import Any

from rich.table import Table

from playlisteval.commands.support import err_console
from playlisteval.index import phases


def profile(wall_s: float, startup_s: float | None, video_s: float) -> dict[str, Any]:
    """Seconds per phase (thread-seconds: parallel phases overlap), the command's wall time from process
    start, what no phase accounts for, and how many times real time the whole command ran."""
    seen = phases.snapshot()
    rows = {name: {"s": round(s, 3), "n": n} for name, (s, n) in seen.items()}
    if startup_s is not None:
        rows = {"start-up": {"s": round(startup_s, 3), "n": 1}, **rows}
    total = wall_s + (startup_s or 0.0)
    accounted = sum(r["s"] for r in rows.values())
    return {"wall_s": round(total, 3), "phases": rows,
            "other_s": round(max(0.0, total - accounted), 3),  # segments, seeds, the coordinator's waits
            "video_s": round(video_s, 1), "x_real_time": round(video_s / total, 1) if total > 0 else None}


def print_profile(data: dict[str, Any]) -> None:
    table = Table(title=f"index --profile: {data['wall_s']:.2f} s from process start"
                        + (f", {data['x_real_time']}x real time" if data["x_real_time"] else ""))
    table.add_column("phase")
    table.add_column("seconds", justify="right")
    table.add_column("share", justify="right")
    table.add_column("calls", justify="right")
    wall = data["wall_s"] or 1.0
    for name, row in data["phases"].items():
        table.add_row(name, f"{row['s']:.2f}", f"{100 * row['s'] / wall:.0f} %", str(row["n"]))
    table.add_row("other (segments, seeds, waiting)", f"{data['other_s']:.2f}",
                  f"{100 * data['other_s'] / wall:.0f} %", "")
    err_console.print(table)
    err_console.print("  phases are thread-seconds: ASR runs beside the frames and videos run in parallel, "
                      "so they can add up to more than the wall time", highlight=False)
