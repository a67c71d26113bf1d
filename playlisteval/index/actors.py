"""The "index" queue: one message per video, so that several processes or machines (with Redis)
index one collection in parallel, while the default runs the same actor on worker threads in-process.

Messages carry only ids and names (video id, embedder, run id); the store holds everything else and
the outcome of each video (DESIGN 1). A duplicate delivery finds the video leased or done and does
nothing; a transient error (a locked store) is retried by the broker; an unusable file is recorded
as skipped and never retried.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import dramatiq
from sqlalchemy.engine import Engine

from playlisteval.config import Settings

INDEX_QUEUE = "index"
INDEX_ACTOR = "index_video"


@dataclass(frozen=True)
class IndexContext:
    """What an index actor needs from the process it runs in."""

    settings: Settings
    engine: Engine
    worker: str  # this worker's name, for video leases


def declare_index_actors(broker: dramatiq.Broker,
                         context: Callable[[], IndexContext]) -> dict[str, dramatiq.Actor[..., None]]:
    """Declare the index actors on ``broker``; ``context`` is called per message (late binding, so a
    worker process resolves its own settings and store)."""

    def index_video(video_id: int, embedder: str, run: str) -> None:
        from playlisteval.index.work import index_video as work

        ctx = context()
        work(ctx.settings, ctx.engine, video_id, embedder, run, ctx.worker)

    ctx = context()
    # a long video with ASR can take many minutes: the limit follows the video lease
    time_limit_ms = int(max(ctx.settings.index.lease_s, 60) * 1000)
    actor = dramatiq.actor(
        actor_name=INDEX_ACTOR, queue_name=INDEX_QUEUE, broker=broker,
        max_retries=3, min_backoff=1_000, max_backoff=30_000, time_limit=time_limit_ms,
    )(index_video)
    return {INDEX_ACTOR: actor}
