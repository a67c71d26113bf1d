"""The timed steps of ``python -m bench report``, each run in a process of its own (cold caches,
one figure per process) by bench/report_speed.py, which prints and saves what they measure.

    python -m bench.report_steps report PROJECT OUT     Analytics (sync of the analytics file) + HTML
    python -m bench.report_steps cli PROJECT OUT        the whole `playlisteval report OUT` command
    python -m bench.report_steps pandas DB              leaderboard and spend by model with pandas
    python -m bench.report_steps figures PROJECT        the same two figures with DuckDB over the store
    python -m bench.report_steps figures-file PROJECT   the same from the analytics file, synced first
    python -m bench.report_steps loader WAY PROJECT     judgment + ledger into DuckDB: python|scanner|adbc

Each prints one JSON object: wall seconds, CPU seconds of this process and its children, the 1-minute load
average.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _cpu() -> float:
    """CPU seconds of this process and of the children it has waited for (the report's forked one,
    analytics/forked.py): what the step cost the machine."""
    import resource

    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


class Clock:
    def __init__(self) -> None:
        self.wall, self.cpu = time.perf_counter(), _cpu()

    def lap(self) -> dict[str, float]:
        return {"s": round(time.perf_counter() - self.wall, 3), "cpu_s": round(_cpu() - self.cpu, 3)}


def report(project: Path, out: Path) -> dict[str, Any]:
    """What `playlisteval report OUT --quiet` does: the analytics file synced, the sections (reused from
    the last report when nothing changed, analytics/section_cache.py) and the page written."""
    from playlisteval.analytics.report import choose_benchmark, leaderboard_rows, write_report
    from playlisteval.analytics.runner import Analytics
    from playlisteval.analytics.section_threads import import_sections
    from playlisteval.config import load_settings
    from playlisteval.store import open_store

    settings = load_settings(project)
    engine = open_store(settings)
    clock = Clock()
    an = Analytics(engine, settings, meanwhile=import_sections)  # as `playlisteval report` does
    load = clock.lap()
    with an:
        write_report(an, settings, out)
        total = clock.lap()
        bench = choose_benchmark(an, None)  # the figures checked against pandas: outside the clock
        board = [[r["judge"], ev, r[ev]] for r in leaderboard_rows(an, bench) for ev in ("retrieved", "uniform")
                 if r[ev] is not None]
        spend = an.rows("SELECT model, spend FROM cost_by_model WHERE model <> 'All'")
    actions = an.sync.actions if an.sync else {}
    page = out.read_text(encoding="utf-8")
    return {"s": total["s"], "cpu_s": total["cpu_s"], "load_s": load["s"], "render_s": round(total["s"] - load["s"], 3),
            "judgment": actions.get("judgment", "python loader"), "model_call": actions.get("model_call", ""),
            "board": board, "spend": {r["model"]: r["spend"] for r in spend}, "html_kb": round(len(page) / 1024, 1)}


def cli(project: Path, out: Path) -> dict[str, Any]:
    """`playlisteval report OUT` as a user runs it, in a process of its own (interpreter start, the CLI's
    imports, the page, the leaderboard printed): wall time and the child's CPU."""
    import resource
    import subprocess

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    clock = Clock()
    done = subprocess.run([sys.executable, "-c", "from playlisteval.cli import main; main()", "--project",
                           str(project), "report", str(out)], capture_output=True, text=True, check=False)
    wall = clock.lap()["s"]
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"playlisteval report failed:\n{done.stderr[-3000:]}")
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return {"s": wall, "cpu_s": round(cpu, 3), "printed_leaderboard": "Leaderboard" in done.stdout}


def pandas(db: Path) -> dict[str, Any]:
    from bench.report_speed import pandas_figures

    clock = Clock()
    board, spend = pandas_figures(db)
    return {**clock.lap(), "board": [[j, ev, v] for (j, ev), v in board.items()], "spend": spend}


FIGURES_SQL = """
WITH facts AS (
    SELECT j.run_id, r.benchmark_id, r.judge, r.evidence, r.scope, r.swapped,
           CASE WHEN j.verdict IN ('A', 'B') THEN ((j.verdict = 'A') = j.a_is_better::BOOLEAN)::DOUBLE ELSE 0.5 END
               AS score
    FROM store.judgment AS j JOIN store.judge_run AS r ON r.id = j.run_id),
main AS (SELECT min(run_id) AS run_id FROM facts GROUP BY benchmark_id, judge, evidence, scope, swapped)
SELECT judge, evidence, avg(score) AS accuracy FROM facts
WHERE run_id IN (SELECT run_id FROM main) AND NOT swapped::BOOLEAN AND scope = 'domain'
      AND evidence IN ('retrieved', 'uniform')
GROUP BY judge, evidence
"""


def figures(project: Path) -> dict[str, Any]:
    """pandas_figures' two tables with DuckDB reading the same store tables through its scanner."""
    import duckdb

    from playlisteval.analytics import scan
    from playlisteval.config import load_settings
    from playlisteval.store import open_store

    settings = load_settings(project)
    engine = open_store(settings)
    clock = Clock()
    con = duckdb.connect()
    with scan.attached(con, engine):  # no Python SQLite connection to the store meanwhile (scan.attached)
        board = con.execute(FIGURES_SQL).fetchall()
        spend = con.execute("SELECT provider || '/' || model, sum(usd) FROM store.model_call "
                            "WHERE purpose = 'build' GROUP BY ALL ORDER BY 1").fetchall()
    lap = clock.lap()
    return {**lap, "board": [list(r) for r in board], "spend": dict(spend)}


def figures_file(project: Path) -> dict[str, Any]:
    """The same two figures from the report's analytics file: brought up to date first (mirror.py), as a
    report does, then queried."""
    from playlisteval.analytics import file_lease, mirror, scan
    from playlisteval.analytics.runner import FILE_NAME, HEAVY_COLUMNS, VIEW_TABLES
    from playlisteval.config import load_settings
    from playlisteval.store import open_store

    settings = load_settings(project)
    engine = open_store(settings)
    clock = Clock()
    con, _path = file_lease.connect(project / FILE_NAME)
    # the columns first: inside the attachment this process may not open the store itself (scan.attached)
    columns = scan.store_columns(engine, list(VIEW_TABLES), {t: set(c) for t, c in HEAVY_COLUMNS.items()})
    with scan.attached(con, engine) as sqlite:
        actions = mirror.Mirror(con, engine, sqlite, columns).sync().actions
    board = con.execute(FIGURES_SQL.replace("store.", "")).fetchall()
    # the ledger is read as its sums, kept by the store (store/call_groups.py)
    spend = con.execute("SELECT provider || '/' || model, sum(usd) FROM call_groups WHERE purpose = 'build' "
                        "GROUP BY ALL ORDER BY 1").fetchall()
    lap = clock.lap()
    return {**lap, "judgment": actions["judgment"], "board": [list(r) for r in board], "spend": dict(spend)}


def loader(way: str, project: Path) -> dict[str, Any]:
    """judgment (the columns the views read) and the ledger as the report reads it (its sums per kind of call,
    kept by the store: store/call_groups.py) into an in-memory DuckDB."""
    import duckdb

    from playlisteval.analytics import scan
    from playlisteval.analytics.loader import load_tables
    from playlisteval.analytics.runner import HEAVY_COLUMNS
    from playlisteval.config import load_settings
    from playlisteval.store import open_store

    settings = load_settings(project)
    engine = open_store(settings)
    names = ["judgment", "call_groups"]
    skip = {t: set(c) for t, c in HEAVY_COLUMNS.items()}
    columns = scan.store_columns(engine, names, skip)
    clock = Clock()
    con = duckdb.connect()
    if way == "python":
        for name, table in load_tables(engine, names, skip_columns=HEAVY_COLUMNS).items():
            con.register("t", table)
            con.execute(f"CREATE TABLE {name} AS SELECT * FROM t")
            con.unregister("t")
    elif way == "scanner":
        with scan.attached(con, engine):
            for name in names:
                con.execute(f"CREATE TABLE {name} AS {scan.select_all(name, columns[name])}")
    elif way == "adbc":  # ADBC's driver: Arrow batches from C, then the same casts as the scanner
        if engine.dialect.name == "sqlite":
            import adbc_driver_sqlite.dbapi as adbc  # type: ignore[import-not-found,unused-ignore]

            target = str(engine.url.database)
        else:
            import adbc_driver_postgresql.dbapi as adbc  # type: ignore[import-not-found,unused-ignore]

            target = engine.url.set(drivername="postgresql").render_as_string(hide_password=False)
        with adbc.connect(target) as source, source.cursor() as cursor:
            for name in names:
                cursor.execute(f"SELECT {', '.join(scan.quote(c.name) for c in columns[name])} FROM {name}")
                con.register("t", cursor.fetch_arrow_table())
                exprs = ", ".join(c.expression() for c in columns[name])
                con.execute(f"CREATE TABLE {name} AS SELECT {exprs} FROM t")
                con.unregister("t")
    else:
        raise SystemExit(f"unknown loader {way!r}")
    lap = clock.lap()
    rows = sum(con.execute(f"SELECT count(*) FROM {n}").fetchone()[0] for n in names)  # type: ignore[index]
    return {**lap, "rows": rows}


def main(argv: list[str]) -> int:
    step, *args = argv
    load = os.getloadavg()[0]
    if step == "report":
        result = report(Path(args[0]), Path(args[1]))
    elif step == "cli":
        result = cli(Path(args[0]), Path(args[1]))
    elif step == "pandas":
        result = pandas(Path(args[0]))
    elif step == "figures":
        result = figures(Path(args[0]))
    elif step == "figures-file":
        result = figures_file(Path(args[0]))
    elif step == "loader":
        result = loader(args[0], Path(args[1]))
    else:
        raise SystemExit(f"unknown step {step!r}")
    print(json.dumps({**result, "load_avg": round(load, 2)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
