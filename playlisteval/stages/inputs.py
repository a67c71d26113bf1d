"""Read a seed's two clips (segments) and their transcripts from the store."""

from __future__ import annotations

import random
from dataclasses import dataclass

from sqlalchemy.engine import Engine
from sqlmodel import col, select

from playlisteval.store.engine import transaction
from playlisteval.store.tables import Chunk, Item, Seed, Segment, Video


def mmss(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 60}:{s % 60:02d}" if s < 3600 else f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


@dataclass(frozen=True)
class Clip:
    number: int  # 1 or 2
    segment_id: int
    video_id: int
    playlist_id: int
    path: str
    start: float  # seconds in the video
    end: float
    lines: tuple[tuple[float, str], ...]  # (seconds from the clip start, transcript text)

    def transcript(self) -> str:
        return "\n".join(f"[{mmss(t)}] {text}" for t, text in self.lines if text.strip()) or "(no speech)"


def _transcript(s: object, video_id: int, start: float, end: float) -> tuple[tuple[float, str], ...]:
    chunks = s.exec(  # type: ignore[attr-defined]
        select(Chunk).where(Chunk.video_id == video_id, Chunk.start >= start - 1e-6, Chunk.end <= end + 1e-6)
        .order_by(col(Chunk.idx))
    ).all()
    return tuple((c.start - start, c.transcript) for c in chunks)


def load_clips(engine: Engine, item_id: int) -> tuple[Clip, Clip]:
    with transaction(engine) as s:
        item = s.get(Item, item_id)
        if item is None:
            raise LookupError(f"item {item_id} does not exist")
        seed = s.get(Seed, item.seed_id)
        assert seed is not None
        clips = []
        for number, segment_id in ((1, seed.segment1_id), (2, seed.segment2_id)):
            seg = s.get(Segment, segment_id)
            assert seg is not None
            video = s.get(Video, seg.video_id)
            assert video is not None
            clips.append(Clip(number, segment_id, video.id or 0, video.playlist_id, video.path, seg.start,
                              seg.end, _transcript(s, video.id or 0, seg.start, seg.end)))
        return clips[0], clips[1]


def transcript_windows(engine: Engine, clip: Clip, rng: random.Random) -> list[str]:
    """SPEC C2.1: the clip's own transcript plus one window on either side of it, each of the same
    length, from a different video of the same playlist (fewer when the playlist has no other video)."""
    length = clip.end - clip.start
    windows = [clip.transcript()]
    with transaction(engine) as s:
        others = s.exec(
            select(col(Video.id), col(Video.duration)).where(
                Video.playlist_id == clip.playlist_id, Video.id != clip.video_id, Video.status == "indexed"
            ).order_by(col(Video.id))
        ).all()
        if not others:
            return windows
        for _ in range(2):
            video_id, duration = rng.choice([(int(v or 0), d) for v, d in others])
            start = rng.uniform(0, max((duration or 0) - length, 0))
            start -= start % 30
            lines = _transcript(s, video_id, start, start + length)
            windows.append("\n".join(f"[{mmss(t)}] {text}" for t, text in lines if text.strip())
                           or "(no speech)")
    return windows
