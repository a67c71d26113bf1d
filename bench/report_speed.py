"""The full analytics report over a large store, against the same figures computed with pandas (issue 6).

A synthetic SQLite store (the shape of tests/analytics_fixtures.py, scaled up): ``--items`` selected
items with 10 pairs each, all in one benchmark; ``--runs`` judge runs (retrieved / uniform / swapped /
10 h scope) over every pair, so judgments = items x 10 x runs (default 1,000 x 10 x 100 = 1M); and
``--calls`` ledger rows (default 1M). Rows go in by ``executemany`` on the raw sqlite3 connection.

Then, each in a fresh process (bench/report_steps.py), with the machine's load average beside it:

1. loaders: judgment rows + the ledger's groups (store/call_groups.py) into DuckDB by the Python driver
   (the old path), by DuckDB's own scanner and by ADBC's driver (when adbc-driver-sqlite is installed);
   with ``--postgres URL`` the same on a PostgreSQL copy of the store;
2. the full report (`write_report`: the analytics file synced, every section, the HTML page) — cold
   (no analytics file), again with nothing changed (the sections reused from the file's cache,
   analytics/section_cache.py), and after a new judge run is appended (every section computed again);
   and the whole `playlisteval report OUT` command on the unchanged store (a process of its own: the
   interpreter, the CLI's imports, the page and the leaderboard printed from it);
3. pandas: the leaderboard (paper Table 1) and the build cost by model (Table 20) from the same store
   with ``pandas.read_sql_query`` and merges / group-bys, against the same two figures from DuckDB
   reading the store through its scanner;

and checks that the leaderboard and the per-model spend agree between the report, DuckDB and pandas, and
that the page is the same but for its generation time: the cold page against the page of the report
with nothing changed (its sections from the cache) and, with ``--reference PAGE`` (a page an earlier
tree wrote from a store made with the same arguments), against that page (issue 43: a faster report
must write the same page). The cold page is kept as ``report-cold.html`` beside ``--work``.

    .venv/bin/python -m bench report [--items 1000] [--runs 100] [--calls 1000000] [--postgres URL]
                                     [--reference PAGE]
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

if __package__ in (None, ""):  # run as a file: bench/report_speed.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.index_command import python_loop_s
from bench.report_store import append_run, build_store, copy_to_postgres
from playlisteval.config import load_settings

TOLERANCE = 1e-9
GENERATED = "<th>Generated</th>"  # the provenance row holding the page's own time (analytics/provenance.py)


def page_digest(page: Path) -> str:
    """sha256 of the page without the line that holds its generation time: equal digests, equal pages
    but for that time."""
    kept = [line for line in page.read_bytes().splitlines(keepends=True) if GENERATED.encode() not in line]
    return hashlib.sha256(b"".join(kept)).hexdigest()


def pandas_figures(db: Path) -> tuple[dict[tuple[str, str], float], dict[str, float]]:
    """Leaderboard (judge, evidence) → accuracy, and build spend per provider/model, with pandas only."""
    import pandas as pd

    con = sqlite3.connect(db)
    j = pd.read_sql_query("SELECT run_id, pair_id, a_is_better, verdict FROM judgment", con)
    runs = pd.read_sql_query("SELECT id AS run_id, benchmark_id, judge, evidence, scope, swapped FROM judge_run", con)
    calls = pd.read_sql_query("SELECT provider, model, usd FROM model_call WHERE purpose = 'build'", con)
    con.close()
    ok = j["verdict"].isin(["A", "B"])
    j["score"] = np.where(ok, ((j["verdict"] == "A") == j["a_is_better"].astype(bool)).astype(float), 0.5)
    facts = j.merge(runs, on="run_id")
    keys = ["benchmark_id", "judge", "evidence", "scope", "swapped"]
    main = facts.groupby(keys)["run_id"].min().reset_index()  # the main pass: first run of each kind
    facts = facts[facts["run_id"].isin(main["run_id"])]
    facts = facts[(facts["swapped"] == 0) & (facts["scope"] == "domain")
                  & facts["evidence"].isin(["retrieved", "uniform"])]
    board = facts.groupby(["judge", "evidence"])["score"].mean()
    spend = calls.assign(name=calls["provider"] + "/" + calls["model"]).groupby("name")["usd"].sum()
    return ({(str(k[0]), str(k[1])): float(v) for k, v in board.items()},
            {str(k): float(v) for k, v in spend.items()})


def _step(*args: str) -> dict[str, Any]:
    """One timed step in a fresh process (bench/report_steps.py): cold imports and caches, one figure each."""
    done = subprocess.run([sys.executable, "-m", "bench.report_steps", *args], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[1], check=False)
    if done.returncode != 0:
        raise SystemExit(f"step {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _best(repeat: int, *args: str, before: Any = None) -> dict[str, Any]:
    """The step run ``repeat`` times (``before()`` ahead of each): the run with the least wall time, with
    every run's wall and CPU beside it (the machine is shared: its load moves between runs)."""
    done = []
    for _ in range(repeat):
        if before is not None:
            before()
        done.append(_step(*args))
    best = min(done, key=lambda r: r["s"])
    return {**best, "runs": [[r["s"], r["cpu_s"], r["load_avg"]] for r in done]}


def run(work: Path, items: int, runs: int, calls: int, seed: int, postgres: str | None,
        repeat: int = 3, reference: Path | None = None) -> dict[str, Any]:
    t0 = time.perf_counter()
    root = build_store(work / "store", items, runs, calls, seed)
    settings = load_settings(root)
    db = Path(settings.store_url.removeprefix("sqlite:///"))
    results: dict[str, Any] = {"judgments": items * 10 * runs, "ledger_rows": calls, "cpus": os.cpu_count(),
                               "store_mb": round(db.stat().st_size / 2**20, 1),
                               "generate_s": round(time.perf_counter() - t0, 1)}
    print(f"store: {results['judgments']} judgments, {calls} ledger rows, {results['store_mb']} MB, "
          f"made in {results['generate_s']} s", flush=True)

    def show(label: str, r: dict[str, Any]) -> None:
        print(f"  {label:<38} {r['s']:7.2f} s  cpu {r['cpu_s']:6.2f} s  load {r['load_avg']:5.2f}", flush=True)

    # judgment + ledger into DuckDB, three ways (README: why the scanners)
    ways = ["python", "scanner"] + (["adbc"] if importlib.util.find_spec("adbc_driver_sqlite") else [])
    stores = {"sqlite": root}
    if postgres:
        stores["postgresql"] = copy_to_postgres(root, postgres)
    results["loaders"] = {}
    print("judgment rows + the ledger's groups into DuckDB:")
    for kind, project in stores.items():
        for way in ways:
            r = results["loaders"][f"{kind}/{way}"] = _step("loader", way, str(project))
            show(f"{kind} {way}", r)
        loaders = results["loaders"]
        results.setdefault("loader_speedup_vs_python", {})[kind] = {
            way: round(loaders[f"{kind}/python"]["s"] / loaders[f"{kind}/{way}"]["s"], 1) for way in ways[1:]}
        print(f"  {kind}: × the Python driver's speed: {results['loader_speedup_vs_python'][kind]}", flush=True)

    print("the same two figures (leaderboard, build spend by model), from the store:")
    pd_ = results["pandas"] = _best(repeat, "pandas", str(db))
    show("pandas", pd_)
    duck = results["duckdb_figures"] = _best(repeat, "figures", str(root))
    show("DuckDB (scanner)", duck)
    results["speedup_vs_pandas"] = {"same_figures": round(pd_["s"] / duck["s"], 1)}
    # the host's speed now (a fixed pure-Python loop's CPU): the cold report is mostly Python, and shared hosts
    # run it 20-40 % slower at times (measured: the same tree 3.08 s and 4.13 s an hour apart, at the same load)
    results["python_loop_s"] = [python_loop_s()]
    print(f"full report (Analytics + every section + HTML); host: Python loop {results['python_loop_s'][0]:.2f} s:")
    out = str(work / "report.html")
    cold = results["report_cold"] = _best(repeat, "report", str(root), out,
                                          before=lambda: (root / "analytics.duckdb").unlink(missing_ok=True))
    show("cold (no analytics file)", cold)
    results["python_loop_s"].append(python_loop_s())
    kept_page = work.parent / "report-cold.html"
    # the reference read before the cold page is kept: given the kept page itself (an earlier run's, the usual
    # way to compare trees), writing first would compare the page with itself
    reference_digest = page_digest(reference) if reference is not None else None
    kept_page.write_bytes(Path(out).read_bytes())
    same = results["report_unchanged"] = _best(repeat, "report", str(root), out)
    show("nothing changed", same)
    pages = results["page"] = {"cold_sha256": page_digest(kept_page),
                               "unchanged_same_as_cold": page_digest(Path(out)) == page_digest(kept_page)}
    if reference is not None:
        pages["reference"] = str(reference)
        pages["same_as_reference"] = reference_digest == pages["cold_sha256"]
    print(f"  page, but for its time: the unchanged report's {'is' if pages['unchanged_same_as_cold'] else 'is NOT'} "
          "the cold one's" + ("" if reference is None else
                              f"; the cold page {'is' if pages['same_as_reference'] else 'is NOT'} {reference}'s"),
          flush=True)
    cli = results["report_cli_unchanged"] = _best(repeat, "cli", str(root), out)
    show("nothing changed, `playlisteval report`", cli)
    kept = results["duckdb_figures_file"] = _step("figures-file", str(root))
    show("the two figures from the analytics file", kept)
    results["speedup_vs_pandas"]["analytics_file"] = round(pd_["s"] / kept["s"], 1)
    results["speedup_vs_pandas_cpu"] = {"same_figures": round(pd_["cpu_s"] / duck["cpu_s"], 1),
                                        "analytics_file": round(pd_["cpu_s"] / kept["cpu_s"], 1)}
    results["appended_judgments"] = append_run(db, items, seed)
    after = results["report_after_append"] = _step("report", str(root), out)
    show(f"after a new run ({results['appended_judgments']} judgments)", after)
    results["render_share"] = {k: results[k]["render_s"] for k in ("report_cold", "report_unchanged")}
    results["speedup_vs_pandas"].update({"full_report_cold": round(pd_["s"] / cold["s"], 2),
                                         "full_report_unchanged": round(pd_["s"] / same["s"], 2),
                                         "full_report_after_append": round(pd_["s"] / after["s"], 2)})
    results["speedup_vs_pandas_cpu"].update({k: round(pd_["cpu_s"] / results[f"report_{k}"]["cpu_s"], 2)
                                             for k in ("cold", "unchanged", "after_append")})

    # the figures agree: the cold report's, pandas' and DuckDB's (all three before the run was appended)
    board = {(j, ev): v for j, ev, v in cold["board"]}
    pd_board = {(j, ev): v for j, ev, v in pd_["board"]}
    duck_board = {(j, ev): v for j, ev, v in duck["board"]}
    file_board = {(j, ev): v for j, ev, v in kept["board"]}
    diffs = [abs(b[k] - v) for b in (board, duck_board, file_board) for k, v in pd_board.items() if k in b]
    same_keys = board.keys() == pd_board.keys() == duck_board.keys() == file_board.keys()
    spend_diff = max(abs(cold["spend"].get(k, float("inf")) - v) for k, v in pd_["spend"].items())
    results["max_leaderboard_diff"] = max(diffs) if same_keys else float("inf")
    results["max_spend_diff_usd"] = spend_diff
    results["agree"] = (same_keys and results["max_leaderboard_diff"] <= TOLERANCE and spend_diff <= 1e-6
                        and pages["unchanged_same_as_cold"] and pages.get("same_as_reference", True))
    print(f"pandas / DuckDB, CPU: {results['speedup_vs_pandas_cpu']}", flush=True)
    print(f"pandas / DuckDB: {results['speedup_vs_pandas']}; leaderboard "
          f"{'agrees' if results['agree'] else 'DISAGREES'} (max diff {results['max_leaderboard_diff']:.2e}, "
          f"spend {spend_diff:.2e})", flush=True)
    results["goals"] = goals(results)
    print("goals (issue 13, at 1M judgments + 1M ledger rows; other sizes are not what they were set for):")
    for goal, (seen, met) in results["goals"].items():
        print(f"  {goal:<58} {seen:>14}  {'met' if met else 'NOT met'}", flush=True)
    for key in ("report_cold", "report_unchanged", "report_after_append", "pandas", "duckdb_figures",
                "duckdb_figures_file"):
        results[key].pop("board", None)
        results[key].pop("spend", None)
    return results


COLD_MAX_S, UNCHANGED_MAX_S, OVER_PANDAS_MIN = 3.0, 1.0, 5.0  # issue 13's goals for the report


def goals(results: dict[str, Any]) -> dict[str, tuple[str, bool]]:
    """Each goal with what this run saw and whether it holds. pandas computes two of the report's figures
    (the leaderboard and the spend by model), never the whole report: the ratios set its wall time against
    the report with nothing changed and against DuckDB computing the same two figures."""
    pandas_s = results["pandas"]["s"]
    cold, same = results["report_cold"]["s"], results["report_unchanged"]["s"]
    over_same = pandas_s / same
    over_file = pandas_s / results["duckdb_figures_file"]["s"]
    over_store = pandas_s / results["duckdb_figures"]["s"]
    return {
        # with the host's Python loop beside it (before and after the cold runs): the goal was set on a host
        # whose loop took ~0.4 s
        f"full report, cold <= {COLD_MAX_S:g} s": (
            f"{cold:.2f} s (Python loop {'-'.join(f'{x:.2f}' for x in results.get('python_loop_s', []))} s)",
            cold <= COLD_MAX_S),
        f"full report, nothing changed <= {UNCHANGED_MAX_S:g} s": (f"{same:.2f} s", same <= UNCHANGED_MAX_S),
        f"pandas's two figures / the report, nothing changed >= {OVER_PANDAS_MIN:g}x":
            (f"{over_same:.1f}x", over_same >= OVER_PANDAS_MIN),
        f"pandas / the two figures from the analytics file >= {OVER_PANDAS_MIN:g}x":
            (f"{over_file:.1f}x", over_file >= OVER_PANDAS_MIN),
        f"pandas / the two figures scanning the store >= {OVER_PANDAS_MIN:g}x":
            (f"{over_store:.1f}x", over_store >= OVER_PANDAS_MIN),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench report", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=1000, help="selected items, 10 pairs each")
    parser.add_argument("--runs", type=int, default=100, help="judge runs, each over every pair")
    parser.add_argument("--calls", type=int, default=1_000_000, help="ledger rows")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs of pandas, the two figures and the cold and unchanged report; the fastest is kept")
    parser.add_argument("--work", type=Path, default=Path("build/bench/report"))
    parser.add_argument("--reference", type=Path, default=None, metavar="PAGE",
                        help="a page written by an earlier tree from a store made with the same arguments: the "
                             "cold page must be the same but for its generation time")
    parser.add_argument("--postgres", default=None, metavar="URL",
                        help="also a PostgreSQL copy of the store (an empty database: its tables are made) "
                             "for the loader comparison")
    args = parser.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    results = run(args.work.resolve(), args.items, args.runs, args.calls, args.seed, args.postgres, args.repeat,
                  args.reference.resolve() if args.reference else None)
    (args.work.parent / "report.json").write_text(json.dumps(results, indent=1))
    print(json.dumps(results, indent=1))
    return 0 if results["agree"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
