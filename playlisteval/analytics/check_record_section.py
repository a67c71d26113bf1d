"""The report's "Videos checked" section (issue 41 item 2): each benchmark's last `check`, as
benchmark/check_record.py keeps it."""

from __future__ import annotations

from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Engine

from playlisteval.analytics.tabular import DisplayTable, Section
from playlisteval.benchmark.check_record import COUNTS, last, when
from playlisteval.store.engine import read_core


def report_section(engine: Engine, benchmark: str | None) -> Any:
    """The report's section (an analytics ``Section``): each benchmark shown (the named one, or every one) with
    its last check, or "not checked". Read from the store at each report, never cached: a check changes no
    table the report's cache watches."""
    with read_core(engine) as c:
        benches = [tuple(r) for r in c.execute(text("SELECT id, name FROM benchmark ORDER BY name")).all()
                   if benchmark is None or r[1] == benchmark]
    table = DisplayTable(headers=["Benchmark", "Last check", "Videos", "As indexed", "Missing", "Changed",
                                  "Unverifiable", "Pairs affected"], rows=[],
                         numeric=[False, False, True, True, True, True, True, False])
    for bench_id, name in benches:
        kept = last(engine, int(bench_id or 0))
        if kept is None:
            table.rows.append([str(name), "not checked", *("—" for _ in range(6))])
            continue
        pairs = kept["affected_pairs"]
        shown = f"{len(pairs)}" + (f" (pairs {', '.join(map(str, pairs[:20]))}{' …' if len(pairs) > 20 else ''})"
                                   if pairs else "")
        table.rows.append([str(name), when(kept), *(str(kept[k]) for k in COUNTS), shown])
    return Section("check", "Videos checked",
                   "Whether every video the benchmark uses was still there and unchanged (size and SHA-256 against "
                   "what was indexed) when `playlisteval check` last re-read them; a pair is affected when its "
                   "question cites a missing, changed or unverifiable video. Run `playlisteval check` to check "
                   "again.", tables=[("", table)])
