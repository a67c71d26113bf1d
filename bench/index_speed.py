"""Indexing throughput as a real-time factor (seconds of video per wall second), issue 3.

On a synthetic collection (default 2 domains x 3 videos x 5 minutes = 30 minutes), in one run:

1. media, ours: probe, then per video one decoder (decord, PyAV for VP9) reading the sampled frames
   of every chunk at timestamps, and one ffmpeg decode of the audio cut into exact 16 kHz chunks;
2. media, naive baseline: per chunk one ffmpeg re-encode of the exact 30-s piece (H.264 + AAC), then
   the same frames and audio read from that piece;
3. the whole offline index (`index_collection`: captions, frames, OCR, MiniLM vectors, segments,
   seeds) into a fresh store, model loading included.

Both media runs use the same number of worker threads (one video each) as the index does.

    .venv/bin/python -m bench [--minutes 5] [--videos 3] [--threads 2] [--work build/bench]
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

if __package__ in (None, ""):  # run as a file: bench/index_speed.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from playlisteval.config import Settings, write_project
from playlisteval.index.chunking import chunk_spans
from playlisteval.index.collection import add_manifest
from playlisteval.index.pipeline import index_collection
from playlisteval.media.audio import chunk_pcm
from playlisteval.media.frames import FrameReader, sample_times
from playlisteval.media.probe import probe
from playlisteval.store import open_store
from playlisteval.synth.make import make_collection

SAMPLE_RATE = 16000


def _videos(out: Path) -> list[Path]:
    return sorted([*out.glob("*/*/*.mp4"), *out.glob("*/*/*.webm")])


def media_ours(video: Path, cfg: Settings) -> int:
    """Frames and audio of every chunk of one video, the way `index` reads them; frames read."""
    info = probe(video)
    spans = chunk_spans(info.duration, cfg.index.chunk_s, cfg.index.min_last_chunk_s)
    side = cfg.index.ocr_max_side
    frames = 0
    with FrameReader(video, info.codec, (side, side), (info.width, info.height)) as reader:
        for times in sample_times(spans, cfg.index.frames_per_chunk):
            frames += len(reader.read(times))
    for _pcm in chunk_pcm(video, spans, SAMPLE_RATE):
        pass
    return frames


def media_naive(video: Path, cfg: Settings) -> int:
    """The baseline: re-encode each chunk with ffmpeg, then read its frames and audio from the piece."""
    info = probe(video)
    spans = chunk_spans(info.duration, cfg.index.chunk_s, cfg.index.min_last_chunk_s)
    side = cfg.index.ocr_max_side
    frames = 0
    with tempfile.TemporaryDirectory(prefix="naive-") as tmp:
        for i, (start, end) in enumerate(spans):
            piece = Path(tmp) / f"chunk{i}.mp4"
            subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-ss", f"{start:.3f}", "-i", str(video),
                            "-t", f"{end - start:.3f}", "-c:v", "libx264", "-preset", "veryfast", "-c:a", "aac",
                            str(piece)], check=True)
            local = [t - start for t in sample_times([(start, end)], cfg.index.frames_per_chunk)[0]]
            with FrameReader(piece, "h264", (side, side), (info.width, info.height)) as reader:
                frames += len(reader.read(local))
            for _pcm in chunk_pcm(piece, [(0.0, end - start)], SAMPLE_RATE):
                pass
    return frames


def _timed(fn, videos: list[Path], cfg: Settings, threads: int) -> tuple[float, int]:  # type: ignore[no-untyped-def]
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=threads) as pool:
        frames = sum(pool.map(lambda v: fn(v, cfg), videos))
    return time.monotonic() - started, frames


def run(work: Path, domains: int, videos: int, minutes: float, threads: int, seed: int) -> dict[str, object]:
    out = work / "videos"
    t0 = time.monotonic()
    paths = make_collection(out, domains=domains, playlists=1, videos=videos, minutes=minutes, seed=seed)
    synth_s = time.monotonic() - t0
    total = sum(probe(p).duration for p in paths)
    cfg = Settings()
    cfg.index.threads = threads
    results: dict[str, object] = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores", "videos": len(paths),
        "video_s": round(total, 1), "threads": threads, "frames_per_chunk": cfg.index.frames_per_chunk,
        "synth_s": round(synth_s, 1),
    }
    for name, fn in (("media_ours", media_ours), ("media_naive", media_naive)):
        wall, frames = _timed(fn, paths, cfg, threads)
        results[name] = {"wall_s": round(wall, 2), "rtf": round(total / wall, 1), "frames": frames}
        print(f"{name:12s} {wall:7.1f} s  {total / wall:6.1f}x real time", flush=True)
    project = work / "project"
    shutil.rmtree(project, ignore_errors=True)
    write_project(project)
    settings = Settings()
    settings.root, settings.index.threads = project, threads
    engine = open_store(settings)
    add_manifest(engine, out / "manifest.csv")
    report = index_collection(settings, engine)
    results["index_offline"] = {
        "wall_s": round(report.seconds, 2), "rtf": round(total / report.seconds, 1), "chunks": report.chunks,
        "ocr_frames_read": report.ocr_read, "ocr_frames_reused": report.ocr_reused,
        "embedded": report.embedded, "seeds": report.seeds.inserted,
    }
    print(f"{'index':12s} {report.seconds:7.1f} s  {total / report.seconds:6.1f}x real time "
          f"({report.chunks} chunks, OCR {report.ocr_read} frames read, {report.ocr_reused} reused)", flush=True)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--domains", type=int, default=2)
    parser.add_argument("--videos", type=int, default=3, help="videos per domain")
    parser.add_argument("--minutes", type=float, default=5.0, help="minutes per video")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work", type=Path, default=Path("build/bench"), help="synthetic videos and stores")
    args = parser.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    results = run(args.work, args.domains, args.videos, args.minutes, args.threads, args.seed)
    (args.work / "results.json").write_text(json.dumps(results, indent=1))
    print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
