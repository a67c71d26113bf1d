"""`eval judge` against a provider of known capacity (issue 43, deliverable 5).

A local OpenAI-compatible server (bench/capacity_server.py: real HTTP, the real openai SDK on our side)
answers at most ``--capacity`` requests at once, each after ``--latency`` seconds, and refuses the rest at
once with 429 and a Retry-After. Over the demo project (scripts/demo.sh's collection, made once under
``--work`` and kept: 2 domains x 3 three-minute videos, built and selected by the sim world, 16 frames a
judgment) `playlisteval eval judge --judge openai/capacity` runs as its own process with default settings:
nothing about concurrency is configured. Each run starts from a copy of the selected store, so no answer
is cached.

Printed: the pairs, the calls the server answered and refused, the time on calls (the server's first
request to its last answer) against the least time it needs (``ceil(answered / capacity) x latency``),
calls/s as a share of the capacity (capacity / latency calls/s), the run's own summary line (mean and peak
in flight, 429s from the ledger), and the 1-minute load. Then the same run with ``[runner] adaptive =
false`` (the old fixed 4 threads, 4 calls at once), unless ``--no-baseline``. Goals of issue 43: time on
calls <= 2x the server's least time, <= 10 % of requests answered 429.

    .venv/bin/python -m bench capacity [--capacity 16] [--latency 2] [--work build/bench/capacity]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: bench/capacity.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.capacity_server import CapacityServer
from bench.goals import print_goals

CLI = str(Path(sys.executable).with_name("playlisteval"))
JUDGE = "openai/capacity"
DEMO_ENV = {"PLAYLISTEVAL_INDEX__SEGMENT_MIN_S": "60", "PLAYLISTEVAL_INDEX__SEGMENT_MAX_S": "90"}
PRICE = f'\n[prices."{JUDGE}"]\ninput = 0.1\noutput = 0.4\n'  # the preflight refuses an unpriced judge
TIME_MAX_X, REFUSED_MAX = 2.0, 0.10


def load() -> float:
    return round(os.getloadavg()[0], 2)


def _run(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    out = subprocess.run([CLI, *args], cwd=cwd, env={**os.environ, **DEMO_ENV, **(env or {})},
                         capture_output=True, text=True)
    if out.returncode not in (0, 3):  # 3: finished with failed items or errors (the demo goes on past them)
        raise SystemExit(f"playlisteval {' '.join(args)} failed ({out.returncode}):\n{out.stderr[-2000:]}")
    return out


def demo_project(work: Path) -> Path:
    """The demo's collection, built and selected, made once (scripts/demo.sh up to `select`)."""
    root = work / "demo"
    if (root / ".made").exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    work.mkdir(parents=True, exist_ok=True)
    subprocess.run([CLI, "init", str(root)], check=True, capture_output=True)
    started = time.perf_counter()
    for step in (["synth", "videos", "--domains", "2", "--playlists", "1", "--videos", "3", "--minutes", "3"],
                 ["add", "--manifest", "videos/manifest.csv"], ["index"], ["build"], ["select"],
                 ["protocol", "set", "--frames", "16"],
                 # the demo's own judge run: the frames a judgment shows are extracted now, once, so that
                 # each measured run (and the baseline) spends its time on calls, not on ffmpeg
                 ["eval", "judge", "--judge", "sim/judge"]):
        print(f"  making the demo: {' '.join(step)} (load {load()})", flush=True)
        _run(step, root)
    with (root / "playlisteval.toml").open("a") as f:
        f.write(PRICE)
    (root / ".made").write_text(f"{time.perf_counter() - started:.0f} s\n")
    return root


def fresh_copy(demo: Path, dst: Path) -> Path:
    """The demo with a copy of its store: a run that asks every pair (nothing cached), sharing its media."""
    shutil.rmtree(dst, ignore_errors=True)
    dst.mkdir(parents=True)
    for entry in demo.iterdir():
        if entry.name.startswith("playlisteval.db") or entry.name == ".made":
            continue
        (dst / entry.name).symlink_to(entry.resolve())
    (dst / "playlisteval.toml").unlink()
    shutil.copy(demo / "playlisteval.toml", dst / "playlisteval.toml")
    with sqlite3.connect(demo / "playlisteval.db") as a, sqlite3.connect(dst / "playlisteval.db") as b:
        a.backup(b)
    return dst


def judge_once(demo: Path, work: Path, capacity: int, latency: float, extra: dict[str, str]) -> dict[str, Any]:
    project = fresh_copy(demo, work / "run")
    with CapacityServer(capacity, latency) as server:
        env = {"OPENAI_API_KEY": "bench-capacity-key", "PLAYLISTEVAL_PROVIDERS__OPENAI_BASE_URL": server.url, **extra}
        t0 = time.perf_counter()
        out = _run(["eval", "judge", "--judge", JUDGE, "--json"], project, env)
        wall = time.perf_counter() - t0
        served = server.served()
    lines = [json.loads(x) for x in out.stdout.splitlines() if x.startswith("{")]
    summary = lines[-1] if lines else {}
    least = server.min_time_s(served.answered)
    return {"pairs": summary.get("pairs"), "judged": summary.get("judged"), "errors": summary.get("errors"),
            "answered": served.answered, "refused": served.refused, "refused_share": served.refused_share,
            "peak_at_server": served.peak, "time_on_calls_s": served.span_s, "least_time_s": least,
            "time_x": served.span_s / least if least else float("inf"),
            "share_of_capacity": (served.answered / served.span_s) / (capacity / latency) if served.span_s else 0.0,
            "calls": summary.get("calls"), "wall_s": wall, "load": load()}


def show(name: str, r: dict[str, Any], capacity: int, latency: float) -> None:
    calls = r["calls"] or {}
    print(f"{name}: {r['judged']}/{r['pairs']} pairs judged, {r['errors']} error(s); the server answered "
          f"{r['answered']} and refused {r['refused']} ({100 * r['refused_share']:.1f} % 429), at most "
          f"{r['peak_at_server']} at once", flush=True)
    print(f"  time on calls {r['time_on_calls_s']:.1f} s vs the server's least {r['least_time_s']:.1f} s "
          f"({r['time_x']:.2f}x); {r['answered'] / max(r['time_on_calls_s'], 1e-9):.2f} calls/s = "
          f"{100 * r['share_of_capacity']:.0f} % of the capacity ({capacity} at once / {latency:g} s = "
          f"{capacity / latency:.1f}/s); the command took {r['wall_s']:.1f} s; load {r['load']}", flush=True)
    if calls:
        print(f"  the run's summary: {calls.get('tries')} tries, {calls.get('per_s')}/s, "
              f"{calls.get('mean_in_flight')} in flight on average (peak {calls.get('peak')}), "
              f"{calls.get('refused')} refused", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench capacity", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--capacity", type=int, default=16, help="requests the server answers at once")
    parser.add_argument("--latency", type=float, default=2.0, help="seconds per answered request")
    parser.add_argument("--no-baseline", action="store_true", help="skip the run with the old fixed 4 threads")
    parser.add_argument("--work", type=Path, default=Path("build/bench/capacity"))
    args = parser.parse_args(argv)
    work = args.work.resolve()
    print(f"bench capacity: a server of {args.capacity} calls at once, {args.latency:g} s each; load {load()}",
          flush=True)
    demo = demo_project(work)
    adaptive = judge_once(demo, work, args.capacity, args.latency, {})
    show("eval judge, default settings", adaptive, args.capacity, args.latency)
    results = {"adaptive": adaptive}
    if not args.no_baseline:
        fixed = judge_once(demo, work, args.capacity, args.latency, {"PLAYLISTEVAL_RUNNER__ADAPTIVE": "false"})
        show("the old fixed 4 threads ([runner] adaptive = false)", fixed, args.capacity, args.latency)
        results["fixed"] = fixed
    (work / "capacity.json").write_text(json.dumps(results, indent=1))
    print_goals("goals (issue 43, deliverable 5):", {
        f"time on calls <= {TIME_MAX_X:g}x the server's least time": (
            f"{adaptive['time_x']:.2f}x", adaptive["time_x"] <= TIME_MAX_X),
        f"requests answered 429 <= {100 * REFUSED_MAX:.0f} %": (
            f"{100 * adaptive['refused_share']:.1f} %", adaptive["refused_share"] <= REFUSED_MAX),
        "every pair judged, no error": (f"{adaptive['judged']}/{adaptive['pairs']}",
                                        adaptive["judged"] == adaptive["pairs"] and not adaptive["errors"]),
    })
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
