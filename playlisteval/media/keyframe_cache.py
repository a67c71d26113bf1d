"""A video's keyframe times, listed once and kept as a small JSON file under ``<media>/keyframes``.

Listing keyframes demuxes the whole file (no decoding, but every packet is read), which for an hour of
720p is a noticeable share of one question's cold evidence. So the list is written beside the project,
named by a hash of the file's resolved path, size and modification time: an edited or replaced file
gets a new list, and every process (judge workers, the difficulty gate) reads the one already made. A
file is written whole under a name of its own and renamed into place, so a reader never sees half of
one; two writers of the same list write the same content.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from playlisteval.errors import MediaError
from playlisteval.media.keyframes import keyframe_times

#: files listed at once: a pair's videos each get a thread (the listing waits on seeks and reads, with
#: the GIL released), as the evidence's frames are read
MAX_LIST_THREADS = 4


def keyframes_dir(media_dir: Path) -> Path:
    return media_dir / "keyframes"


def cache_file(media_dir: Path, video: str | Path) -> Path | None:
    """Where ``video``'s list is kept; None when the file cannot be found."""
    path = Path(video)
    try:
        st = path.stat()
    except OSError:
        return None
    key = f"{path.resolve()}\0{st.st_size}\0{st.st_mtime_ns}"
    return keyframes_dir(media_dir) / f"{hashlib.sha256(key.encode()).hexdigest()[:32]}.json"


def cached_keyframes(media_dir: Path, video: str | Path) -> list[float] | None:
    """``video``'s keyframe times (sorted seconds), from the cache or listed and cached now; None when
    the video is missing or cannot be demuxed (whoever decodes it then reports why)."""
    target = cache_file(media_dir, video)
    if target is None:
        return None
    try:
        return [float(t) for t in json.loads(target.read_text())["keyframes"]]
    except (OSError, ValueError, KeyError, TypeError):
        pass  # not listed yet, or a damaged file: list again and replace it
    try:
        times = keyframe_times(video)
    except MediaError:
        return None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f"{target.stem}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(json.dumps({"video": str(video), "keyframes": times}))
        tmp.replace(target)
    except OSError:
        pass  # a read-only or full disk costs the next run a demux, not this one its frames
    return times


def cached_keyframes_of(media_dir: Path, videos: Iterable[str]) -> dict[str, list[float] | None]:
    """``cached_keyframes`` of each video, the files listed at once (a pair's two videos: one wait, not two)."""
    paths = sorted(set(videos))
    if len(paths) < 2:
        return {p: cached_keyframes(media_dir, p) for p in paths}
    with ThreadPoolExecutor(max_workers=min(MAX_LIST_THREADS, len(paths))) as pool:
        return dict(zip(paths, pool.map(lambda p: cached_keyframes(media_dir, p), paths), strict=True))
