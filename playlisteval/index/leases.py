"""Video leases on the engine's rules (issue 25): short, renewed while the video is indexed, and taken back
from a dead holder by every sweeper and by `index` itself, as item leases are (actors/leases.py,
store/items.py).

A video's lease used to last ``[index] lease_s`` (3,600 s) and nothing but its running out freed it, so a
worker killed mid-video held it for an hour and `index` run again found nothing it could claim. Now:

- the lease is ``[broker] lease_s`` (60 s) and ``Renewal`` renews it every third of that while the video's
  work runs, so a live holder keeps it however long the video takes and a dead one's lapses within it;
- ``reclaim_dead`` ends at once the lease of a holder known dead (a process of this PID namespace that is gone);
- ``take_back_expired`` frees the videos whose lease lapsed, once: whoever freed one sends it a new message
  (the sweepers for the index run recorded by ``record_run``, the coordinator for its own run);
- ``held`` names what is still held (which video, by whom, until when) for `index` to say so.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from sqlalchemy import update
from sqlalchemy.engine import Engine
from sqlmodel import col, select

from playlisteval.errors import outage_of
from playlisteval.logs import get_logger, outage
from playlisteval.store import identity
from playlisteval.store.engine import transaction
from playlisteval.store.tables import KeyValue, Video

log = get_logger(__name__)

#: the index run whose videos the sweepers send again when they free one (written by the coordinator)
RUN_KEY = "index.run"


@dataclass(frozen=True)
class Held:
    """A video another holder still leases: named in `index`'s report."""

    video_id: int
    path: str
    owner: str
    until: float  # epoch seconds the lease runs to unless renewed


def renew(engine: Engine, video_id: int, worker: str, lease_s: float) -> bool:
    """Extend ``worker``'s lease on the video; False when it is no longer ``worker``'s (taken back)."""
    with transaction(engine) as session:
        result = session.execute(update(Video).where(col(Video.id) == video_id, col(Video.lease_owner) == worker)
                                 .values(lease_expires=time.time() + lease_s))
        return bool(result.rowcount)  # type: ignore[attr-defined]


class Renewal:
    """Renews one video's lease every ``lease_s / 3`` on a thread of its own until ``stop``, or until
    ``ceiling_s`` (when given) have passed: then it calls ``on_ceiling`` and renews no more (issue 44: a video
    that never ends is failed with its reason, however alive its worker)."""

    def __init__(self, engine: Engine, video_id: int, worker: str, lease_s: float, ceiling_s: float = 0.0,
                 on_ceiling: Callable[[], None] | None = None) -> None:
        self.engine, self.video_id, self.worker, self.lease_s = engine, video_id, worker, lease_s
        self.ceiling_s, self.on_ceiling = ceiling_s, on_ceiling
        self.lost = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name=f"video-lease-{video_id}")

    def _run(self) -> None:
        deadline = time.monotonic() + self.ceiling_s if self.ceiling_s > 0 else float("inf")
        while not self._stop.wait(max(0.1, min(self.lease_s / 3, self.ceiling_s or self.lease_s))):
            if time.monotonic() >= deadline and self.on_ceiling is not None:
                try:
                    self.on_ceiling()
                except Exception as exc:  # the store is down: the lease, renewed no more, lapses and is swept
                    log.warning("index.ceiling_failed", video=self.video_id, error=f"{type(exc).__name__}: {exc}")
                return
            try:
                if not renew(self.engine, self.video_id, self.worker, self.lease_s):
                    # judged dead (frozen past the lease): another worker may index it too; the results are
                    # the same content, and the first commit wins the video's status
                    self.lost = True
                    log.warning("index.lease_lost", video=self.video_id, worker=self.worker)
                    return
            except Exception as exc:  # the store is down or locked: the lease lapses if it lasts
                if not outage.failed(outage_of(exc), exc, where="video lease", video=self.video_id):
                    log.warning("index.lease_renew_failed", video=self.video_id,
                                error=f"{type(exc).__name__}: {exc}")
                continue
            outage.reached("store")

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


@contextmanager
def renewed(engine: Engine, video_id: int, worker: str, lease_s: float, ceiling_s: float = 0.0,
            on_ceiling: Callable[[], None] | None = None) -> Iterator[Renewal]:
    """Keep ``worker``'s lease on the video alive for the duration of the block (up to ``ceiling_s``)."""
    renewal = Renewal(engine, video_id, worker, lease_s, ceiling_s, on_ceiling)
    renewal.start()
    try:
        yield renewal
    finally:
        renewal.stop()


def give_back_all(engine: Engine, worker: str) -> list[int]:
    """Release every video lease ``worker`` holds (it is stopping mid-video); the videos freed."""
    with transaction(engine) as session:
        mine = [int(v or 0) for v in session.exec(select(Video.id).where(col(Video.lease_owner) == worker)).all()]
        session.execute(update(Video).where(col(Video.lease_owner) == worker).values(lease_owner="", lease_expires=0.0))
    return sorted(mine)


def holder_is_gone(owner: str) -> bool:
    """Whether the process named in a video's lease (``host:pid:place.nonce``, ``:index`` after it for `index`'s
    own threads) is known dead: only a process of this PID namespace and boot can be checked
    (store/identity.py); any other holder's lease runs out unless it renews it."""
    return identity.is_gone(owner)


def reclaim_dead(engine: Engine) -> list[int]:
    """End now the unexpired leases whose holder is a process of this machine that is gone (compare-and-set
    on the holder: a lease taken meanwhile by a live worker is kept). The videos whose lease was ended."""
    t = time.time()
    with transaction(engine) as session:
        rows = session.exec(select(Video.id, Video.lease_owner).where(
            col(Video.lease_owner) != "", col(Video.lease_expires) >= t).order_by(col(Video.id))).all()
    ended: list[int] = []
    for video_id, owner in rows:
        if video_id is None or not holder_is_gone(owner):
            continue
        with transaction(engine) as session:
            result = session.execute(update(Video).where(col(Video.id) == video_id, col(Video.lease_owner) == owner)
                                     .values(lease_expires=t - 1e-3))
            if result.rowcount == 1:  # type: ignore[attr-defined]
                ended.append(int(video_id))
    if ended:
        log.info("index.leases_reclaimed", videos=ended)
    return ended


def take_back_expired(engine: Engine) -> list[int]:
    """Free the videos whose lease lapsed (their holder died or froze) and return them, each freed by one
    caller only, who sends it a new message (an expired lease left in place would be sent every sweep)."""
    t = time.time()
    with transaction(engine) as session:
        rows = session.exec(select(Video.id, Video.lease_owner).where(
            col(Video.lease_owner) != "", col(Video.lease_expires) < t).order_by(col(Video.id))).all()
    freed: list[int] = []
    for video_id, owner in rows:
        with transaction(engine) as session:
            result = session.execute(update(Video).where(col(Video.id) == video_id, col(Video.lease_owner) == owner,
                                                         col(Video.lease_expires) < t)
                                     .values(lease_owner="", lease_expires=0.0))
            if result.rowcount == 1 and video_id is not None:  # type: ignore[attr-defined]
                freed.append(int(video_id))
    if freed:
        log.info("index.leases_taken_back", videos=freed)
    return freed


def held(engine: Engine, video_ids: Sequence[int]) -> list[Held]:
    """Of ``video_ids``, those under a live lease: which, held by whom, until when."""
    t = time.time()
    found: list[Held] = []
    ids = list(video_ids)
    with transaction(engine) as session:
        for start in range(0, len(ids), 500):
            for video in session.exec(select(Video).where(col(Video.id).in_(ids[start:start + 500]),
                                                          col(Video.lease_owner) != "",
                                                          col(Video.lease_expires) >= t)):
                found.append(Held(int(video.id or 0), video.path, video.lease_owner, float(video.lease_expires)))
    return sorted(found, key=lambda h: h.video_id)


def record_run(engine: Engine, run: str, embedder: str) -> None:
    """The index run in progress, for the sweepers: a video they free is sent again for it."""
    with transaction(engine) as session:
        session.merge(KeyValue(key=RUN_KEY, value=json.dumps({"run": run, "embedder": embedder,
                                                              "at": time.time()})))


def active_run(engine: Engine) -> tuple[str, str] | None:
    """(run, embedder) of the index run recorded last, or None."""
    with transaction(engine) as session:
        row = session.get(KeyValue, RUN_KEY)
    if row is None:
        return None
    try:
        data = json.loads(row.value)
        return str(data["run"]), str(data["embedder"])
    except (ValueError, KeyError, TypeError):
        return None


def end_run(engine: Engine, run: str) -> None:
    """Forget ``run`` (if it is still the one recorded): its coordinator finished."""
    with transaction(engine) as session:
        row = session.get(KeyValue, RUN_KEY)
        if row is not None and active_run_of(row.value) == run:
            session.delete(row)


def active_run_of(value: str) -> str:
    try:
        return str(json.loads(value).get("run", ""))
    except (ValueError, AttributeError):
        return ""
