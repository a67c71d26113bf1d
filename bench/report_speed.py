"""The full analytics report over a large store, against the same figures computed with pandas (issue 6).

A synthetic SQLite store (the shape of tests/analytics_fixtures.py, scaled up): ``--items`` selected
items with 10 pairs each, all in one benchmark; ``--runs`` judge runs (retrieved / uniform / swapped /
10 h scope) over every pair, so judgments = items x 10 x runs (default 1,000 x 10 x 100 = 1M); and
``--calls`` ledger rows (default 1M). Rows go in by ``executemany`` on the raw sqlite3 connection.

Then, in one process:

1. load: the store's tables into Arrow and DuckDB, the base facts made tables (``Analytics(...)``);
2. render: every report section and the HTML page (``build_sections`` + ``render``);
3. pandas: the leaderboard (paper Table 1) and the build cost by model (Table 20) from the same
   store with ``pandas.read_sql_query`` and merges / group-bys, timed load included;

and checks that the leaderboard and the per-model spend agree between DuckDB and pandas.

    .venv/bin/python -m bench report [--items 1000] [--runs 100] [--calls 1000000]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

if __package__ in (None, ""):  # run as a file: bench/report_speed.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from playlisteval.analytics.report import build_sections, choose_benchmark, leaderboard_rows, render
from playlisteval.analytics.runner import Analytics
from playlisteval.config import load_settings, write_project
from playlisteval.eval.options import JudgeOptions
from playlisteval.eval.runkey import options_hash
from playlisteval.store import open_store

DOMAINS = ("Education", "Drama", "Sports", "Cooking")
RATING_PAIRS = [(b, w) for b in range(5, 1, -1) for w in range(b - 1, 0, -1)]  # the 10 pairs of an item
TOLERANCE = 1e-9


def _insert(con: sqlite3.Connection, table: str, columns: Sequence[str], rows: Iterable[tuple[Any, ...]]) -> None:
    """Bulk insert; NOT NULL columns not given get a neutral value (the models' defaults are Python-side)."""
    info = con.execute(f"SELECT name, type, \"notnull\" FROM pragma_table_info('{table}')").fetchall()
    extra = [(name, "{}" if kind == "JSON" else "" if kind.startswith("VARCHAR") else 0)
             for name, kind, notnull in info if notnull and name not in columns and name != "id"]
    names = list(columns) + [name for name, _ in extra]
    tail = tuple(value for _, value in extra)
    sql = f"INSERT INTO {table} ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})"
    con.executemany(sql, (tuple(row) + tail for row in rows))


def build_store(root: Path, items: int, runs: int, calls: int, seed: int) -> Path:
    """A fresh project under ``root`` whose store holds the synthetic rows; returns the project dir."""
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    write_project(root)
    settings = load_settings(root)
    open_store(settings)  # creates and migrates the schema
    rng = np.random.default_rng(seed)
    con = sqlite3.connect(settings.store_url.removeprefix("sqlite:///"))
    con.execute("PRAGMA synchronous = OFF")
    nd = len(DOMAINS)
    _insert(con, "domain", ["id", "name"], enumerate(DOMAINS, 1))
    _insert(con, "playlist", ["id", "domain_id", "name"], ((d, d, f"P{d}") for d in range(1, nd + 1)))
    _insert(con, "video", ["id", "playlist_id", "path", "title", "status"],
            ((d, d, f"/v/{d}.mp4", f"v{d}", "indexed") for d in range(1, nd + 1)))
    domain_of = [1 + i % nd for i in range(items)]
    _insert(con, "segment", ["id", "video_id", "idx", "embedder", "start", "end", "first_chunk", "last_chunk",
                             "vector"],
            ((i + 1, domain_of[i // 2], i, "minilm", 0.0, 600.0, 0, 19, b"\0" * 16) for i in range(2 * items)))
    _insert(con, "seed", ["id", "domain_id", "segment1_id", "segment2_id", "similarity"],
            ((i + 1, domain_of[i], 2 * i + 1, 2 * i + 2, 0.5) for i in range(items)))
    _insert(con, "item", ["id", "seed_id", "state", "current_qa_id", "current_set_id"],
            ((i + 1, i + 1, "selected", i + 1, i + 1) for i in range(items)))
    _insert(con, "qa", ["id", "item_id", "attempt", "question", "answer"],
            ((i + 1, i + 1, 1, f"question {i} about the clips?", "gold") for i in range(items)))
    _insert(con, "distractor_set", ["id", "item_id", "qa_id", "attempt"], ((i + 1, i + 1, i + 1, 1)
                                                                           for i in range(items)))
    words = rng.integers(5, 60, size=(items, 5))
    _insert(con, "answer", ["set_id", "rating", "text"],
            ((i + 1, r, " ".join(["word"] * int(words[i, r - 1])) + (" (clip1 @ 0:30 - 1:10)." if r == 5 else ""))
             for i in range(items) for r in range(1, 6)))
    n_pairs = items * len(RATING_PAIRS)
    _insert(con, "pair", ["id", "item_id", "set_id", "better_rating", "worse_rating", "gap", "kept"],
            ((p + 1, p // 10 + 1, p // 10 + 1, *RATING_PAIRS[p % 10], RATING_PAIRS[p % 10][0] - RATING_PAIRS[p % 10][1],
              1) for p in range(n_pairs)))
    _insert(con, "benchmark", ["id", "name", "seed", "created_at"], [(1, "bench-big", seed, 0.0)])
    a_better = rng.random(n_pairs) < 0.5
    _insert(con, "benchmark_pair", ["benchmark_id", "pair_id", "a_is_better"],
            ((1, p + 1, int(a_better[p])) for p in range(n_pairs)))
    _insert(con, "benchmark_question", ["benchmark_id", "item_id", "domain_id", "kept_pairs", "drawn_pairs"],
            ((1, i + 1, domain_of[i], 10, 10) for i in range(items)))

    # runs: judge j gets retrieved, uniform, swapped-retrieved and 10h-retrieved runs (4 per judge)
    kinds = [("retrieved", "domain", 0), ("uniform", "domain", 0), ("retrieved", "domain", 1), ("retrieved", "10h", 0)]
    plan = [(r + 1, f"judge-{r // 4:02d}", *kinds[r % 4]) for r in range(runs)]
    # each run records its options as `eval judge` does, so the defaults' runs are the judges' main runs
    def recorded(ev: str, scope: str, sw: int) -> dict[str, object]:
        return JudgeOptions.from_settings(settings, evidence=ev, scope=scope, swap=bool(sw)).as_settings()

    _insert(con, "judge_run", ["id", "benchmark_id", "judge", "evidence", "scope", "swapped", "created_at",
                               "settings", "options_hash"],
            ((rid, 1, judge, ev, scope, sw, 0.0, json.dumps(recorded(ev, scope, sw)),
              options_hash(recorded(ev, scope, sw))) for rid, judge, ev, scope, sw in plan))
    for rid, judge, ev, _scope, sw in plan:
        skill = 0.55 + 0.01 * int(judge[-2:]) + (0.05 if ev == "retrieved" else 0.0)
        right = rng.random(n_pairs) < skill
        missing = rng.random(n_pairs) < 0.02
        a_side = a_better != bool(sw)  # swapping the sides moves the better answer
        says_a = np.where(right, a_side, ~a_side)
        verdicts = np.where(says_a, "A", "B").astype(object)
        verdicts[missing] = None
        scores = np.where(missing, 0.5, right.astype(float))
        _insert(con, "judgment", ["run_id", "pair_id", "a_is_better", "verdict", "score", "raw"],
                ((rid, p + 1, int(a_side[p]), verdicts[p], float(scores[p]),
                  f"Both answers cite the clips; the reply ends with [[{verdicts[p]}]]") for p in range(n_pairs)))

    models = [("gemini", "flash", "B"), ("qwen", "plus", "C3"), ("vllm", "weak", "F_first"), ("openai", "gpt", "G"),
              ("gemini", "pro", "G")]
    which = rng.integers(0, len(models), calls)
    usd = np.round(rng.random(calls) * 0.01, 6)
    tokens = rng.integers(100, 5000, size=(calls, 2))
    item_of = rng.integers(1, items + 1, calls)
    run_of = rng.integers(1, runs + 1, calls)
    _insert(con, "model_call", ["request_hash", "role", "provider", "model", "item_id", "run_id", "purpose",
                                "status", "cache_hit", "input_tokens", "output_tokens", "usd", "created_at"],
            ((f"h{c}", models[w][2], models[w][0], models[w][1],
              None if models[w][2] == "G" else int(item_of[c]), int(run_of[c]) if models[w][2] == "G" else None,
              "eval" if models[w][2] == "G" else "build", "ok", 0, int(tokens[c, 0]), int(tokens[c, 1]),
              float(usd[c]), 0.0) for c, w in enumerate(which.tolist())))
    con.commit()
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # so the file size below is the store's size
    con.close()
    return root


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


def run(work: Path, items: int, runs: int, calls: int, seed: int) -> dict[str, Any]:
    t0 = time.perf_counter()
    root = build_store(work / "store", items, runs, calls, seed)
    settings = load_settings(root)
    db = Path(settings.store_url.removeprefix("sqlite:///"))
    results: dict[str, Any] = {"judgments": items * 10 * runs, "ledger_rows": calls, "cpus": os.cpu_count(),
                               "store_mb": round(db.stat().st_size / 2**20, 1),
                               "generate_s": round(time.perf_counter() - t0, 1)}
    print(f"store: {results['judgments']} judgments, {calls} ledger rows, {results['store_mb']} MB, "
          f"made in {results['generate_s']} s", flush=True)

    t0 = time.perf_counter()
    an = Analytics(open_store(settings), settings)
    results["load_s"] = round(time.perf_counter() - t0, 2)
    with an:
        t0 = time.perf_counter()
        bench = choose_benchmark(an, None)
        sections = build_sections(an, settings, bench)
        page = render(sections, title=settings.project.name, benchmark=bench["name"] if bench else None)
        (work / "report.html").write_text(page, encoding="utf-8")
        results["render_s"] = round(time.perf_counter() - t0, 2)
        duck_board = {(r["judge"], ev): r[ev] for r in leaderboard_rows(an, bench) for ev in ("retrieved", "uniform")}
        duck_spend = {r["model"]: r["spend"] for r in an.rows("SELECT model, spend FROM cost_by_model "
                                                              "WHERE model <> 'All'")}
    results["report_total_s"] = round(results["load_s"] + results["render_s"], 2)
    results["html_kb"] = round(len(page.encode()) / 1024, 1)

    t0 = time.perf_counter()
    pd_board, pd_spend = pandas_figures(db)
    results["pandas_s"] = round(time.perf_counter() - t0, 2)
    board_diff = max(abs(duck_board[k] - v) for k, v in pd_board.items()) if pd_board.keys() == duck_board.keys() \
        else float("inf")
    spend_diff = max(abs(duck_spend[k] - v) for k, v in pd_spend.items()) if pd_spend.keys() == duck_spend.keys() \
        else float("inf")
    results["leaderboard_cells"] = len(pd_board)
    results["max_leaderboard_diff"] = board_diff
    results["max_spend_diff_usd"] = spend_diff
    results["agree"] = board_diff <= TOLERANCE and spend_diff <= 1e-6
    print(f"load {results['load_s']} s, render {results['render_s']} s, pandas {results['pandas_s']} s; "
          f"leaderboard {'agrees' if results['agree'] else 'DISAGREES'} "
          f"(max diff {board_diff:.2e}, spend {spend_diff:.2e})", flush=True)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench report", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=1000, help="selected items, 10 pairs each")
    parser.add_argument("--runs", type=int, default=100, help="judge runs, each over every pair")
    parser.add_argument("--calls", type=int, default=1_000_000, help="ledger rows")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work", type=Path, default=Path("build/bench/report"))
    args = parser.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    results = run(args.work, args.items, args.runs, args.calls, args.seed)
    (args.work.parent / "report.json").write_text(json.dumps(results, indent=1))
    print(json.dumps(results, indent=1))
    return 0 if results["agree"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
