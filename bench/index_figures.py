"""The figures of the index benchmark, each run in a process of its own (bench/index_speed.py starts them).

    python -m bench.index_figures FIGURE '{"videos": [...], ...}'   → one JSON line on stdout

Each prints its wall time, what it did, and the process's peak resident memory (getrusage), so that a
figure is neither warmed nor inflated by the one before it.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from playlisteval.config import Settings
from playlisteval.index.chunking import chunk_spans
from playlisteval.media.audio import chunk_pcm
from playlisteval.media.frames import FrameReader, keyed_sample_times, keyframe_times, sample_times
from playlisteval.media.probe import probe

SAMPLE_RATE = 16000


def _spans(video: Path, cfg: Settings) -> tuple[Any, list[tuple[float, float]]]:
    info = probe(video)
    return info, chunk_spans(info.duration, cfg.index.chunk_s, cfg.index.min_last_chunk_s)


def _audio(video: Path, spans: list[tuple[float, float]]) -> None:
    for _pcm in chunk_pcm(video, spans, SAMPLE_RATE):
        pass


def media_keyed(video: Path, cfg: Settings) -> int:
    """Ours: keyframe times from the packets, samples on keyframes inside their quarter (non-key frames
    skipped), exact otherwise; one ffmpeg decode cuts the exact 16 kHz audio of every chunk."""
    info, spans = _spans(video, cfg)
    side = cfg.index.ocr_max_side
    keys = keyframe_times(video)
    frames = 0
    with FrameReader(video, info.codec, (side, side), (info.width, info.height), keyframes=keys) as reader:
        for times in keyed_sample_times(spans, cfg.index.frames_per_chunk, keys):
            frames += len(reader.read(times))
    _audio(video, spans)
    return frames


def media_exact(video: Path, cfg: Settings) -> int:
    """The previous way: every sample at its exact timestamp (decord, PyAV for VP9), same audio."""
    info, spans = _spans(video, cfg)
    side = cfg.index.ocr_max_side
    frames = 0
    with FrameReader(video, info.codec, (side, side), (info.width, info.height)) as reader:
        for times in sample_times(spans, cfg.index.frames_per_chunk):
            frames += len(reader.read(times))
    _audio(video, spans)
    return frames


def media_naive(video: Path, cfg: Settings) -> int:
    """The baseline: re-encode each chunk with ffmpeg, then read its frames and audio from the piece."""
    info, spans = _spans(video, cfg)
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
            _audio(piece, [(0.0, end - start)])
            piece.unlink()
    return frames


def keyframe_listing(videos: list[Path]) -> dict[str, float]:
    """Seconds to list every keyframe: PyAV demuxing packets vs decord's index (opening included)."""
    import decord

    started = time.monotonic()
    pyav = sum(len(keyframe_times(v)) for v in videos)
    pyav_s = time.monotonic() - started
    started = time.monotonic()
    dec = 0
    for v in videos:
        if probe(v).codec in ("h264", "hevc"):
            dec += len(decord.VideoReader(str(v), ctx=decord.cpu(0), num_threads=1).get_key_indices())
    return {"pyav_demux_s": round(pyav_s, 3), "keyframes": pyav, "decord_index_s": round(time.monotonic() - started, 3),
            "decord_keyframes": dec}


MEDIA: dict[str, Callable[[Path, Settings], int]] = {
    "media_keyed": media_keyed, "media_exact": media_exact, "media_naive": media_naive}


def run_media(name: str, videos: list[Path], threads: int) -> dict[str, Any]:
    cfg = Settings()
    fn = MEDIA[name]
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=threads) as pool:
        frames = sum(pool.map(lambda v: fn(v, cfg), videos))
    return {"wall_s": time.monotonic() - started, "frames": frames}


def run_index(project: Path, threads: int) -> dict[str, Any]:
    """`index` on a project whose videos are added (captions beside them): the whole offline index."""
    from playlisteval.actors.indexing import index_collection
    from playlisteval.config import load_settings
    from playlisteval.store import open_store

    settings = load_settings(project)
    settings.index.threads = threads
    report = index_collection(settings, open_store(settings))
    return {"wall_s": report.seconds, "chunks": report.chunks, "ocr_frames_read": report.ocr_read,
            "ocr_frames_reused": report.ocr_reused, "embedded": report.embedded}


def run_evidence(project: Path, media_dir: str | None, frames: int) -> dict[str, Any]:
    """128-frame evidence for one question (a judge pair's input): uniform and retrieved, frames as the
    judge's 640x480 JPEGs, in a judge worker whose retriever is loaded (the load timed apart)."""
    from sqlmodel import Session, select

    from playlisteval.config import load_settings
    from playlisteval.eval.corpus import Corpora, GoldSegment, Question
    from playlisteval.eval.evidence import Retriever, select_evidence
    from playlisteval.eval.media import image_parts
    from playlisteval.store import open_store
    from playlisteval.store.tables import Domain

    settings = load_settings(project)
    if media_dir is not None:  # the baseline: a media folder with no kept frames, so every frame is decoded
        settings.media.dir = media_dir
    engine = open_store(settings)
    out: dict[str, Any] = {}
    with Session(engine) as s:
        domain = s.exec(select(Domain).order_by(Domain.id)).first()  # type: ignore[arg-type]
    assert domain is not None and domain.id is not None
    corpora = Corpora(engine, settings)
    videos = corpora.domain(domain.id)
    gold = GoldSegment(0, videos[0].video_id, 0, 0)
    # what a judge worker does once: load the retriever's model and the domain's index (one warm-up query)
    started = time.monotonic()
    retriever = Retriever(engine, settings)
    warm = Question(0, domain.id, domain.name, "warm up", (gold, gold))
    retriever.top_chunks(warm, videos, 1, whole_domain=True)
    out["load_s"] = time.monotonic() - started
    question = Question(1, domain.id, domain.name, "what does the sign on the screen say", (gold, gold))
    for mode in ("uniform", "retrieved"):
        started = time.monotonic()
        evidence = select_evidence(corpora, retriever if mode == "retrieved" else None, question, mode, "domain",
                                   frames, 2)
        parts = image_parts(settings, evidence, (640, 480))
        out[mode] = {"wall_s": time.monotonic() - started, "frames": len(parts)}
    return out


def _peak_mb() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(own / 1024, 1)  # Linux reports KiB


def main(argv: list[str]) -> int:
    name, args = argv[0], json.loads(argv[1])
    if name in MEDIA:
        result = run_media(name, [Path(v) for v in args["videos"]], args["threads"])
    elif name == "keyframes":
        result = keyframe_listing([Path(v) for v in args["videos"]])
    elif name == "index":
        result = run_index(Path(args["project"]), args["threads"])
    elif name == "evidence":
        result = run_evidence(Path(args["project"]), args.get("media_dir"), args["frames"])
    else:
        raise SystemExit(f"unknown figure {name!r}")
    result["peak_rss_mb"] = _peak_mb()
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
