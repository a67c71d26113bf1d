"""Evidence as request parts: frame images (JPEG files at the judge's frame size) and chunk audio.

A frame `index` kept (playlisteval/media/kept.py; evidence moves frames onto them) is served from its
kept JPEG: as it is when it already fits the judge's frame size, else shrunk from it; only a frame that
is not kept, or a size bigger than the kept one, is decoded from the video. Frames are written once per
video, size and timestamp under ``<media>/frames`` and reused by every run. A video's frames to decode
are read in one pass in time order, given the video's keyframes (``cold_frames = "keyframe"``: the
evidence moved cold frames onto them, and a keyframe decodes with non-key frames skipped), and the
videos of one evidence are read in parallel (PyAV and decord decode with the GIL released).

Audio (SPEC G3, MP3 by default) is either one track — the served chunks' audio in frame order, each
followed by a pause, at a playback speed — for APIs that take one audio input, or one part per chunk ("turns").
ffmpeg cuts, resamples (16 kHz mono), speeds up (atempo) and joins; the pause is not sped up. A video
without an audio stream contributes silence of its chunk's length. Tracks are cached by content key.
"""

from __future__ import annotations

import hashlib
import subprocess
import threading
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path

from PIL import Image

from playlisteval.config import Settings
from playlisteval.errors import ConfigError, MediaError
from playlisteval.eval.evidence import Evidence, Frame
from playlisteval.media.frames import fit_size, save_frames
from playlisteval.media.kept import KeptFrames, kept_root
from playlisteval.media.keyframe_cache import cached_keyframes
from playlisteval.media.probe import probe
from playlisteval.models.request import AudioPart, ImagePart

SAMPLE_RATE = 16000
#: container suffix → (ffmpeg encoder, muxer). MP3 encodes several times faster than ffmpeg's AAC.
AUDIO_FORMATS = {"mp3": ("libmp3lame", "mp3"), "m4a": ("aac", "mp4"), "wav": ("pcm_s16le", "wav")}
#: videos of one evidence decoded at once: a pair's few videos each get a thread; more would only
#: contend with the other questions judged at once (``[eval] workers``)
MAX_READ_THREADS = 4
_dir_locks: dict[Path, threading.Lock] = defaultdict(threading.Lock)
_dir_locks_guard = threading.Lock()


def _lock_for(folder: Path) -> threading.Lock:
    """One writer per frame folder: two questions may want the same video's frames at once."""
    with _dir_locks_guard:
        return _dir_locks[folder]


def image_parts(settings: Settings, evidence: Evidence, size: tuple[int, int]) -> list[ImagePart]:
    """One image part per frame, in evidence order; without files when frames are not materialised."""
    if not settings.eval.materialize_frames:
        # a reference that names the frame; only the sim (which reads worlds) can use it
        return [ImagePart(path=f"{f.path}@{f.t:.3f}", timestamp=f.t, source=f.path) for f in evidence.frames]
    by_video: dict[int, list[int]] = defaultdict(list)
    for i, frame in enumerate(evidence.frames):
        by_video[frame.video_id].append(i)
    paths: list[Path | None] = [None] * len(evidence.frames)
    reads: list[tuple[Frame, Path, list[int]]] = []  # (the video's first frame, its folder, frames to decode)
    for video_id, indices in by_video.items():
        first = evidence.frames[indices[0]]
        out_dir = settings.media_dir / "frames" / f"video-{video_id}" / f"{size[0]}x{size[1]}"
        kept = KeptFrames(kept_root(settings.media_dir), first.path) if Path(first.path).is_file() else None
        decode = []
        for i in indices:
            paths[i] = _from_kept(kept, evidence.frames[i].t, out_dir, size) if kept is not None else None
            if paths[i] is None:
                decode.append(i)
        if decode:
            reads.append((first, out_dir, decode))

    def read(job: tuple[Frame, Path, list[int]]) -> list[Path]:
        first, out_dir, indices = job
        times = [evidence.frames[i].t for i in indices]
        keys = _keys_among(settings, first.path, times)
        with _lock_for(out_dir):
            return save_frames(first.path, times, out_dir, first.codec, size, keyframes=keys)

    if len(reads) > 1:
        with ThreadPoolExecutor(max_workers=min(MAX_READ_THREADS, len(reads))) as pool:
            written = list(pool.map(read, reads))  # the first video's error is raised once all have ended
    else:
        written = [read(job) for job in reads]
    for (_, _, indices), files in zip(reads, written, strict=True):
        for i, path in zip(indices, files, strict=True):
            paths[i] = path
    return [ImagePart(path=str(p), timestamp=f.t, source=f.path) for p, f in zip(paths, evidence.frames, strict=True)]


def _keys_among(settings: Settings, video: str, times: list[float]) -> list[float] | None:
    """The video's keyframe times when some of ``times`` are keyframes, so that the reader decodes those
    with non-key frames skipped; else None and the exact reader of before (decord for H.264)."""
    if settings.eval.cold_frames != "keyframe":
        return None
    keys = cached_keyframes(settings.media_dir, video)
    if not keys:
        return None
    wanted = set(round(t, 4) for t in times)
    return keys if any(round(k, 4) in wanted for k in keys) else None


def _from_kept(kept: KeptFrames, t: float, out_dir: Path, size: tuple[int, int]) -> Path | None:
    """The kept frame at ``t`` fitted inside ``size`` (no decoding); None when it is not kept or too small."""
    source = kept.path(t)
    try:
        with Image.open(source) as image:
            if fit_size(image.width, image.height, size) == image.size:
                return source  # already the judge's size
            if fit_size(image.width, image.height, size)[0] > image.width:
                return None  # a bigger frame than was kept: decode it
            target = out_dir / f"{t:010.3f}.jpg"
            if not target.is_file():
                out_dir.mkdir(parents=True, exist_ok=True)
                small = image.convert("RGB").resize(fit_size(image.width, image.height, size),
                                                    Image.Resampling.BILINEAR)
                tmp = target.with_name(f"{target.stem}.kept.{threading.get_ident()}.tmp")
                small.save(tmp, "JPEG", quality=85)
                tmp.replace(target)
            return target
    except FileNotFoundError:
        return None


@lru_cache(maxsize=4096)
def _has_audio(path: str) -> bool:
    try:
        return probe(path).has_audio
    except MediaError:
        return False


def _track_key(pieces: list[tuple[str, float, float]], speed: float, pause_s: float, bitrate: str) -> str:
    body = repr((pieces, round(speed, 4), round(pause_s, 4), bitrate)).encode()
    return hashlib.sha256(body).hexdigest()[:24]


def merge_audio(pieces: list[tuple[str, float, float]], out: Path, *, speed: float = 1.0, pause_s: float = 0.6,
                bitrate: str = "32k") -> Path:
    """One track (its format by ``out``'s suffix): each (video, start, end) piece's audio at ``speed``, a
    pause after all but the last."""
    if out.suffix.lstrip(".") not in AUDIO_FORMATS:
        raise ConfigError(f"audio format {out.suffix!r}: one of {', '.join(AUDIO_FORMATS)}")
    if not pieces:
        raise MediaError(out, "no audio to merge")
    with _lock_for(out):  # two questions may serve the same chunks at once
        if not out.is_file():
            _merge(pieces, out, speed, pause_s, bitrate)
    return out


def _merge(pieces: list[tuple[str, float, float]], out: Path, speed: float, pause_s: float, bitrate: str) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    cmd = ["ffmpeg", "-nostdin", "-v", "error", "-y"]
    filters, labels = [], []
    for i, (path, start, end) in enumerate(pieces):
        length = max(0.01, end - start)
        if _has_audio(path):
            cmd += ["-ss", f"{start:.3f}", "-t", f"{length:.3f}", "-i", path]
        else:  # silence as long as the piece would have played
            cmd += ["-f", "lavfi", "-t", f"{length:.3f}", "-i", f"anullsrc=r={SAMPLE_RATE}:cl=mono"]
        chain = f"[{i}:a]aresample={SAMPLE_RATE},aformat=sample_fmts=fltp:channel_layouts=mono"
        if abs(speed - 1.0) > 1e-9:
            chain += f",atempo={speed:g}"
        if i < len(pieces) - 1 and pause_s > 0:
            chain += f",apad=pad_dur={pause_s:g}"
        filters.append(f"{chain}[a{i}]")
        labels.append(f"[a{i}]")
    graph = ";".join(filters) + ";" + "".join(labels) + f"concat=n={len(pieces)}:v=0:a=1[out]"
    tmp = out.with_name(out.stem + ".part" + out.suffix)
    encoder, muxer = AUDIO_FORMATS[out.suffix.lstrip(".")]
    cmd += ["-filter_complex", graph, "-map", "[out]", "-c:a", encoder, "-ar", str(SAMPLE_RATE), "-ac", "1"]
    cmd += ["-b:a", bitrate] if encoder != "pcm_s16le" else []
    cmd += ["-f", muxer, str(tmp)]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    except FileNotFoundError:
        raise MediaError(out, "ffmpeg is not installed") from None
    if done.returncode != 0:
        tmp.unlink(missing_ok=True)
        detail = (done.stderr.strip().splitlines() or ["unknown error"])[-1]
        raise MediaError(out, f"audio merge failed: {detail}")
    tmp.replace(out)


def played_seconds(pieces: list[tuple[str, float, float]], speed: float, pause_s: float) -> float:
    """How long a merged track plays: the pieces at ``speed`` plus the pauses between them."""
    return sum((e - s) / speed for _, s, e in pieces) + pause_s * max(0, len(pieces) - 1)


def audio_parts(settings: Settings, evidence: Evidence, *, mode: str, speed: float, pause_s: float) -> list[AudioPart]:
    """The served chunks' audio: one merged part ("track") or one part per chunk ("turns")."""
    paths = {f.chunk_id: f.path for f in evidence.frames}
    pieces_of = [(paths[c.chunk_id], c.start, c.end) for c in evidence.chunks if c.chunk_id in paths]
    folder = settings.media_dir / "eval_audio"
    bitrate, suffix = settings.eval.audio_bitrate, settings.eval.audio_format
    if mode == "track":
        if not pieces_of:
            return []
        out = folder / f"{_track_key(pieces_of, speed, pause_s, bitrate)}.{suffix}"
        merge_audio(pieces_of, out, speed=speed, pause_s=pause_s, bitrate=bitrate)
        return [AudioPart(path=str(out), start=0.0, end=played_seconds(pieces_of, speed, pause_s))]
    if mode != "turns":
        raise ConfigError(f"unknown audio mode {mode!r}: track or turns")
    parts = []
    for piece in pieces_of:
        out = folder / f"{_track_key([piece], speed, 0.0, bitrate)}.{suffix}"
        merge_audio([piece], out, speed=speed, pause_s=0.0, bitrate=bitrate)
        parts.append(AudioPart(path=str(out), start=0.0, end=played_seconds([piece], speed, 0.0)))
    return parts
