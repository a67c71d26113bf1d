"""A video's keyframe times (presentation seconds), read without decoding.

MP4/MOV files carry their sample table in the ``moov`` box, which FFmpeg loads whole when the file is
opened: the stream's index already says which samples are keyframes, by decode timestamp. Their
presentation times then cost one seek and one packet read per keyframe (issue 43: listing by a full
demux read every packet of the file, audio included -- ~200 MB and ~45,000 packets for 10 minutes of
2.7 Mbit/s video, a pass as long as ffmpeg's whole keyframe-only decode of the file). Any other
container, an empty index, or a packet that does not match its index entry falls back to demuxing
every packet and reading ``packet.is_keyframe``, so the list is the same either way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from playlisteval.errors import MediaError
from playlisteval.logs import get_logger

log = get_logger(__name__)
#: demuxers whose index is the whole sample table from the file's header (FFmpeg's mov demuxer)
_INDEXED_FORMATS = {"mov", "mp4"}


def keyframe_times(path: str | Path) -> list[float]:
    """The presentation times (s) of a video's keyframes, read from the index or packets without decoding."""
    import av

    try:
        with av.open(str(path)) as container:
            stream = container.streams.video[0]
            times = _from_index(container, stream)
            if times is None:
                times = _from_packets(container, stream)
    except Exception as exc:
        raise MediaError(path, f"cannot read keyframes: {exc}") from exc
    return times


def _from_packets(container: Any, stream: Any) -> list[float]:
    base = stream.time_base or 1
    container.seek(0, stream=stream, backward=True, any_frame=False)  # after a failed index read
    return sorted({float(packet.pts * base) for packet in container.demux(stream)
                   if packet.is_keyframe and packet.pts is not None})


def _from_index(container: Any, stream: Any) -> list[float] | None:
    """Keyframe times from the demuxer's index, or None where it cannot be trusted (module doc)."""
    if not _INDEXED_FORMATS & set(container.format.name.split(",")):
        return None
    entries = stream.index_entries
    base = stream.time_base or 1
    # a fragmented file's index may hold only the fragments read so far: trust it only when it reaches the end
    end = float(stream.duration * base) if stream.duration else (container.duration or 0) / 1e6
    if not len(entries) or not end or float(entries[len(entries) - 1].timestamp * base) < end - 2.0:
        return None
    keyed = [e for e in entries if e.is_keyframe]
    dts = [e.timestamp for e in keyed]
    # a discarded entry (cut by an edit list) still comes out of the demuxer: leave such files to it
    if not dts or len(dts) != len(set(dts)) or any(e.is_discard for e in keyed):
        return None
    # FFmpeg's mov seek compares presentation times: seeking to a keyframe's own decode time can land on
    # the keyframe before (its presentation time is later by the reorder delay), so aim between two
    # keyframes' decode times and check that the packet read is the entry aimed at
    gaps = [b - a for a, b in zip(dts, dts[1:], strict=False)] or [max(1, int(1 / base))]
    times = []
    for i, d in enumerate(dts):
        aim = d + (gaps[i] if i < len(gaps) else gaps[-1]) // 2
        container.seek(aim, stream=stream, backward=True, any_frame=False)
        packet = next(iter(container.demux(stream)), None)
        if packet is None or packet.dts != d or not packet.is_keyframe or packet.pts is None:
            log.info("keyframes.index_mismatch", entry=d, packet=None if packet is None else packet.dts)
            return None
        times.append(float(packet.pts * base))
    return sorted(set(times))
