"""Chunks done per video while an index run is under way, for the progress bar of `playlisteval index`.

Workers in this process note each chunk as it is read; the coordinator adds them to the chunks of the
videos already finished (from the store). Workers in other processes (`playlisteval worker` with
Redis) are seen a video at a time, when each finishes. Nothing here is the source of truth: it only
moves a bar.
"""

from __future__ import annotations

import threading

_lock = threading.Lock()
_done: dict[str, dict[int, int]] = {}  # run → video id → chunks read


def note(run: str, video_id: int, chunks: int) -> None:
    with _lock:
        _done.setdefault(run, {})[video_id] = chunks


def done_in(run: str) -> dict[int, int]:
    with _lock:
        return dict(_done.get(run, {}))


def forget(run: str) -> None:
    with _lock:
        _done.pop(run, None)
