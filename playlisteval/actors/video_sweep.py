"""Videos to index heal as items do (issue 25): dead holders' leases taken back and their videos sent again, by
every worker's sweeper and by the `index` coordinator itself.

- ``sweep_videos`` (in ``workers.sweep_once``, so in every `playlisteval worker` and under the dramatiq CLI's
  Sweeper): ends the leases of holders known dead, frees lapsed ones and sends each freed video again for the
  index run in progress (recorded in the store by its coordinator: index/leases.py ``record_run``).
- ``Healer`` (in the coordinator's wait, actors/indexing.py): the same for its own run, plus a safety net
  for messages lost on the way (a video of the run that nobody holds and no message carries is sent again,
  at most ``[broker] max_claims`` times), and what it is still waiting on — videos held by a live lease —
  so `index` waits for them instead of stopping, and names them if it must stop.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

import dramatiq
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from playlisteval.actors import tasks
from playlisteval.actors.broker import queued_ids
from playlisteval.index import leases as video_leases
from playlisteval.index.outcome import read_outcome
from playlisteval.logs import get_logger
from playlisteval.store import cancels
from playlisteval.store.tables import Video

if TYPE_CHECKING:
    from playlisteval.actors.app import App

log = get_logger(__name__)


def sweep_videos(app: App) -> int:
    """A sweeper's turn over videos: reclaim dead holders, free lapsed leases, send each freed video again
    for the recorded index run. How many messages were sent."""
    engine = app.engine
    video_leases.reclaim_dead(engine)
    freed = video_leases.take_back_expired(engine)
    if freed and cancels.is_set(engine, cancels.INDEX):  # cancelled: the next `index` sends them
        return 0
    if not freed:
        return 0
    active = video_leases.active_run(engine)
    if active is None:  # no run in progress: the videos are "new" again and the next `index` sends them
        return 0
    run, embedder = active
    for video_id in freed:
        tasks.index_video.send(video_id, embedder, run)
    log.info("worker.sweep_videos", sent=freed, run=run[:8])
    return len(freed)


def open_videos(engine: Engine, video_ids: Sequence[int], run: str) -> list[int]:
    """Of ``video_ids``, those with no outcome for ``run`` yet, and still to index (new, or indexed)."""
    ids = list(video_ids)
    found: list[int] = []
    with Session(engine) as session:
        for start in range(0, len(ids), 500):
            for video in session.exec(select(Video).where(col(Video.id).in_(ids[start:start + 500]))):
                outcome = read_outcome(video.index_report)
                if (outcome is None or outcome.run != run) and video.status in ("new", "indexed"):
                    found.append(int(video.id or 0))
    return sorted(found)


class Healer:
    """The coordinator's side: its run recorded for the sweepers, and its videos healed every sweep."""

    def __init__(self, app: App, broker: dramatiq.Broker, video_ids: Sequence[int], embedder: str,
                 run: str) -> None:
        self.app, self.broker, self.embedder, self.run = app, broker, embedder, run
        self.engine = app.engine
        settings = app.settings
        self.every_s = settings.broker.sweep_every_s
        self.grace_s = max(settings.broker.sweep_grace_s, settings.broker.lease_s)
        self.max_sends = settings.broker.max_claims
        self.video_ids = list(video_ids)
        self.sent_at: dict[int, float] = {}
        self.sends: dict[int, int] = {}
        self.last_heal = 0.0
        self.open_n, self.progress_at = len(self.video_ids), time.monotonic()

    def start(self) -> None:
        """Record the run and free what dead holders keep, before the first message is sent."""
        video_leases.record_run(self.engine, self.run, self.embedder)
        video_leases.reclaim_dead(self.engine)
        video_leases.take_back_expired(self.engine)
        now = time.monotonic()
        self.sent_at = {v: now for v in self.video_ids}
        self.sends = {v: 1 for v in self.video_ids}

    def end(self) -> None:
        try:
            video_leases.end_run(self.engine, self.run)
        except Exception as exc:  # the store is down: the record only makes a sweeper send a freed video again
            log.warning("index.end_run_failed", error=f"{type(exc).__name__}: {exc}")

    def due(self) -> bool:
        return time.monotonic() - self.last_heal >= self.every_s

    def heal(self, queue_empty: bool = False) -> list[int]:
        """Send again this run's videos whose holder died, or whose message was lost; the ones sent.
        ``queue_empty``: the in-process queue drained (no message is on the way to anyone)."""
        self.last_heal = time.monotonic()
        if cancels.is_set(self.engine, cancels.INDEX):  # cancelled: nothing is sent again
            return []
        video_leases.reclaim_dead(self.engine)
        freed = set(video_leases.take_back_expired(self.engine))
        still = open_videos(self.engine, self.video_ids, self.run)
        if len(still) != self.open_n:
            self.open_n, self.progress_at = len(still), time.monotonic()
        held = {h.video_id for h in video_leases.held(self.engine, still)}
        queued = queued_ids(self.broker, tasks.INDEX_QUEUE, self.grace_s)
        net = queue_empty or queued is not None  # otherwise nobody can tell whether a message is on its way
        now = time.monotonic()
        resend = []
        for video_id in still:
            if video_id in held or self.sends.get(video_id, 0) > self.max_sends:
                continue
            lost = net and (queued is None or video_id not in queued) and (
                queue_empty or now - self.sent_at.get(video_id, now) > self.grace_s)
            if video_id in freed or lost:
                resend.append(video_id)
        for video_id in resend:
            tasks.index_video.send(video_id, self.embedder, self.run)
            self.sent_at[video_id] = now
            self.sends[video_id] = self.sends.get(video_id, 0) + 1
        if resend:
            log.info("index.sent_again", videos=resend, freed=sorted(freed & set(resend)))
        return resend

    def waiting_on(self) -> list[video_leases.Held]:
        """This run's open videos held by a live lease (another process is on them)."""
        return video_leases.held(self.engine, open_videos(self.engine, self.video_ids, self.run))

    def stalled_s(self) -> float:
        """Seconds since the last video of the run finished (or since the healer started)."""
        return time.monotonic() - self.progress_at
