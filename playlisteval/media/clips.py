"""Model clips: one stretch of a video re-encoded for a model, cached under the media folder.

A clip is cut by timestamps and re-encoded (stream copies land on keyframes only, DESIGN known traps),
at a low stored frame rate, fit inside a size keeping the aspect ratio, with or without its audio.
Clips are named by a fingerprint of the source's content and the cut's parameters, so the same cut of
the same file is made once and reused by every request and every worker that shares the media folder
(a renamed or moved source keeps its clips; an edited one gets new ones).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import threading
from dataclasses import asdict, dataclass
from pathlib import Path

from playlisteval.errors import MediaError
from playlisteval.media.probe import ProbeInfo, probe, run_ffprobe

CLIP_VERSION = 1  # bump when the encoding below changes, so old clips are not reused
_SAMPLE = 1 << 20  # bytes hashed at each of the three sampled places of a source file
_fingerprints: dict[tuple[str, int, int], str] = {}
_lock = threading.Lock()


@dataclass(frozen=True)
class ClipSpec:
    start: float
    end: float
    fps: float
    size: tuple[int, int] | None  # (width, height) box to fit inside; None keeps the source size
    audio: bool
    crf: int = 28


def content_fingerprint(path: str | Path) -> str:
    """A hash of a file's size and its first, middle and last MiB: content-based, yet cheap for
    multi-GB videos. Cached per (path, size, mtime) within the process."""
    path = Path(path)
    try:
        st = path.stat()
    except OSError:
        raise MediaError(path, "missing") from None
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    with _lock:
        if key in _fingerprints:
            return _fingerprints[key]
    digest = hashlib.sha256(str(st.st_size).encode())
    with path.open("rb") as fh:
        for offset in sorted({0, max(0, st.st_size // 2 - _SAMPLE // 2), max(0, st.st_size - _SAMPLE)}):
            fh.seek(offset)
            digest.update(fh.read(_SAMPLE))
    value = digest.hexdigest()[:32]
    with _lock:
        _fingerprints[key] = value
    return value


def _fit(info: ProbeInfo, box: tuple[int, int] | None) -> tuple[int, int]:
    """The source size scaled down (never up) to fit ``box``, even numbers (x264 needs them)."""
    width, height = info.width or 2, info.height or 2
    scale = 1.0 if box is None else min(1.0, box[0] / width, box[1] / height)
    return max(2, int(width * scale) // 2 * 2), max(2, int(height * scale) // 2 * 2)


def _run(cmd: list[str], source: Path, timeout_s: float) -> None:
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        raise MediaError(source, f"ffmpeg timed out after {timeout_s:.0f} s cutting a clip") from None
    except FileNotFoundError:
        raise MediaError(source, "ffmpeg is not installed") from None
    if done.returncode != 0:
        detail = (done.stderr.strip().splitlines() or ["unknown error"])[-1]
        raise MediaError(source, f"cannot cut a clip: {detail}")


def _target(media_dir: Path, kind: str, source: Path, params: dict[str, object], suffix: str) -> Path:
    body = json.dumps({"source": content_fingerprint(source), "v": CLIP_VERSION, **params}, sort_keys=True)
    name = hashlib.sha256(body.encode()).hexdigest()[:32]
    return media_dir / kind / name[:2] / f"{name}{suffix}"


def _tmp_for(target: Path) -> Path:
    # unique per process and thread: two workers cutting the same clip never share a partial file
    return target.with_name(f".{target.stem}.{os.getpid()}.{threading.get_ident()}{target.suffix}")


def model_clip(source: str | Path, spec: ClipSpec, media_dir: Path, timeout_s: float = 600) -> Path:
    """The mp4 holding [spec.start, spec.end) of ``source`` at spec.fps, fit inside spec.size."""
    source = Path(source)
    info = probe(source)
    start = max(0.0, spec.start)
    end = min(spec.end, info.duration)
    if end - start <= 0:
        raise MediaError(source, f"empty clip [{spec.start:.2f}, {spec.end:.2f}) of a {info.duration:.2f}-s video")
    fps = min(spec.fps, info.fps) if info.fps > 0 else spec.fps
    width, height = _fit(info, spec.size)
    audio = spec.audio and info.has_audio
    params = {**asdict(spec), "start": round(start, 3), "end": round(end, 3), "fps": fps, "size": [width, height],
              "audio": audio}
    target = _target(media_dir, "clips", source, params, ".mp4")
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = _tmp_for(target)
    # -ss before -i while re-encoding seeks exactly (decodes from the previous keyframe and drops
    # what precedes the timestamp); the fps filter then keeps only the frames a model will sample
    cmd = ["ffmpeg", "-nostdin", "-hide_banner", "-v", "error", "-y", "-ss", f"{start:.3f}", "-i", str(source),
           "-t", f"{end - start:.3f}", "-map", "0:v:0",
           "-vf", f"fps={fps:g},scale={width}:{height}", "-c:v", "libx264", "-preset", "veryfast",
           "-crf", str(spec.crf), "-pix_fmt", "yuv420p"]
    cmd += ["-map", "0:a:0", "-c:a", "aac", "-b:a", "64k", "-ac", "1"] if audio else ["-an"]
    cmd += ["-movflags", "+faststart", str(tmp)]
    try:
        _run(cmd, source, timeout_s)
        tmp.replace(target)
    finally:
        tmp.unlink(missing_ok=True)
    return target


def audio_clip(source: str | Path, start: float | None, end: float | None, media_dir: Path,
               fmt: str = "aac", timeout_s: float = 600) -> Path:
    """Mono 16-kHz audio of [start, end) (the whole file when None) as ADTS AAC or WAV; the source may be
    a video or an audio file."""
    source = Path(source)
    if not source.is_file():
        raise MediaError(source, "missing")
    data = run_ffprobe(source)  # not probe(): an audio-only file (a judge's merged track) is fine here
    if not any(s.get("codec_type") == "audio" for s in data.get("streams") or []):
        raise MediaError(source, "no audio stream")
    try:
        duration = float((data.get("format") or {}).get("duration") or 0.0)
    except ValueError:
        duration = 0.0
    lo = max(0.0, start or 0.0)
    hi = min(end if end is not None else duration, duration) if duration > 0 else (end or 0.0)
    if hi - lo <= 0:
        raise MediaError(source, f"empty audio clip [{lo:.2f}, {hi:.2f})")
    if fmt not in ("aac", "wav"):
        raise ValueError(f"audio format must be aac or wav, not {fmt!r}")
    target = _target(media_dir, "audio", source, {"start": round(lo, 3), "end": round(hi, 3), "fmt": fmt},
                     f".{fmt}")
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = _tmp_for(target)
    codec = ["-c:a", "aac", "-b:a", "64k", "-f", "adts"] if fmt == "aac" else ["-c:a", "pcm_s16le", "-f", "wav"]
    cmd = ["ffmpeg", "-nostdin", "-hide_banner", "-v", "error", "-y", "-ss", f"{lo:.3f}", "-i", str(source),
           "-t", f"{hi - lo:.3f}", "-vn", "-map", "0:a:0", "-ac", "1", "-ar", "16000", *codec, str(tmp)]
    try:
        _run(cmd, source, timeout_s)
        tmp.replace(target)
    finally:
        tmp.unlink(missing_ok=True)
    return target


MIME = {".mp4": "video/mp4", ".aac": "audio/aac", ".wav": "audio/wav", ".jpg": "image/jpeg",
        ".jpeg": "image/jpeg", ".png": "image/png", ".webp": "image/webp"}


def mime_of(path: str | Path) -> str:
    return MIME.get(Path(path).suffix.lower(), "application/octet-stream")
