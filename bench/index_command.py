"""The whole `playlisteval index` command on video like users', beside the machine's limits (issues 26, 43).

Two rows, each on a file the bench makes (``--minutes``, default 5, of 1280x720 30 fps H.264 with an SRT
sidecar, so no speech recognition):

1. **camera** (the headline, issue 43): bench/camera_media.py's video at ~2.7 Mbit/s, full-frame motion
   and noise, a clock that changes every frame, a ticker, a slide line, narration;
2. **lecture** (issue 26's friendly file, kept as the second row): a flat background, a slide whose text
   changes every 20 s and a small moving inset, ~0.16 Mbit/s.

Per row, each as a process a user would start, with CPU (user + system) and the 1-minute load beside it:
the file's bitrate (ffprobe) and the host gauge — ffmpeg decoding only the keyframes and every frame of
the same file on one thread, and a fixed pure-Python loop's CPU time — then ``playlisteval init`` +
``add`` + ``index --profile --json`` in a fresh project, ``--repeat`` times (3; the fastest kept, each
printed, the profile the fastest run's), and its speed as a ratio of ffmpeg's in the same run.

Goals: the whole index command >= 60x real time on each row, peak memory <= 1.5 GB.

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


def python_loop_s() -> float:
    """User CPU of a fixed pure-Python loop: how fast this host runs the interpreter right now."""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_utime
    sum(range(3 * 10**7))
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_utime - before, 3)


def decode_gauge(video: Path) -> dict[str, Any]:
    """ffmpeg's keyframe-only and full one-thread decode of ``video``: the host's limits for this file."""
    ff = ["ffmpeg", "-nostdin", "-v", "error", "-threads", "1"]
    return {"keyframes_decode": process([*ff, "-skip_frame", "nokey", "-i", str(video), "-an", "-f", "null", "-"]),
            "full_decode": process([*ff, "-i", str(video), "-an", "-f", "null", "-"])}


def index_runs(project: Path, video: Path, threads: int | None, repeat: int,
               show: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """``repeat`` whole `index` commands, each in a fresh project; the fastest run and its profile."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PLAYLISTEVAL_")}  # the defaults a user has
    runs: list[dict[str, Any]] = []
    for attempt in range(max(1, repeat)):  # each in a fresh project: nothing kept from the run before
        if project.exists():
            shutil.rmtree(project)
        process([CLI, "init", str(project)], env=env)
        process([CLI, "--project", str(project), "add", video.parent.name, str(video.parent)], env=env)
        args = ["--project", str(project), "index", "--json", "--profile"]
        args += ["--threads", str(threads)] if threads else []
        runs.append(process([CLI, *args], env=env))
        show(f"playlisteval index (whole command), run {attempt + 1}", runs[-1])
    # the fastest run: the first after the bench encoded the file, or after other work pushed the models
    # out of the page cache, also reads ~100 MB of model files from disk (model load 0.4-0.6 s, not 0.1)
    r = min(runs, key=lambda run: run["s"] if run["rc"] == 0 else float("inf"))
    best = {k: v for k, v in r.items() if k not in ("stdout", "stderr")}
    best["runs_s"] = [run["s"] for run in runs]
    best["runs_load"] = [run["load"] for run in runs]
    try:
        profile = json.loads(r["stdout"].strip().splitlines()[-1]).get("profile", {})
    except (ValueError, IndexError):
        profile = {}
    print(r["stderr"][-1500:], flush=True)
    return best, profile


def measure(work: Path, label: str, video: Path, minutes: float, threads: int | None,
            repeat: int) -> dict[str, Any]:
    """One row: the file's bitrate, the host gauge (ffmpeg decodes, Python loop, load) and the index runs."""
    from bench.camera_media import bitrate_mbps

    seconds = minutes * 60
    out: dict[str, Any] = {"video": str(video), "mbps": round(bitrate_mbps(video), 2)}

    def show(what: str, r: dict[str, Any]) -> None:
        print(f"  {label}: {what:<44} {r['s']:7.2f} s  cpu {r['cpu_s']:6.2f} s  {seconds / r['s']:7.1f}x real time "
              f"({seconds / max(r['cpu_s'], 1e-9):.0f}x per CPU-second)  load {r['load']:5.2f}", flush=True)

    print(f"{label}: {minutes:g} min 720p30 H.264 at {out['mbps']:.2f} Mbit/s + SRT "
          f"({video.stat().st_size / 2**20:.1f} MB); host: Python loop {python_loop_s():.2f} s, load {load()}",
          flush=True)
    out.update(decode_gauge(video))
    show("ffmpeg, keyframes only, one thread", out["keyframes_decode"])
    show("ffmpeg, every frame, one thread", out["full_decode"])
    out["index"], out["profile"] = index_runs(work / f"project-{label}", video, threads, repeat, show)
    show(f"playlisteval index, fastest of {repeat}", out["index"])
    idx = out["index"]
    x, full = seconds / idx["s"], seconds / out["full_decode"]["s"]
    print(f"  {label}: index {x:.1f}x real time = {x / full:.2f}x ffmpeg's full decode and "
          f"{idx['s'] / out['keyframes_decode']['s']:.1f}x the keyframe-only decode's time, same run; "
          f"Python loop {python_loop_s():.2f} s, load {load()}", flush=True)
    return out


def run(work: Path, minutes: float, threads: int | None, repeat: int = 3) -> dict[str, Any]:
    """The headline row on camera-like media (bench/camera_media.py), then the friendly lecture's row."""
    from bench.camera_media import make_camera_video

    results: dict[str, Any] = {"minutes": minutes, "cpus": os.cpu_count(), "load_start": load(),
                               "python_loop_s": python_loop_s()}
    t0 = time.perf_counter()
    camera = make_camera_video(work / "videos-camera" / "News" / "camera.mp4", minutes)
    lecture = work / "videos" / "Geology" / "lecture.mp4"
    if not lecture.exists() or not lecture.with_suffix(".srt").exists():
        make_lecture(lecture, minutes)
    results["make_s"] = round(time.perf_counter() - t0, 1)
    results["camera"] = measure(work, "camera", camera, minutes, threads, repeat)
    results["lecture"] = measure(work, "lecture", lecture, minutes, threads, repeat)
    results["index"] = results["camera"]["index"]  # the headline, as older readers of the JSON expect
    results["index"]["peak_mb"] = round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1)
    results["goals"] = goals(results, minutes * 60)
    print_goals(f"goals (issue 43 on camera-like media, issue 26 on the lecture; load {load()} now):",
                results["goals"], width=34)
    return results


def goals(results: dict[str, Any], seconds: float) -> dict[str, tuple[str, bool]]:
    out: dict[str, tuple[str, bool]] = {}
    for label in ("camera", "lecture"):
        row = results[label]
        idx, full = row["index"], row["full_decode"]
        x = seconds / idx["s"] if idx["s"] else 0.0
        seen = (f"{x:.1f}x ({row['mbps']:.1f} Mbit/s; ffmpeg full {seconds / full['s']:.0f}x, "
                f"load {idx['load']:.1f})")
        out[f"{label}: index, whole command >= {MIN_X_REAL_TIME:g}x real time"] = (
            seen, idx["rc"] == 0 and x >= MIN_X_REAL_TIME)
    peak = results["index"]["peak_mb"]
    out[f"index peak memory <= {MAX_PEAK_MB:g} MB (largest run)"] = (f"{peak:.0f} MB", peak <= MAX_PEAK_MB)
    return out


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
    (args.work.parent / "index_command.json").write_text(json.dumps(results, indent=1, default=str))
    return 0 if results["camera"]["index"]["rc"] == results["lecture"]["index"]["rc"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
