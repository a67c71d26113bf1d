"""A video, or one frame of it, for the viewer's citation links and frame timelines (issue 22).

Only what the store names is served: a video by its id (the file the store registered, never a path
from the request), a frame by video id and time, from the frames `index` kept (media/kept.py) when one
is there — its file checked to lie inside the kept-frames folder — else decoded from the video at that
time into memory (nothing is written). Anything else is None, which the app answers with 404.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.engine import Engine

from playlisteval.errors import MediaError
from playlisteval.logs import get_logger
from playlisteval.media.kept import KeptFrames, kept_root
from playlisteval.store.media_paths import MediaPath

log = get_logger(__name__)
FRAME_BOX = (640, 360)  # a decoded frame fits inside this
VIDEO_TYPES = {".mp4": "video/mp4", ".m4v": "video/mp4", ".mov": "video/quicktime", ".webm": "video/webm",
               ".mkv": "video/x-matroska", ".avi": "video/x-msvideo"}


@dataclass(frozen=True)
class StoredVideo:
    id: int
    path: Path
    title: str
    duration: float
    codec: str | None

    @property
    def media_type(self) -> str:
        return VIDEO_TYPES.get(self.path.suffix.lower(), "application/octet-stream")


def stored_video(engine: Engine, video_id: int) -> StoredVideo | None:
    """The store's video ``video_id`` when its file is there (a regular file, not a folder or device)."""
    with engine.connect() as conn:
        row = conn.execute(text("SELECT id, path, title, duration, codec FROM video WHERE id = :v")
                           .columns(path=MediaPath),
                           {"v": video_id}).first()
    if row is None:
        return None
    path = Path(str(row.path))
    if not path.is_file():
        return None
    return StoredVideo(int(row.id), path, str(row.title), float(row.duration or 0), row.codec)


def kept_frame(media_dir: Path, video: StoredVideo, t: float) -> Path | None:
    """The kept frame at ``t`` (to the millisecond), inside the kept-frames folder; None when not kept."""
    root = kept_root(media_dir).resolve()
    try:
        candidate = KeptFrames(root, video.path).path(round(t, 3)).resolve()
    except OSError:
        return None
    if not candidate.is_relative_to(root) or not candidate.is_file():
        return None
    return candidate


def frame_jpeg(engine: Engine, media_dir: Path, video_id: int, t: float) -> tuple[Path | None, bytes | None]:
    """The frame of video ``video_id`` at ``t`` s: a kept file, or JPEG bytes decoded now; (None, None) when
    the video is unknown or missing, or ``t`` is outside it."""
    video = stored_video(engine, video_id)
    if video is None or not math.isfinite(t) or t < 0 or (video.duration and t > video.duration + 1):
        return None, None
    kept = kept_frame(media_dir, video, t)
    if kept is not None:
        return kept, None
    from playlisteval.media.frames import frames_at  # the decoder only when a frame was not kept

    try:
        image = frames_at(video.path, [t], video.codec, FRAME_BOX)[0]
    except (MediaError, OSError, ValueError, IndexError) as exc:
        log.warning("view.frame_unreadable", video=video_id, t=t, error=str(exc).splitlines()[0] if str(exc) else "")
        return None, None
    out = io.BytesIO()
    image.convert("RGB").save(out, "JPEG", quality=85)
    return None, out.getvalue()
