"""`playlisteval index` over ten hours of 720p lectures: hours indexed per wall hour (issue 26, deliverable 2).

The collection, made once under ``--work`` and kept: ``--parts`` distinct 5-minute lectures as
``bench index-command`` makes them (1280x720, 30 fps H.264 at x264's default GOP, slide text that
changes every 20 s, a moving inset, SRT captions), each with its own slide words; then ``--files``
videos, each the concatenation (stream copy, no re-encode) of every part in another order, with the
captions shifted to match. Default 20 files x 6 parts x 5 min = 10 hours. Every file has its own bytes
(a content hash of its own), so nothing is deduplicated; slides repeat across files as a course's do.

Then, each as a process a user starts in a fresh project: ``index --json --profile`` of the first
``--first`` files (default 2, one hour) and of the whole collection, with wall and CPU seconds, the
1-minute load and the peak resident memory of the index process. Printed: times real time, hours indexed
per wall hour, the whole collection against the first hour (linear means ~1.0), and what 100 hours would
take on this machine at the whole run's rate.

Goals (issue 26): the whole index command >= 60x real time on a quiet machine, peak memory <= 1.5 GB,
linear in hours of video.

    .venv/bin/python -m bench index-hours [--files 20] [--parts 6] [--first 2]
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

if __package__ in (None, ""):  # run as a file: bench/index_hours.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.goals import print_goals
from bench.index_command import CLI, load, make_lecture, process

PART_MINUTES = 5.0
MIN_X_REAL_TIME, MAX_PEAK_MB, MAX_LINEAR_DRIFT = 60.0, 1536.0, 1.25
TOPICS = [("glacier moraine sediment", "ice ages"), ("volcanic basalt columns", "igneous rock"),
          ("river delta deposits", "erosion"), ("coral reef limestone", "marine geology"),
          ("tectonic plate margins", "mountain building"), ("desert dune migration", "wind and sand"),
          ("karst cave formation", "groundwater"), ("permafrost thaw lakes", "polar soils")]


def _shifted_srt(parts: list[Path], offset_s: list[float]) -> str:
    """The parts' SRT cues one after another, each part's times moved by its offset."""
    def stamp(t: float) -> str:
        t = int(round(t))
        return f"{t // 3600:02d}:{t // 60 % 60:02d}:{t % 60:02d},000"

    def seconds(text: str) -> float:
        h, m, rest = text.strip().split(":")
        return int(h) * 3600 + int(m) * 60 + float(rest.replace(",", "."))

    cues, n = [], 0
    for part, offset in zip(parts, offset_s, strict=True):
        for block in part.with_suffix(".srt").read_text().strip().split("\n\n"):
            _, times, text = block.split("\n", 2)
            start, end = (seconds(t) + offset for t in times.split("-->"))
            n += 1
            cues.append(f"{n}\n{stamp(start)} --> {stamp(end)}\n{text}\n")
    return "\n".join(cues)


def make_collection(work: Path, files: int, parts: int) -> tuple[Path, list[Path]]:
    folder = work / f"lectures-{files}x{parts}"
    videos = [folder / f"course {i + 1:02d}.mp4" for i in range(files)]
    if all(v.exists() and v.with_suffix(".srt").exists() for v in videos):
        return folder, videos
    sources = [make_lecture(work / "parts" / f"part {k + 1}.mp4", PART_MINUTES, *TOPICS[k % len(TOPICS)])
               if not (work / "parts" / f"part {k + 1}.srt").exists() else work / "parts" / f"part {k + 1}.mp4"
               for k in range(parts)]
    folder.mkdir(parents=True, exist_ok=True)
    for i, video in enumerate(videos):
        order = [sources[(i + k) % parts] for k in range(parts)]  # every file its own order: its own bytes
        if i // parts % 2:
            order.reverse()
        listing = folder / f".{video.stem}.txt"
        listing.write_text("".join(f"file '{p}'\n" for p in order))
        partial = video.with_name(video.stem + ".partial.mp4")
        subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "concat", "-safe", "0", "-i", str(listing),
                        "-c", "copy", "-metadata", f"title=course {i + 1}", str(partial)], check=True)
        listing.unlink()
        video.with_suffix(".srt").write_text(_shifted_srt(order, [k * PART_MINUTES * 60 for k in range(parts)]))
        partial.rename(video)  # the video last: a collection interrupted while made is made again
    return folder, videos


def index_run(work: Path, name: str, videos: list[Path], parts: int) -> dict[str, Any]:
    """A fresh project holding ``videos`` (linked, not copied), indexed by one whole `index` command."""
    project = work / name
    shutil.rmtree(project, ignore_errors=True)
    playlist = project / "videos" / "Geology Course"
    playlist.mkdir(parents=True)
    for v in videos:
        (playlist / v.name).symlink_to(v)
        (playlist / v.with_suffix(".srt").name).symlink_to(v.with_suffix(".srt"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PLAYLISTEVAL_")}  # a user's defaults
    process([CLI, "init", str(project)], env=env)
    process([CLI, "--project", str(project), "add", "Geology", str(playlist)], env=env)
    # the largest resident set of any child so far: measured in a child of its own so that an earlier,
    # larger process does not mask it
    probe = ("import resource, subprocess, sys, json; r = subprocess.run(sys.argv[1:], capture_output=True, "
             "text=True); print(json.dumps({'peak_mb': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss "
             "/ 1024, 'rc': r.returncode, 'stdout': r.stdout, 'stderr': r.stderr[-3000:]}))")
    r = process([sys.executable, "-c", probe, CLI, "--project", str(project), "index", "--json", "--profile"], env=env)
    inner = json.loads(r["stdout"])
    seconds = len(videos) * parts * PART_MINUTES * 60
    out = {"videos": len(videos), "video_s": seconds, "s": r["s"], "cpu_s": r["cpu_s"], "load": r["load"],
           "rc": inner["rc"], "peak_mb": round(inner["peak_mb"], 1)}
    if inner["rc"]:
        print(f"  ! index exited {inner['rc']}: {inner['stderr'][-600:]}", flush=True)
    try:
        out["profile"] = json.loads(inner["stdout"].strip().splitlines()[-1]).get("profile", {})
    except (ValueError, IndexError):
        out["profile"] = {}
    out["x_real_time"] = round(seconds / r["s"], 1)
    out["hours_per_wall_hour"] = out["x_real_time"]  # the same ratio, said as a user plans with it
    return out


def run(work: Path, files: int, parts: int, first: int) -> dict[str, Any]:
    folder, videos = make_collection(work, files, parts)
    hours = files * parts * PART_MINUTES / 60
    print(f"collection: {files} videos, {hours:.2f} hours of 720p30 H.264 + SRT "
          f"({sum(v.stat().st_size for v in videos) / 2**30:.2f} GB); load {load()}", flush=True)
    results: dict[str, Any] = {"hours": hours, "cpus": os.cpu_count(), "load_start": load()}
    for label, chosen in (("first", videos[:first]), ("whole", videos)):
        r = index_run(work, f"project-{label}", chosen, parts)
        results[label] = r
        phases = sorted(r["profile"].get("phases", {}).items(), key=lambda kv: -kv[1]["s"])[:6]
        print(f"  index of {r['video_s'] / 3600:.2f} h: {r['s']:.1f} s wall, cpu {r['cpu_s']:.1f} s, "
              f"{r['x_real_time']}x real time, peak {r['peak_mb']:.0f} MB, load {r['load']:.1f}; phases "
              + ", ".join(f"{k} {v['s']:.1f}" for k, v in phases), flush=True)
    whole = results["whole"]
    results["linear_drift"] = round(results["first"]["x_real_time"] / max(whole["x_real_time"], 1e-9), 2)
    results["hundred_hours_h"] = round(100 / max(whole["x_real_time"], 1e-9), 2)
    print(f"  100 hours at the whole run's rate: {results['hundred_hours_h']:.2f} h on {os.cpu_count()} cores; "
          f"first hour / whole rate {results['linear_drift']}", flush=True)
    results["goals"] = goals(results)
    print_goals(f"goals (issue 26; load {load()} now):", results["goals"])
    return results


def goals(results: dict[str, Any]) -> dict[str, tuple[str, bool]]:
    w = results["whole"]
    return {
        f"index of {results['hours']:.2f} h >= {MIN_X_REAL_TIME:g}x real time": (
            f"{w['x_real_time']}x (load {w['load']:.1f})", w["rc"] == 0 and w["x_real_time"] >= MIN_X_REAL_TIME),
        f"index peak memory <= {MAX_PEAK_MB:g} MB": (f"{w['peak_mb']:.0f} MB", w["peak_mb"] <= MAX_PEAK_MB),
        f"linear: first hour's rate / whole's <= {MAX_LINEAR_DRIFT:g}": (
            f"{results['linear_drift']}", results["linear_drift"] <= MAX_LINEAR_DRIFT),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench index-hours", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=20, help="videos in the collection")
    parser.add_argument("--parts", type=int, default=6, help="5-minute lectures joined into each video")
    parser.add_argument("--first", type=int, default=2, help="videos of the first, shorter run")
    parser.add_argument("--work", type=Path, default=Path("build/bench/index_hours"))
    args = parser.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    results = run(args.work.resolve(), args.files, args.parts, args.first)
    (args.work.parent / "index_hours.json").write_text(json.dumps(results, indent=1))
    return 0 if results["whole"]["rc"] == 0 and results["first"]["rc"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
