"""What a media file is, from ffprobe's JSON: duration, video codec, size, frame rate, audio or not.

The duration is the container's claim checked against the streams (media/stream_end.py): a header that
says 596 h over 180 s of packets is clamped to the 180 s, with a warning (issue 44).

Every way a file can be unusable (missing, empty, not a video, corrupt) becomes one MediaError with a
short reason, so that `add` can report and skip it (SPEC A2) instead of failing the whole collection.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from playlisteval.errors import MediaError
from playlisteval.media.stream_end import check_claim

# Containers ffprobe reports for single pictures: they have a "video" stream but are not videos.
_IMAGE_FORMATS = ("image2", "png_pipe", "jpeg_pipe", "webp_pipe", "bmp_pipe", "gif", "tiff_pipe")
# Subtitle codecs that carry text (bitmap ones such as dvd_subtitle or hdmv_pgs would need OCR).
TEXT_SUBTITLE_CODECS = frozenset({"subrip", "srt", "webvtt", "mov_text", "ass", "ssa", "text"})


@dataclass(frozen=True)
class ProbeInfo:
    path: str
    duration: float
    codec: str
    width: int
    height: int
    fps: float
    has_audio: bool
    size: int
    # codecs of the embedded text subtitle tracks, in stream order (a transcript source, SPEC A4)
    subtitles: tuple[str, ...] = ()
    # what the file was found to say wrongly (a container duration its streams do not bear out)
    warnings: tuple[str, ...] = ()


def _fps(stream: dict[str, Any]) -> float:
    # avg_frame_rate is the real rate for variable-rate files; r_frame_rate is the fallback.
    for key in ("avg_frame_rate", "r_frame_rate"):
        raw = stream.get(key) or "0/0"
        try:
            value = Fraction(raw)
        except (ValueError, ZeroDivisionError):
            continue
        if value > 0:
            return float(value)
    return 0.0


def _duration(fmt: dict[str, Any], video: dict[str, Any]) -> float:
    for raw in (fmt.get("duration"), video.get("duration")):
        try:
            value = float(str(raw))
        except (TypeError, ValueError):
            continue
        if value > 0:
            return value
    return 0.0


def run_ffprobe(path: Path, timeout_s: float = 60) -> dict[str, Any]:
    """ffprobe's JSON for ``path``; MediaError when ffprobe cannot read it."""
    cmd = ["ffprobe", "-v", "error", "-print_format", "json", "-show_format", "-show_streams", str(path)]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        raise MediaError(path, f"ffprobe timed out after {timeout_s:.0f} s") from None
    except FileNotFoundError:
        raise MediaError(path, "ffprobe is not installed") from None
    if done.returncode != 0:
        detail = (done.stderr.strip().splitlines() or ["unreadable"])[-1]
        raise MediaError(path, f"corrupt or unreadable: {detail}")
    try:
        return json.loads(done.stdout or "{}")
    except json.JSONDecodeError:
        raise MediaError(path, "corrupt or unreadable: ffprobe gave no JSON") from None


def probe(path: str | Path, timeout_s: float = 60) -> ProbeInfo:
    """Probe one file; raise MediaError(path, reason) unless it is a playable video with a duration."""
    path = Path(path)
    if not path.exists():
        raise MediaError(path, "missing")
    if not path.is_file():
        raise MediaError(path, "not a file")
    size = path.stat().st_size
    if size == 0:
        raise MediaError(path, "zero-length file")
    data = run_ffprobe(path, timeout_s)
    streams = data.get("streams") or []
    fmt = data.get("format") or {}
    # attached pictures (cover art) are "video" streams too; they are not the video
    videos = [
        s for s in streams
        if s.get("codec_type") == "video" and not (s.get("disposition") or {}).get("attached_pic")
    ]
    if not videos:
        raise MediaError(path, "not a video (no video stream)")
    video = videos[0]
    if fmt.get("format_name", "") in _IMAGE_FORMATS:
        raise MediaError(path, "not a video (a still image)")
    claimed = _duration(fmt, video)
    if claimed <= 0:
        raise MediaError(path, "corrupt: no duration")
    checked = check_claim(path, claimed, streams)
    return ProbeInfo(
        path=str(path),
        duration=checked.duration,
        codec=str(video.get("codec_name") or "unknown"),
        width=int(video.get("width") or 0),
        height=int(video.get("height") or 0),
        fps=_fps(video),
        has_audio=any(s.get("codec_type") == "audio" for s in streams),
        size=size,
        subtitles=tuple(
            str(s.get("codec_name") or "unknown") for s in streams
            if s.get("codec_type") == "subtitle" and s.get("codec_name") in TEXT_SUBTITLE_CODECS
        ),
        warnings=(checked.warning,) if checked.warning else (),
    )
