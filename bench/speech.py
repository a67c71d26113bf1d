"""Speech and search benchmarks (issue 11). In one run:

1. ASR quality and speed: each backend transcribes a fixed text of several hundred words (bench/narration.py)
   as spoken by espeak-ng (en-us, en-gb-x-rp) and by ffmpeg's flite (another synthesiser), cut into the
   index's exact 30-s chunks; word error rate against the text, real-time factor (seconds of audio per
   wall second, model loading excluded) and CPU seconds. qwen3-asr joins with ``--qwen-url`` (a vLLM
   server); no Python package installed here ships a speech sample with its reference text.
2. The demo collection (`synth` 2 domains x 3 videos x 3 minutes, `add`, `index`, as scripts/demo.sh) and
   cold `playlisteval search` on it: each run a new process, wall time with the machine's load.
3. A narrated ordinary video (1280x720, 30 fps, ~3 Mbit/s H.264, espeak-ng narration, no captions) added
   to a copy of that collection and indexed with the defaults, once per offline ASR backend: real-time
   factor of the whole index of the video, word error rate of its stored transcript, and spoken-sentence
   search: for each sentence of the narration (none of them is on screen or in a caption), is the top
   hit of the whole collection the chunk it was said in.

    .venv/bin/python -m bench speech [--work build/bench/speech] [--runs 5] [--qwen-url http://host:8000/v1]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a file: bench/speech.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.narration import NARRATION, Spoken, narrate, video_720p, wer
from playlisteval.actors.indexing import index_collection
from playlisteval.config import IndexSettings, Settings, load_settings, write_project
from playlisteval.index import asr
from playlisteval.index.chunking import chunk_spans
from playlisteval.index.collection import add_manifest, add_paths
from playlisteval.index.search import search
from playlisteval.media.probe import probe
from playlisteval.store import forget_engines, open_store
from playlisteval.world.synth.make import make_collection

VOICES = ("en-us", "en-gb-x-rp", "flite")
PE = Path(sys.executable).with_name("playlisteval")


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def asr_quality(work: Path, backends: list[str], qwen_url: str) -> dict[str, object]:
    out: dict[str, object] = {}
    for voice in VOICES:
        wav = work / f"narration-{voice}.wav"
        if not wav.exists():
            narrate(wav, voice)
        duration = probe_audio_s(wav)
        spans = chunk_spans(duration, 30, 5)
        for name in backends:
            cfg = IndexSettings(asr=name, asr_fallback="", asr_base_url=qwen_url or IndexSettings().asr_base_url)
            backend = asr.get_backend(name, cfg)
            backend.transcribe(wav, spans[:1])  # load the model first: loading is not recognition
            wall, cpu = time.monotonic(), time.process_time()
            texts = backend.transcribe(wav, spans)
            wall, cpu = time.monotonic() - wall, time.process_time() - cpu
            row = {"wer": round(wer(NARRATION, " ".join(texts)), 4), "rtf": round(duration / wall, 1),
                   "wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "audio_s": round(duration, 1),
                   "model": backend.model, "load": load()}
            out[f"{name}/{voice}"] = row
            print(f"asr {name:15s} {voice:11s} WER {row['wer']:.1%}  {row['rtf']:6.1f}x real time "
                  f"({row['wall_s']} s wall, {row['cpu_s']} s CPU)", flush=True)
    return out


def probe_audio_s(wav: Path) -> float:
    import wave

    with wave.open(str(wav)) as w:
        return w.getnframes() / w.getframerate()


def demo_collection(work: Path, runs: int) -> tuple[Path, dict[str, object]]:
    """The demo's collection, indexed; then cold `search` timings on it."""
    project = work / "demo"
    if not (project / "indexed").exists():
        shutil.rmtree(project, ignore_errors=True)
        write_project(project)
        settings = _settings(project)
        make_collection(project / "videos", domains=2, playlists=1, videos=3, minutes=3, seed=0, vp9=1)
        engine = open_store(settings)
        add_manifest(engine, project / "videos" / "manifest.csv")
        report = index_collection(settings, engine)
        (project / "indexed").write_text(f"{report.seconds:.1f}\n")
        forget_engines()
    queries = ["how volcanoes erupt", "the roman legions", "recipe for chocolate cake", "glaciers carve valleys",
               "the parliament voted"]
    walls, bare = [], []
    before = load()
    for _ in range(runs):  # the command line alone, for comparison: what every command pays to start
        started = time.monotonic()
        subprocess.run([str(PE), "--help"], check=True, capture_output=True)
        bare.append(time.monotonic() - started)
    for i in range(runs):
        query = queries[i % len(queries)]
        started = time.monotonic()
        subprocess.run([str(PE), "--project", str(project), "search", query, "--json", "--k", "5"],
                       check=True, capture_output=True, env={**os.environ, **_env()})
        walls.append(time.monotonic() - started)
    result = {"runs": runs, "median_s": round(statistics.median(walls), 2), "max_s": round(max(walls), 2),
              "all_s": [round(w, 2) for w in walls], "help_median_s": round(statistics.median(bare), 2),
              "load_before": before, "load_after": load()}
    print(f"search (cold, demo collection): median {result['median_s']} s, max {result['max_s']} s; "
          f"`playlisteval --help` alone {result['help_median_s']} s (load {before} → {result['load_after']})",
          flush=True)
    return project, result


def _env() -> dict[str, str]:
    # the demo's short segments (scripts/demo.sh): the paper's 10–30 minutes would not fit 3-minute videos
    return {"PLAYLISTEVAL_INDEX__SEGMENT_MIN_S": "60", "PLAYLISTEVAL_INDEX__SEGMENT_MAX_S": "90"}


def _settings(project: Path, **index: object) -> Settings:
    settings = load_settings(project, environ=_env())
    for key, value in index.items():
        setattr(settings.index, key, value)
    return settings


def narrated_index(work: Path, demo: Path, backend: str, video: Path, spoken: list[Spoken]) -> dict[str, object]:
    """A copy of the demo collection, the narrated video added and indexed with ``backend``."""
    project = work / f"narrated-{backend}"
    shutil.rmtree(project, ignore_errors=True)
    shutil.copytree(demo, project, ignore=shutil.ignore_patterns("videos", "media", "indexed"))
    settings = _settings(project, asr=backend)
    engine = open_store(settings)
    folder = project / "talks"
    folder.mkdir()
    shutil.copy(video, folder / video.name)
    add_paths(engine, "Talks", [folder])
    cpu = _cpu_s()
    report = index_collection(settings, engine)
    cpu = _cpu_s() - cpu
    duration = probe(folder / video.name).duration
    hits = [search(settings, engine, s.text, k=1)[0] for s in spoken]
    right = [Path(h.path).name == video.name and h.start <= (s.start + s.end) / 2 < h.end
             for h, s in zip(hits, spoken, strict=True)]
    from sqlmodel import Session, col, select

    from playlisteval.store.tables import Chunk, Video

    with Session(engine) as session:
        chunks = session.exec(select(Chunk).join(Video, col(Video.id) == Chunk.video_id)
                              .where(Video.title == video.stem).order_by(col(Chunk.idx))).all()
    transcript = " ".join(c.transcript for c in chunks)
    corpus = sum(1 for _ in _all_chunks(engine))
    row = {"index_wall_s": round(report.seconds, 2), "rtf": round(duration / report.seconds, 1),
           "index_cpu_s": round(cpu, 2), "cpu_rtf": round(duration / cpu, 1),
           "video_s": round(duration, 1), "chunks": len(chunks), "wer": round(wer(NARRATION, transcript), 4),
           "search_top1": round(sum(right) / len(right), 3), "sentences": len(right), "corpus_chunks": corpus,
           "sources": dict(report.transcript_sources), "ocr_frames": report.ocr_read, "load": load()}
    print(f"narrated 720p30 ({backend}): index {row['rtf']}x real time ({row['index_wall_s']} s for "
          f"{row['video_s']} s; {row['index_cpu_s']} CPU-s, load {row['load']}), transcript WER {row['wer']:.1%}, "
          f"spoken-sentence top-1 {sum(right)}/{len(right)} among {corpus} chunks", flush=True)
    forget_engines()
    return row


def _cpu_s() -> float:
    """CPU seconds of this process and of its finished children (ffmpeg)."""
    import resource

    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _all_chunks(engine: object) -> list[int]:
    from sqlmodel import Session, select

    from playlisteval.store.tables import Chunk

    with Session(engine) as session:  # type: ignore[arg-type]
        return [c for c in session.exec(select(Chunk.id)).all() if c is not None]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, default=Path("build/bench/speech"))
    parser.add_argument("--runs", type=int, default=5, help="cold `search` processes to time")
    parser.add_argument("--qwen-url", default="", help="a vLLM server with Qwen3-ASR, to measure qwen3-asr too")
    parser.add_argument("--skip-asr", action="store_true", help="only the collection, search and narrated video")
    args = parser.parse_args(argv)
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    results: dict[str, object] = {"machine": f"{platform.machine()}, {os.cpu_count()} cores", "load_start": load()}
    backends = ["faster-whisper", "pocketsphinx"] + (["qwen3-asr"] if args.qwen_url else [])
    if not args.skip_asr:
        results["asr"] = asr_quality(work, backends, args.qwen_url)
    demo, results["search_cold"] = demo_collection(work, args.runs)
    video = work / "narrated-720p30.mp4"
    times = work / "narrated-720p30.json"
    if not (video.exists() and times.exists()):
        spoken = narrate(work / "narrated-720p30.wav", "en-us")
        video_720p(work / "narrated-720p30.wav", video)
        times.write_text(json.dumps([s.__dict__ for s in spoken]))
    spoken = [Spoken(**s) for s in json.loads(times.read_text())]
    results["narrated"] = {b: narrated_index(work, demo, b, video, spoken) for b in ("faster-whisper", "pocketsphinx")}
    (work / "results.json").write_text(json.dumps(results, indent=1))
    print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
