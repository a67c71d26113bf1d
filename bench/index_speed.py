"""Indexing throughput as a real-time factor (seconds of video per wall second), issues 3 and 13.

Two collections, each figure in a process of its own (bench/index_figures.py), the machine's load
average printed beside it, every figure also given as a ratio against its baseline in the same run:

- synthetic: 2 domains x 3 videos x 5 minutes (640x360, 2 fps, one VP9), captions beside them;
- 720p: synthetic videos re-encoded to 1280x720, 30 fps, H.264 with x264's default preset and a
  keyframe every 8 s (-g 240), with temporal grain so that every frame is decoded like camera video;
  captions beside them. Made once and kept under the work folder.

Per collection: the media steps (frames of every chunk + exact 16 kHz chunk audio) three ways —
keyframe-aware (ours), exact timestamps (the previous way) and the naive per-chunk re-encode (the
baseline); the keyframe listing by PyAV (packets) vs decord (its index); the whole offline `index`
(captions given, so no ASR) with its peak memory; then 128-frame evidence for one question after
`index` (from the kept frames) against the same evidence decoded from the video.

    .venv/bin/python -m bench [--minutes 5] [--videos 3] [--hd-videos 2] [--hd-minutes 5] [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: bench/index_speed.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from playlisteval.config import write_project
from playlisteval.media.probe import probe
from playlisteval.world.synth.make import make_collection

ROOT = Path(__file__).resolve().parents[1]
HD_FILTER = "scale=1280:720:flags=bicubic,fps=30,noise=alls=6:allf=t"


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def figure(name: str, **args: Any) -> dict[str, Any]:
    """Run one figure in a fresh process; its JSON result with the load average before and after."""
    before = _load()
    done = subprocess.run([sys.executable, "-m", "bench.index_figures", name, json.dumps(args)], cwd=ROOT,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"figure {name} failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    result["load_1m"] = [before, _load()]
    return result


def make_hd(out: Path, source: Path, videos: int, minutes: float, seed: int) -> list[Path]:
    """The 720p collection: synthetic scenes re-encoded as ordinary 30-fps H.264 (kept between runs)."""
    src = make_collection(source, domains=1, playlists=1, videos=videos, minutes=minutes, seed=seed, vp9=0)
    jobs = []
    for path in src:
        target = out / path.relative_to(source)
        target.parent.mkdir(parents=True, exist_ok=True)
        for sidecar in path.parent.glob(f"{path.stem}.*"):
            if sidecar.suffix in (".vtt", ".srt"):
                shutil.copy2(sidecar, target.with_suffix(sidecar.suffix))
        if not target.is_file():
            jobs.append((path, target))

    def encode(pair: tuple[Path, Path]) -> None:
        path, target = pair
        tmp = target.with_name(target.stem + ".part.mp4")
        subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-i", str(path), "-vf", HD_FILTER,
                        "-c:v", "libx264", "-g", "240", "-pix_fmt", "yuv420p", "-c:a", "aac", str(tmp)], check=True)
        tmp.replace(target)

    with ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(encode, jobs))
    return sorted(out / p.relative_to(source) for p in src)


def _project(work: Path, name: str, folders: dict[str, list[Path]]) -> Path:
    """A fresh project with the collection added (folders by domain): what `playlisteval add` does."""
    from playlisteval.config import load_settings
    from playlisteval.index.collection import add_paths
    from playlisteval.store import open_store

    project = work / name
    shutil.rmtree(project, ignore_errors=True)
    write_project(project)
    engine = open_store(load_settings(project))
    for domain, paths in folders.items():
        add_paths(engine, domain, paths)
    engine.dispose()
    return project


def _ratio(a: float, b: float) -> float:
    return round(a / b, 2) if b > 0 else float("nan")


def measure(work: Path, label: str, paths: list[Path], folders: dict[str, list[Path]], threads: int,
            evidence_frames: int) -> dict[str, Any]:
    total = sum(probe(p).duration for p in paths)
    videos = [str(p) for p in paths]
    out: dict[str, Any] = {"videos": len(paths), "video_s": round(total, 1)}
    for name in ("media_keyed", "media_exact", "media_naive"):
        result = figure(name, videos=videos, threads=threads)
        result["rtf"] = round(total / result["wall_s"], 1)
        out[name] = result
        print(f"{label:9s} {name:12s} {result['wall_s']:7.1f} s  {result['rtf']:7.1f}x real time  "
              f"peak {result['peak_rss_mb']:6.0f} MB  load {result['load_1m']}", flush=True)
    keyed, exact, naive = (out[n]["wall_s"] for n in ("media_keyed", "media_exact", "media_naive"))
    out["media_keyed"]["vs_naive"] = _ratio(naive, keyed)
    out["media_keyed"]["vs_exact"] = _ratio(exact, keyed)
    out["media_exact"]["vs_naive"] = _ratio(naive, exact)
    print(f"{label:9s} keyframe-aware media: {out['media_keyed']['vs_naive']}x the re-encode baseline, "
          f"{out['media_keyed']['vs_exact']}x exact sampling", flush=True)
    out["keyframe_listing"] = figure("keyframes", videos=videos)
    print(f"{label:9s} keyframe listing {out['keyframe_listing']}", flush=True)
    project = _project(work, f"project-{label}", folders)
    result = figure("index", project=str(project), threads=threads)
    result["rtf"] = round(total / result["wall_s"], 1)
    result["vs_naive_media"] = _ratio(naive, result["wall_s"])
    out["index_offline"] = result
    print(f"{label:9s} {'index':12s} {result['wall_s']:7.1f} s  {result['rtf']:7.1f}x real time  "
          f"peak {result['peak_rss_mb']:6.0f} MB  load {result['load_1m']} ({result['chunks']} chunks, OCR "
          f"{result['ocr_frames_read']} read, {result['ocr_frames_reused']} reused)", flush=True)
    kept = figure("evidence", project=str(project), frames=evidence_frames)
    with tempfile.TemporaryDirectory(prefix="nokept-", dir=work) as empty:
        decoded = figure("evidence", project=str(project), frames=evidence_frames, media_dir=empty)
    out["evidence"] = {"kept": kept, "decoded": decoded}
    print(f"{label:9s} evidence: retriever model and index loaded once per worker in {kept['load_s']:.2f} s",
          flush=True)
    for mode in ("uniform", "retrieved"):
        k, d = kept[mode]["wall_s"], decoded[mode]["wall_s"]
        out["evidence"][f"{mode}_vs_decoded"] = _ratio(d, k)
        print(f"{label:9s} evidence {mode:9s} {evidence_frames} frames: kept {k:6.2f} s, decoded {d:6.2f} s "
              f"({_ratio(d, k)}x)  load {kept['load_1m']} / {decoded['load_1m']}", flush=True)
    return out


def run(work: Path, domains: int, videos: int, minutes: float, hd_videos: int, hd_minutes: float, threads: int,
        seed: int, evidence_frames: int, only: str) -> dict[str, Any]:
    results: dict[str, Any] = {"machine": f"{platform.machine()}, {os.cpu_count()} cores", "threads": threads,
                               "load_1m_start": _load(), "started": time.strftime("%Y-%m-%d %H:%M:%S")}
    if only in ("all", "synthetic"):
        out = work / "videos"
        paths = make_collection(out, domains=domains, playlists=1, videos=videos, minutes=minutes, seed=seed)
        by_domain: dict[str, list[Path]] = {}
        for p in paths:
            by_domain.setdefault(p.parent.parent.name, []).append(p.parent)
        folders = {d: sorted(set(ps)) for d, ps in by_domain.items()}
        results["synthetic"] = measure(work, "synthetic", paths, folders, threads, evidence_frames)
    if only in ("all", "720p"):
        started = time.monotonic()
        tag = f"{hd_videos}x{hd_minutes:g}min-seed{seed}"  # a kept collection is reused only for the same request
        paths = make_hd(work / f"videos-720p-{tag}", work / f"videos-720p-source-{tag}", hd_videos, hd_minutes,
                        seed + 1)
        print(f"720p collection ready in {time.monotonic() - started:.0f} s", flush=True)
        folders = {p.parent.parent.name: [p.parent] for p in paths}
        results["720p"] = measure(work, "720p", paths, folders, threads, evidence_frames)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--domains", type=int, default=2)
    parser.add_argument("--videos", type=int, default=3, help="synthetic videos per domain")
    parser.add_argument("--minutes", type=float, default=5.0, help="minutes per synthetic video")
    parser.add_argument("--hd-videos", type=int, default=2, help="720p videos")
    parser.add_argument("--hd-minutes", type=float, default=5.0, help="minutes per 720p video")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--evidence-frames", type=int, default=128)
    parser.add_argument("--only", choices=("all", "synthetic", "720p"), default="all")
    parser.add_argument("--work", type=Path, default=Path("build/bench"), help="videos, projects and results")
    args = parser.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    args.work = args.work.resolve()
    results = run(args.work, args.domains, args.videos, args.minutes, args.hd_videos, args.hd_minutes,
                  args.threads, args.seed, args.evidence_frames, args.only)
    results["goals"] = goals(results)
    (args.work / f"index{'' if args.only == 'all' else '-' + args.only}.json").write_text(json.dumps(results, indent=1))
    print(json.dumps(results, indent=1))
    print("goals (issue 13):")
    for goal, (seen, met) in results["goals"].items():
        print(f"  {goal:<58} {seen:>10}  {'met' if met else 'NOT met'}", flush=True)
    return 0


MEDIA_RTF_MIN, MEDIA_VS_REENCODE_MIN, INDEX_RTF_MIN = 300.0, 10.0, 60.0  # issue 13, on the 720p file
INDEX_PEAK_MB_MAX, EVIDENCE_S_MAX = 1536.0, 0.5  # the index's peak memory; 128-frame evidence after `index`


def goals(results: dict[str, Any]) -> dict[str, tuple[str, bool]]:
    """Each goal this run measured, with what it saw and whether it holds: media and index speed on the
    720p collection (ordinary video), memory and evidence on every collection measured."""
    out: dict[str, tuple[str, bool]] = {}
    hd = results.get("720p") or {}
    if "media_keyed" in hd:
        rtf, vs = hd["media_keyed"]["rtf"], hd["media_keyed"]["vs_naive"]
        out[f"720p media >= {MEDIA_RTF_MIN:g}x real time"] = (f"{rtf:g}x", rtf >= MEDIA_RTF_MIN)
        out[f"720p media >= {MEDIA_VS_REENCODE_MIN:g}x the re-encode"] = (f"{vs:g}x", vs >= MEDIA_VS_REENCODE_MIN)
    if "index_offline" in hd:
        rtf = hd["index_offline"]["rtf"]
        out[f"720p whole offline index >= {INDEX_RTF_MIN:g}x real time"] = (f"{rtf:g}x", rtf >= INDEX_RTF_MIN)
    for name in ("synthetic", "720p"):
        got = results.get(name) or {}
        if "index_offline" in got:
            peak = got["index_offline"]["peak_rss_mb"]
            out[f"{name} index peak memory <= {INDEX_PEAK_MB_MAX:g} MB"] = (f"{peak:g} MB", peak <= INDEX_PEAK_MB_MAX)
        kept = (got.get("evidence") or {}).get("kept") or {}
        if "uniform" in kept:
            wall, frames = kept["uniform"]["wall_s"], kept["uniform"]["frames"]
            out[f"{name} {frames}-frame evidence after index <= {EVIDENCE_S_MAX:g} s"] = (
                f"{wall:.3f} s", wall <= EVIDENCE_S_MAX)
    return out


if __name__ == "__main__":
    raise SystemExit(main())
