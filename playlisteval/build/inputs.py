"""A seed's two clips (segments) and their transcripts, read from the store, and the transcript
windows of the C2.1 test (SPEC C2.1). Below the stages and the gates, which both read clips.

A clip's transcript lines are kept per process (issue 13: every step re-read them), keyed by their
content: the store, the video, its index report (rewritten, with a run id, in the very transaction
that rewrites its chunks: a re-indexed video gets a new key) and the span. Never stale; the rows
naming which clips an item has are read each time (a few primary-key reads, deferred: no lock).
"""

from __future__ import annotations

import hashlib
import random
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import overload

from sqlalchemy import bindparam, func, or_
from sqlalchemy import select as sa_select
from sqlalchemy.engine import Connection, Engine
from sqlmodel import col, select

from playlisteval.store.direct import Direct
from playlisteval.store.engine import read_core
from playlisteval.store.tables import Chunk, Item, Seed, Segment, Video


def mmss(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 60}:{s % 60:02d}" if s < 3600 else f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


Lines = tuple[tuple[float, str], ...]


def format_lines(lines: Lines) -> str:
    """One line per chunk, "[m:ss] text", times from the start of the window or clip."""
    return "\n".join(f"[{mmss(t)}] {text}" for t, text in lines if text.strip()) or "(no speech)"


@dataclass(frozen=True)
class Clip:
    number: int  # 1 or 2
    segment_id: int
    video_id: int
    playlist_id: int
    path: str
    start: float  # seconds in the video
    end: float
    lines: Lines  # (seconds from the clip start, transcript text)

    @property
    def length(self) -> float:
        return self.end - self.start

    def transcript(self) -> str:
        return format_lines(self.lines)


_CACHE_SIZE = 4096  # spans: a clip's lines are a few kB; a build touches a few per item
_lines: OrderedDict[tuple[str, int, str, float, float], Lines] = OrderedDict()
_lines_lock = threading.Lock()


#: the reads of a step's inputs, on the driver's cursor (store/direct.py, issue 26)
_CHUNKS = Direct(sa_select(col(Chunk.start), col(Chunk.transcript)).where(
    col(Chunk.video_id) == bindparam("video_id"), col(Chunk.start) >= bindparam("low"),
    col(Chunk.end) <= bindparam("high")).order_by(col(Chunk.idx)))


def _transcript(conn: Connection, video_id: int, start: float, end: float, report: str | None = None) -> Lines:
    """The span's lines; with ``report`` (the video's ``index_report``), kept and reused by content key.
    A video with no report (its chunks written some other way) is read every time."""
    key = None
    if report:
        url = conn.engine.url.render_as_string(hide_password=True)
        key = (url, video_id, hashlib.sha1(report.encode()).hexdigest(), start, end)
        with _lines_lock:
            if key in _lines:
                _lines.move_to_end(key)
                return _lines[key]
    chunks = _CHUNKS.rows(conn, {"video_id": video_id, "low": start - 1e-6, "high": end + 1e-6})
    lines = tuple((chunk_start - start, transcript) for chunk_start, transcript in chunks)
    if key is not None:
        with _lines_lock:
            _lines[key] = lines
            while len(_lines) > _CACHE_SIZE:
                _lines.popitem(last=False)
    return lines


# load_clips' two reads, built once (issue 13: building them cost more CPU than running them)
_SEED_OF = Direct(select(col(Seed.segment1_id), col(Seed.segment2_id))
                  .join(Item, col(Item.seed_id) == col(Seed.id)).where(col(Item.id) == bindparam("item_id")))
_SEGMENTS = Direct(sa_select(col(Segment.id), col(Segment.start), col(Segment.end), col(Video.id),
                             col(Video.playlist_id), col(Video.path), col(Video.index_report))
                   .join(Video, col(Video.id) == col(Segment.video_id))
                   .where(or_(col(Segment.id) == bindparam("first"), col(Segment.id) == bindparam("second"))))
# the C2.1 windows' videos: the playlist's other indexed videos in id order, counted, and one read at a
# position: a draw reads one row, not the playlist (issue 26: at 400 videos, reading them all was 4 % of a
# step's CPU); ``a``/``b``: the videos left out (the clips' own, the same id twice when they share one)
_OTHERS = (col(Video.playlist_id) == bindparam("playlist_id"), col(Video.id) != bindparam("a"),
           col(Video.id) != bindparam("b"), col(Video.status) == "indexed")
_OTHER_COUNT = Direct(sa_select(func.count()).select_from(Video).where(*_OTHERS))
_OTHER_AT = Direct(sa_select(col(Video.id), col(Video.duration), col(Video.index_report)).where(*_OTHERS)
                   .order_by(col(Video.id)).limit(1).offset(bindparam("at")))


class _OtherVideos(Sequence[tuple[int, float, str]]):
    """A playlist's indexed videos but ``left_out``, in id order, as a sequence ``random.choice`` can draw
    from (its length, then one item): the same draw as from the list of them, reading two rows."""

    def __init__(self, conn: Connection, playlist_id: int, left_out: tuple[int, int]) -> None:
        self._conn, self._params = conn, {"playlist_id": playlist_id, "a": left_out[0], "b": left_out[1]}
        row = _OTHER_COUNT.first(conn, self._params)
        self._n = int(row[0]) if row else 0

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, at: int) -> tuple[int, float, str]: ...
    @overload
    def __getitem__(self, at: slice) -> Sequence[tuple[int, float, str]]: ...

    def __getitem__(self, at: int | slice) -> tuple[int, float, str] | Sequence[tuple[int, float, str]]:
        if isinstance(at, slice) or not 0 <= at < self._n:
            raise IndexError(at)
        row = _OTHER_AT.first(self._conn, {**self._params, "at": at})
        if row is None:  # PostgreSQL (read committed): a video left the playlist between the count and this read
            row = _OTHER_AT.first(self._conn, {**self._params, "at": 0})  # still one of the others
            if row is None:
                raise IndexError(at)
        video_id, duration, report = row
        return int(video_id or 0), float(duration or 0.0), str(report or "")


def load_clips(engine: Engine, item_id: int) -> tuple[Clip, Clip]:
    with read_core(engine) as conn:
        seed = _SEED_OF.first(conn, {"item_id": item_id})
        if seed is None:
            raise LookupError(f"item {item_id} does not exist")
        rows = {int(r[0]): r for r in _SEGMENTS.rows(conn, {"first": seed[0], "second": seed[1]})}
        clips = []
        for number, segment_id in ((1, seed[0]), (2, seed[1])):
            _, start, end, video_id, playlist_id, path, report = rows[int(segment_id)]
            clips.append(Clip(number, segment_id, int(video_id or 0), playlist_id, path, start, end,
                              _transcript(conn, int(video_id or 0), start, end, report)))
        return clips[0], clips[1]


def transcript_windows(engine: Engine, clips: tuple[Clip, Clip], rng: random.Random, chunk_s: float) -> list[str]:
    """SPEC C2.1: for each clip, its own transcript plus one window on either side of it, each as long
    as the clip and cut from a *different* video of the same playlist (one not holding either clip
    when the playlist has such a video): three windows per clip, six in all, in a shuffled order.
    Every window is formatted like the clip's own, so nothing but content tells them apart. A playlist
    with no other video gives fewer windows."""
    own_videos = {c.video_id for c in clips}
    windows = [c.transcript() for c in clips]
    taken: set[tuple[int, float]] = set()
    with read_core(engine) as conn:
        for clip in clips:
            other = next((v for v in own_videos if v != clip.video_id), clip.video_id)
            preferred = _OtherVideos(conn, clip.playlist_id, (clip.video_id, other))
            if not preferred and other != clip.video_id:  # only the clips' videos: the other clip's will do
                preferred = _OtherVideos(conn, clip.playlist_id, (clip.video_id, clip.video_id))
            if not preferred:
                continue
            video_id, duration, report = rng.choice(preferred)  # "a different video": one per clip
            for _side in ("before", "after"):
                starts = [k * chunk_s for k in range(int(max(duration - clip.length, 0) // chunk_s) + 1)]
                free = [t for t in starts if (video_id, t) not in taken] or starts
                start = rng.choice(free)
                taken.add((video_id, start))
                windows.append(format_lines(_transcript(conn, video_id, start, start + clip.length, report)))
    rng.shuffle(windows)  # shuffled so the relevant passages are not where they always are
    return windows
