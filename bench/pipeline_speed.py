"""The main job's commands as processes a user starts, on ordinary 720p video (issue 26, deliverable 1).

The collection, made once under ``--work`` and kept: ``playlisteval synth videos`` (``--domains`` x 1
playlist x ``--videos`` x ``--minutes``, H.264 only), every video re-encoded as 1280x720 30-fps H.264
(libx264 at its default GOP, preset veryfast, light film grain so that no two frames are alike; the
synthetic scenes' signs are on-screen text that changes), with the synth's captions and world file beside
it: the sim plays every model role from the world file, and captions mean no speech recognition.

In a fresh project with the demo's settings (60-90-s segments, 16 frames a judgment), each command as its
own process, with wall and CPU seconds (user + system) and the 1-minute load when it ended:

    add --manifest, index --profile --json, build --json, status --json, show 1, select, eval judge
    (sim/judge, retrieved evidence), eval retrieve, search, leaderboard, report (written, then unchanged)

Beside each, what the machine can do measured in the same run:

    index          ffmpeg decoding only the keyframes of every file, and every frame, on one thread each
    every command  the floor: an interpreter that starts and reads every row of the store (sqlite3);
                   nothing that opens the store and prints can be faster
    search         the query itself in a process that has loaded the embedder and the saved index (p50 of 5)
    build, select, eval judge, eval retrieve: their work per wall second, counted in the store

Goals of issue 26 are printed met / NOT met where the issue sets one (the index's >= 60x is set for the
5-minute lecture of ``bench index-command``; printed here for this collection too, whose 3-minute videos
carry more of the fixed costs). The other commands have no goal in the issue: their ratio to the floor is
what to read.

    .venv/bin/python -m bench pipeline [--domains 2] [--videos 3] [--minutes 3] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: bench/pipeline_speed.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.goals import print_goals
from bench.index_command import load, process

CLI = str(Path(sys.executable).with_name("playlisteval"))
GRAIN = "scale=1280:720:flags=bicubic,fps=30,noise=alls=4:allf=t"
SETTINGS = {"PLAYLISTEVAL_INDEX__SEGMENT_MIN_S": "60", "PLAYLISTEVAL_INDEX__SEGMENT_MAX_S": "90"}
QUERY = "the narrator explains what the sign shows"
INDEX_MIN_X, FLAT_MAX_S, HELP_MAX_S, REPORT_MAX_S = 60.0, 0.5, 0.3, 1.0

# a process that starts Python and reads every row of every table of the store: the floor of any command
READ_ROWS = """
import sqlite3, sys
db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
names = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
print(sum(len(db.execute(f'SELECT * FROM "{n}"').fetchall()) for n in names))
"""

# the query alone, once the embedder and the saved index are loaded (what `search` costs past start-up)
QUERY_ONLY = """
import json, statistics, sys, time
from playlisteval.config import load_settings
from playlisteval.index.embedders import get_embedder
from playlisteval.index.search import search
from playlisteval.store import open_store
settings = load_settings(__import__("pathlib").Path(sys.argv[1]))
engine = open_store(settings)
model = get_embedder(settings.index.embedder, settings.index.embedding_dims, settings.index)
t0 = time.perf_counter(); search(settings, engine, sys.argv[2], embedder=model); first = time.perf_counter() - t0
times = []
for _ in range(5):
    t0 = time.perf_counter(); search(settings, engine, sys.argv[2], embedder=model)
    times.append(time.perf_counter() - t0)
print(json.dumps({"first_s": round(first, 4), "p50_s": round(statistics.median(times), 4)}))
"""


def make_collection(work: Path, domains: int, videos: int, minutes: float) -> Path:
    """The 720p30 collection (kept between runs): the synth's videos re-encoded, captions and worlds copied."""
    out = work / f"videos-720p-{domains}x{videos}x{minutes:g}"
    if (out / "manifest.csv").exists():
        return out
    source = work / f"videos-source-{domains}x{videos}x{minutes:g}"
    shutil.rmtree(source, ignore_errors=True)
    subprocess.run([CLI, "synth", str(source), "--domains", str(domains), "--videos", str(videos),
                    "--minutes", str(minutes), "--vp9", "0"], check=True, capture_output=True)
    staging = out.with_name(out.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    for path in sorted(source.rglob("*")):
        target = staging / path.relative_to(source)
        if path.is_dir():
            target.mkdir(parents=True, exist_ok=True)
        elif path.suffix == ".mp4":
            target.parent.mkdir(parents=True, exist_ok=True)
            subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-i", str(path), "-vf", GRAIN,
                            "-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p",
                            "-c:a", "aac", "-b:a", "48k", str(target)], check=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
    staging.rename(out)  # whole or not at all: an interrupted encode is made again next time
    shutil.rmtree(source, ignore_errors=True)
    return out


def _count(db: Path, sql: str) -> int:
    import sqlite3
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
        return int(con.execute(sql).fetchone()[0])


def run(work: Path, domains: int, videos: int, minutes: float, repeat: int) -> dict[str, Any]:
    collection = make_collection(work, domains, videos, minutes)
    files = sorted(collection.rglob("*.mp4"))
    seconds = domains * videos * minutes * 60
    results: dict[str, Any] = {"videos": len(files), "video_s": seconds, "cpus": os.cpu_count(), "commands": {},
                               "limits": {}}
    print(f"collection: {len(files)} videos, {seconds / 60:g} min of 720p30 H.264 with captions; load {load()}",
          flush=True)
    ff = ["ffmpeg", "-nostdin", "-v", "error", "-threads", "1"]
    for label, extra in (("ffmpeg keyframes only", ["-skip_frame", "nokey"]), ("ffmpeg every frame", [])):
        parts = [process([*ff, *extra, "-i", str(f), "-an", "-f", "null", "-"]) for f in files]
        results["limits"][label] = {"s": round(sum(p["s"] for p in parts), 3),
                                    "cpu_s": round(sum(p["cpu_s"] for p in parts), 3), "load": load()}
    project = work / "project"
    shutil.rmtree(project, ignore_errors=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PLAYLISTEVAL_")} | SETTINGS | {"COLUMNS": "120"}
    process([CLI, "init", str(project)], env=env)
    db = project / "playlisteval.db"

    def cmd(label: str, args: list[str], times: int = 1) -> dict[str, Any]:
        runs = [process([CLI, "--project", str(project), *args], env=env) for _ in range(times)]
        r = min(runs, key=lambda x: x["s"])
        kept = {k: v for k, v in r.items() if k not in ("stdout", "stderr")}
        results["commands"][label] = kept
        return r

    cmd("--help", ["--help"], repeat)
    cmd("add --manifest", ["add", "--manifest", str(collection / "manifest.csv")])
    r = cmd("index", ["index", "--json", "--profile"])
    try:
        results["commands"]["index"]["profile"] = json.loads(r["stdout"].strip().splitlines()[-1]).get("profile", {})
    except (ValueError, IndexError):
        results["commands"]["index"]["profile"] = {}
    cmd("build", ["build", "--json"])
    cmd("status --json", ["status", "--json"], repeat)
    cmd("show 1", ["show", "1"], repeat)
    cmd("select", ["select"])
    # as the demo does: 16 frames a judgment as the benchmark's protocol, so the run below is a main run
    process([CLI, "--project", str(project), "protocol", "set", "--frames", "16"], env=env)
    cmd("eval judge", ["eval", "judge", "--judge", "sim/judge", "--evidence", "retrieved"])
    cmd("eval retrieve", ["eval", "retrieve"])
    cmd("search", ["search", QUERY], repeat)
    cmd("leaderboard", ["leaderboard"], repeat)
    cmd("report (first)", ["report", str(work / "pipeline.html")])
    cmd("report (nothing changed)", ["report", str(work / "pipeline.html")], repeat)
    counts = {"transitions": _count(db, "SELECT count(*) FROM item_event"),
              "items": _count(db, "SELECT count(*) FROM item"),
              "pairs": _count(db, "SELECT count(*) FROM benchmark_pair"),
              "judgments": _count(db, "SELECT count(*) FROM judgment"),
              "questions ranked": _count(db, "SELECT count(DISTINCT item_id) FROM ranking")}
    results["counts"] = counts
    floor = min((process([sys.executable, "-c", READ_ROWS, str(db)]) for _ in range(repeat)), key=lambda x: x["s"])
    results["limits"]["start + read every row"] = {k: floor[k] for k in ("s", "cpu_s", "load")}
    results["limits"]["rows"] = int(floor["stdout"].strip() or 0)
    q = process([sys.executable, "-c", QUERY_ONLY, str(project), QUERY], env=env)
    results["limits"]["query, loaded"] = json.loads(q["stdout"].strip().splitlines()[-1]) if not q["rc"] else {}
    print_table(results)
    results["goals"] = goals(results)
    print_goals(f"goals (issue 26; load {load()} now):", results["goals"], width=22)
    return results


WORK_OF = {"build": ("transitions", "transitions/s"), "select": ("pairs", "pairs/s"),
           "eval judge": ("judgments", "judgments/s"), "eval retrieve": ("questions ranked", "questions/s")}


def print_table(results: dict[str, Any]) -> None:
    floor = results["limits"]["start + read every row"]
    limits = results["limits"]
    print(f"floor (start Python, read all {limits['rows']} rows of the store): {floor['s']:.2f} s "
          f"(cpu {floor['cpu_s']:.2f}, load {floor['load']:.1f})")
    print(f"{'command':<26} {'wall s':>7} {'cpu s':>6} {'load':>5} {'x floor':>8}  beside it")
    for label, r in results["commands"].items():
        beside = ""
        if label == "index":
            key, full = limits["ffmpeg keyframes only"], limits["ffmpeg every frame"]
            phases = r.get("profile", {}).get("phases", {})
            top = sorted(phases.items(), key=lambda kv: -kv[1]["s"])[:5]
            beside = (f"{results['video_s'] / r['s']:.1f}x real time; ffmpeg keyframes {key['s']:.2f} s, "
                      f"every frame {full['s']:.2f} s; phases " + ", ".join(f"{k} {v['s']:.2f}" for k, v in top))
        elif label in WORK_OF:
            what, unit = WORK_OF[label]
            beside = f"{results['counts'][what]} {what}: {results['counts'][what] / r['s']:.1f} {unit}"
        elif label == "search" and limits.get("query, loaded"):
            beside = f"the query once loaded: p50 {limits['query, loaded']['p50_s'] * 1000:.1f} ms"
        rc = f"  exit {r['rc']}" if r["rc"] else ""
        print(f"{label:<26} {r['s']:7.2f} {r['cpu_s']:6.2f} {r['load']:5.1f} {r['s'] / floor['s']:8.1f}  "
              f"{beside}{rc}", flush=True)


def goals(results: dict[str, Any]) -> dict[str, tuple[str, bool]]:
    c = results["commands"]
    idx = c["index"]
    x = results["video_s"] / idx["s"] if idx["s"] else 0.0
    out = {f"index >= {INDEX_MIN_X:g}x real time (set for the lecture)": (f"{x:.1f}x (load {idx['load']:.1f})",
                                                                         idx["rc"] == 0 and x >= INDEX_MIN_X),
           f"--help <= {HELP_MAX_S:g} s": (f"{c['--help']['s']:.2f} s", c["--help"]["s"] <= HELP_MAX_S)}
    for name in ("status --json", "show 1", "leaderboard"):
        out[f"{name} <= {FLAT_MAX_S:g} s"] = (f"{c[name]['s']:.2f} s (cpu {c[name]['cpu_s']:.2f})",
                                             c[name]["rc"] == 0 and c[name]["s"] <= FLAT_MAX_S)
    rep = c["report (nothing changed)"]
    out[f"report, nothing changed <= {REPORT_MAX_S:g} s"] = (f"{rep['s']:.2f} s", rep["rc"] == 0
                                                            and rep["s"] <= REPORT_MAX_S)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench pipeline", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--domains", type=int, default=2)
    parser.add_argument("--videos", type=int, default=3, help="videos per domain (one playlist)")
    parser.add_argument("--minutes", type=float, default=3.0, help="minutes per video")
    parser.add_argument("--repeat", type=int, default=3, help="runs of the read-only commands; the fastest is kept")
    parser.add_argument("--work", type=Path, default=Path("build/bench/pipeline"))
    args = parser.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    results = run(args.work.resolve(), args.domains, args.videos, args.minutes, args.repeat)
    (args.work.parent / "pipeline.json").write_text(json.dumps(results, indent=1))
    # exit 3 from build/select/eval (items that failed a gate) is the command's normal "finished with failures"
    return 0 if all(r["rc"] in (0, 3) for r in results["commands"].values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
