"""Where a file's audio and video really end, and whether its container's claimed duration can be believed.

A container header is one number anyone can write: a 180-s MP4 whose `mvhd` says 596 h made `index` plan
71,520 chunks and seek past the end for each of them for 14 minutes (issue 44). The streams are harder
to fake, so the claim is checked against them: the end of the last packets (read after one seek to the
end, no decoding: milliseconds even for a long file, since MP4 and Matroska seek by their index and
other containers by a byte bisection), else the streams' own durations from ffprobe. A claim far past
that end is clamped to it, with a warning that names the file and both numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# A claim this much longer than the streams is a lie, not the rounding of edit lists, priming samples
# or a subtitle track that outlasts the picture (those are seconds, not minutes).
_SLACK_S = 60.0
_SLACK_SHARE = 0.25
# Packets read after the seek at most: a demuxer that ignored the seek and started over must not
# turn this check into a read of the whole file.
_MAX_PACKETS = 20_000


@dataclass(frozen=True)
class Checked:
    duration: float  # what the file should be treated as lasting
    warning: str = ""  # why it differs from the claim; "" when the claim stood


def _positive(raw: object) -> float:
    try:
        value = float(str(raw))
    except (TypeError, ValueError):
        return 0.0
    return value if math.isfinite(value) and value > 0 else 0.0


def metadata_end(streams: list[dict[str, Any]]) -> float:
    """The longest audio or video stream by ffprobe's per-stream numbers: its duration, else its frame
    count over its (timestamp-guessed) frame rate; 0.0 when no stream says."""
    best = 0.0
    for s in streams:
        if s.get("codec_type") not in ("video", "audio") or (s.get("disposition") or {}).get("attached_pic"):
            continue
        best = max(best, _positive(s.get("duration")))
        if s.get("codec_type") == "video":
            frames, rate = _positive(s.get("nb_frames")), _rate(str(s.get("r_frame_rate") or ""))
            if frames and rate:
                best = max(best, frames / rate)
    return best


def _rate(raw: str) -> float:
    num, _, den = raw.partition("/")
    n, d = _positive(num), _positive(den or "1")
    return n / d if n and d else 0.0


def packets_end(path: str | Path, claimed: float) -> float | None:
    """Seconds from the file's start to the end of its last audio or video packet, read after a seek to
    the claimed end; None when PyAV cannot tell (no such streams, an unseekable or unreadable file, or
    no end within ``_MAX_PACKETS`` packets)."""
    import av

    try:
        with av.open(str(path)) as container:
            streams = [s for s in (*container.streams.video, *container.streams.audio)
                       if not (s.disposition & av.stream.Disposition.attached_pic)]
            if not streams:
                return None
            begin = min((float(s.start_time * s.time_base) for s in streams
                         if s.start_time is not None and s.time_base), default=0.0)
            # backward from the (claimed) end: the demuxer lands on the last keyframe before it
            # (capped: a claim of 1e15 s would overflow the int64 timestamp and lose the evidence)
            container.seek(int(min(max(claimed, 0.0), 1e11) * av.time_base), backward=True, any_frame=False)
            end, count = None, 0
            for packet in container.demux(streams):
                count += 1
                if count > _MAX_PACKETS:
                    return None
                if packet.pts is None or packet.time_base is None:
                    continue
                stop = float((packet.pts + (packet.duration or 0)) * packet.time_base)
                end = stop if end is None else max(end, stop)
    except Exception:  # noqa: BLE001 - any failure means "no evidence from packets", not a bad file
        return None
    return None if end is None else max(0.0, end - begin)


def check_claim(path: str | Path, claimed: float, streams: list[dict[str, Any]]) -> Checked:
    """``claimed`` (the container's duration) when the streams bear it out, else the streams' end with
    a warning naming the file and both numbers."""
    listed = metadata_end(streams)
    if listed > 0 and claimed <= listed + max(_SLACK_S, _SLACK_SHARE * listed):
        return Checked(claimed)  # the stream tables bear it out: no need to open the file (most MP4s)
    measured = packets_end(path, claimed)
    shown = measured if measured is not None else listed
    if shown <= 0 or claimed <= shown + max(_SLACK_S, _SLACK_SHARE * shown):
        return Checked(claimed)
    how = "its last packets end" if measured is not None else "its streams say they last"
    return Checked(shown, f"{path}: the container claims {_human(claimed)} but {how} at {_human(shown)}: "
                          f"treated as {shown:.2f} s long")


def _human(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds:.0f} s ({seconds / 3600:.1f} h)"
    return f"{seconds:.2f} s"
