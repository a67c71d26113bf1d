"""The whole `playlisteval index` command on an ordinary lecture, beside the machine's limit (issue 26, 2).

The bench makes the file: ``--minutes`` (default 5) of 1280x720, 30 fps H.264 (libx264 at its default GOP,
keyint 250; preset veryfast so the bench itself stays short), a slide whose text changes every 20 s
(ffmpeg drawtext), a small moving inset (a speaker's camera: frames are never identical), a tone for
the audio and an SRT sidecar with a cue every 5 s (captions: no speech recognition). Then, each as a
process a user would start, with CPU (user + system) and the 1-minute load beside it:

1. ffmpeg decoding only the keyframes (``-skip_frame nokey``, one thread): the floor of a keyframe-aware
   media step;
2. ffmpeg decoding every frame on one thread: what an exact decoder costs;
3. ``playlisteval init`` + ``add`` + ``index --profile --json`` in a fresh project, ``--repeat`` times (3;
   the fastest kept, each printed; the profile by phase is the fastest run's), its peak memory (the largest
   child RSS of all the runs).

Goals (issue 26): the whole index command >= 60x real time on a quiet machine, peak memory <= 1.5 GB.

    .venv/bin/python -m bench index-command [--minutes 5] [--threads N] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: bench/index_command.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.goals import print_goals

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
CLI = str(Path(sys.executable).with_name("playlisteval"))
MIN_X_REAL_TIME, MAX_PEAK_MB = 60.0, 1536.0


def load() -> float:
    return round(os.getloadavg()[0], 2)


def process(cmd: list[str], **kw: Any) -> dict[str, Any]:
    """Run one process; wall and CPU seconds, exit code, load, its stdout and stderr."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, **kw)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode:
        print(f"  ! {' '.join(cmd[:3])} … exited {done.returncode}: {done.stderr.strip()[-400:]}", flush=True)
    return {"s": round(wall, 3), "cpu_s": round(cpu, 3), "rc": done.returncode, "load": load(),
            "stdout": done.stdout, "stderr": done.stderr}


def make_lecture(path: Path, minutes: float, topic: str = "glacier moraine sediment",
                 subject: str = "ice ages") -> Path:
    """The lecture and its SRT sidecar (path with .srt); ``topic`` and ``subject`` are the slides' words."""
    seconds = int(minutes * 60)
    path.parent.mkdir(parents=True, exist_ok=True)
    slide = (f"drawtext=fontfile={FONT}:fontsize=44:fontcolor=white:x=80:y=120:"
             f"text='Slide %{{eif\\:trunc(t/20)+1\\:d}}\\: {topic}',"
             f"drawtext=fontfile={FONT}:fontsize=30:fontcolor=0xddddaa:x=80:y=220:"
             f"text='Part %{{eif\\:trunc(t/20)*7+3\\:d}} of the lecture on {subject}'")
    graph = (f"color=c=0x203050:s=1280x720:r=30:d={seconds}[bg];"
             f"testsrc2=s=192x108:r=30:d={seconds}[cam];"
             f"[bg][cam]overlay=x=W-w-40:y=H-h-40,{slide}[v]")
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-filter_complex", graph,
                    "-f", "lavfi", "-i", f"sine=frequency=330:sample_rate=16000:duration={seconds}",
                    "-map", "[v]", "-map", "0:a", "-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p",
                    "-c:a", "aac", "-b:a", "32k", str(path)], check=True)
    cues = []
    for i, start in enumerate(range(0, seconds, 5), 1):
        def stamp(t: int) -> str:
            return f"{t // 3600:02d}:{t // 60 % 60:02d}:{t % 60:02d},000"
        said = (f"the lecturer explains sediment layer {i} left by the retreating glacier"
                if topic == "glacier moraine sediment" else f"the lecturer explains {topic}, point {i} of {subject}")
        cues.append(f"{i}\n{stamp(start)} --> {stamp(min(start + 5, seconds))}\n{said}\n")
    path.with_suffix(".srt").write_text("\n".join(cues))
    return path


def run(work: Path, minutes: float, threads: int | None, repeat: int = 3) -> dict[str, Any]:
    results: dict[str, Any] = {"minutes": minutes, "cpus": os.cpu_count(), "load_start": load()}
    video = work / "videos" / "Geology" / "lecture.mp4"
    t0 = time.perf_counter()
    if not video.exists() or not video.with_suffix(".srt").exists():
        make_lecture(video, minutes)
    results["make_s"] = round(time.perf_counter() - t0, 1)
    seconds = minutes * 60
    print(f"lecture: {minutes:g} min 720p30 H.264 + SRT ({video.stat().st_size / 2**20:.1f} MB, made in "
          f"{results['make_s']} s); load {load()}", flush=True)

    def show(label: str, r: dict[str, Any]) -> None:
        print(f"  {label:<44} {r['s']:7.2f} s  cpu {r['cpu_s']:6.2f} s  {seconds / r['s']:7.1f}x real time "
              f"({seconds / max(r['cpu_s'], 1e-9):.0f}x per CPU-second)  load {r['load']:5.2f}", flush=True)

    ff = ["ffmpeg", "-nostdin", "-v", "error", "-threads", "1"]
    results["keyframes_decode"] = process([*ff, "-skip_frame", "nokey", "-i", str(video), "-an", "-f", "null", "-"])
    show("ffmpeg, keyframes only, one thread", results["keyframes_decode"])
    results["full_decode"] = process([*ff, "-i", str(video), "-an", "-f", "null", "-"])
    show("ffmpeg, every frame, one thread", results["full_decode"])

    project = work / "project"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PLAYLISTEVAL_")}  # the defaults a user has
    runs: list[dict[str, Any]] = []
    for attempt in range(max(1, repeat)):  # each in a fresh project: nothing kept from the run before
        if project.exists():
            shutil.rmtree(project)
        process([CLI, "init", str(project)], env=env)
        process([CLI, "--project", str(project), "add", "Geology", str(video.parent)], env=env)
        args = ["--project", str(project), "index", "--json", "--profile"]
        args += ["--threads", str(threads)] if threads else []
        runs.append(process([CLI, *args], env=env))
        show(f"playlisteval index (whole command), run {attempt + 1}", runs[-1])
    # the fastest run: the first after the bench encoded the file, or after other work pushed the models
    # out of the page cache, also reads ~100 MB of model files from disk (model load 0.4-0.6 s, not 0.1)
    r = min(runs, key=lambda run: run["s"] if run["rc"] == 0 else float("inf"))
    results["index"] = {k: v for k, v in r.items() if k not in ("stdout", "stderr")}
    results["index"]["runs_s"] = [run["s"] for run in runs]
    results["index"]["peak_mb"] = round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1)
    show(f"playlisteval index, fastest of {len(runs)}", results["index"])
    try:
        report = json.loads(r["stdout"].strip().splitlines()[-1])
        results["profile"] = report.get("profile", {})
    except (ValueError, IndexError):
        results["profile"] = {}
    print(r["stderr"][-3000:], flush=True)
    results["goals"] = goals(results, seconds)
    print_goals(f"goals (issue 26; load {load()} now):", results["goals"])
    return results


def goals(results: dict[str, Any], seconds: float) -> dict[str, tuple[str, bool]]:
    idx = results["index"]
    x = seconds / idx["s"] if idx["s"] else 0.0
    return {
        f"index, whole command >= {MIN_X_REAL_TIME:g}x real time": (f"{x:.1f}x (load {idx['load']:.1f})",
                                                                   idx["rc"] == 0 and x >= MIN_X_REAL_TIME),
        f"index peak memory <= {MAX_PEAK_MB:g} MB": (f"{idx['peak_mb']:.0f} MB", idx["peak_mb"] <= MAX_PEAK_MB),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench index-command", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=5.0, help="length of the lecture")
    parser.add_argument("--threads", type=int, default=None, help="index threads (default: [index] threads)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="index runs, each in a fresh project; the fastest is kept")
    parser.add_argument("--work", type=Path, default=Path("build/bench/index_command"))
    args = parser.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    results = run(args.work.resolve(), args.minutes, args.threads, args.repeat)
    (args.work.parent / "index_command.json").write_text(json.dumps(results, indent=1))
    return 0 if results["index"]["rc"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
