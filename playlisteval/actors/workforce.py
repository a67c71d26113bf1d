"""Who is working and what is parked (issue 44): the store's leases and failures read as one list each.

Work is leased in three places — a build item's step (``item``), a video being indexed (``video``), and a
job of `select` or `eval judge` (``work_job``) — and each kind parks what it could not do in its own way:
a failed item (``retry-failed`` resumes it), a failed job (the command's next pass queues it again), a
video refused with its reason (``index`` takes it again once the file is fixed). An operator asks two
questions of all of them at once: which processes hold what now (`playlisteval ps`), and what is waiting
for a person (`playlisteval parked`). Both only read the store, so they work against a fleet's shared
PostgreSQL store from any machine.

A holder is the lease token's process part (``host:pid`` and whatever identity suffix the worker writes,
up to the first ``/``); it is listed while its lease is unexpired — a lease judged by its renewals, not by
whether a pid looks alive here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from sqlalchemy import select as sa_select
from sqlalchemy.engine import Engine
from sqlmodel import col, func, select

from playlisteval.store.engine import transaction
from playlisteval.store.states import WORKING, State
from playlisteval.store.tables import Item, Video, WorkJob, now

#: work_job states (actors/jobs.py): a running job holds a lease, a failed one waits for the next pass
_JOB_RUNNING, _JOB_FAILED = "running", "failed"
#: video statuses that are a refusal with a reason (index/collection.py), not a finished or new video
_VIDEO_REFUSED = ("skipped",)
#: a failed job is queued again by the next pass of the command that made it (actors/evaluation.HANDLERS)
_JOB_REPLAY = {"gate": "playlisteval select, run again", "judge": "playlisteval eval judge, run again (same options)",
               "retrieve": "playlisteval eval retrieve, run again (same options)"}
#: how many ids a row shows before "…"
SHOWN_IDS = 5


def process_of(token: str) -> str:
    """The process part of a lease token (``host:pid…/claim`` → ``host:pid…``)."""
    return token.split("/", 1)[0]


@dataclass
class Holding:
    """What one process holds of one kind of work now."""

    process: str
    kind: str  # "item", "video" or a work_job kind ("gate", "judge", "retrieve")
    ids: list[int] = field(default_factory=list)
    lease_until: float = 0.0  # the latest expiry among its leases
    renewed_at: float | None = None  # its last heartbeat, where the kind records one

    @property
    def count(self) -> int:
        return len(self.ids)


def _add(holdings: dict[tuple[str, str], Holding], token: str, kind: str, item_id: int | None,
         until: float | None, renewed: float | None) -> None:
    process = process_of(token)
    held = holdings.setdefault((process, kind), Holding(process, kind))
    held.ids.append(int(item_id or 0))  # ids are never None once stored
    held.lease_until = max(held.lease_until, float(until or 0.0))
    if renewed:
        held.renewed_at = max(held.renewed_at or 0.0, float(renewed))


def live_holdings(engine: Engine, at: float | None = None) -> list[Holding]:
    """Every unexpired lease, grouped by holder process and kind, the processes in name order."""
    t = now() if at is None else at
    holdings: dict[tuple[str, str], Holding] = {}
    with transaction(engine) as s:
        for item_id, owner, until, renewed in s.exec(
                select(col(Item.id), col(Item.lease_owner), col(Item.lease_expires), col(Item.lease_renewed_at))
                .where(col(Item.state).in_([st.value for st in WORKING]), col(Item.lease_owner).is_not(None),
                       col(Item.lease_expires) >= t)).all():
            _add(holdings, str(owner), "item", item_id, until or 0.0, renewed)
        for video_id, owner, until in s.exec(
                select(col(Video.id), col(Video.lease_owner), col(Video.lease_expires))
                .where(col(Video.lease_owner) != "", col(Video.lease_expires) >= t)).all():
            _add(holdings, str(owner), "video", video_id, until, None)
        for job_id, kind, worker, until, updated in s.execute(
                sa_select(col(WorkJob.id), col(WorkJob.kind), col(WorkJob.worker), col(WorkJob.lease_until),
                          col(WorkJob.updated_at))
                .where(col(WorkJob.state) == _JOB_RUNNING, col(WorkJob.lease_until) >= t)).all():
            _add(holdings, str(worker) or "?", str(kind), job_id, until, updated)
    for held in holdings.values():
        held.ids.sort()
    return sorted(holdings.values(), key=lambda h: (h.process, h.kind))


@dataclass(frozen=True)
class Parked:
    """A group of work that stopped with one reason and waits for a person."""

    kind: str  # "item", "video" or a work_job kind
    reason: str
    ids: tuple[int, ...]
    replay: str  # the command that takes it up again

    @property
    def count(self) -> int:
        return len(self.ids)


def _grouped(rows: Iterable[tuple[int | None, str]], kind: str, replay: str) -> list[Parked]:
    by_reason: dict[str, list[int]] = {}
    for row_id, reason in rows:
        first_line = (str(reason or "").strip().splitlines() or ["(no reason recorded)"])[0]
        by_reason.setdefault(first_line, []).append(int(row_id or 0))
    return [Parked(kind, reason, tuple(sorted(ids)), replay)
            for reason, ids in sorted(by_reason.items(), key=lambda kv: (-len(kv[1]), kv[0]))]


def parked_work(engine: Engine) -> list[Parked]:
    """Failed items, failed jobs and refused videos, grouped by kind and first line of their reason (the
    largest group first), each with the command that replays it."""
    with transaction(engine) as s:
        items = s.exec(select(col(Item.id), col(Item.error)).where(col(Item.state) == State.FAILED.value)).all()
        videos = s.exec(select(col(Video.id), col(Video.reason))
                        .where(col(Video.status).in_(_VIDEO_REFUSED))).all()
        jobs = s.exec(select(col(WorkJob.id), col(WorkJob.kind), col(WorkJob.error))
                      .where(col(WorkJob.state) == _JOB_FAILED)).all()
    parked = _grouped(((i, e or "") for i, e in items), "item", "playlisteval retry-failed")
    parked += _grouped(((i, r or "") for i, r in videos), "video", "fix the file, then playlisteval index")
    for kind in sorted({str(kind) for _, kind, _ in jobs}):
        replay = _JOB_REPLAY.get(kind, "the command that made them, run again")
        parked += _grouped(((i, e or "") for i, k, e in jobs if k == kind), kind, replay)
    return parked


def job_kinds_running(engine: Engine) -> dict[str, int]:
    """Open (queued or running) jobs per kind: what a `ps` with no live lease is still waiting on."""
    with transaction(engine) as s:
        rows = s.exec(select(col(WorkJob.kind), func.count()).where(
            col(WorkJob.state).in_(["queued", _JOB_RUNNING])).group_by(col(WorkJob.kind))).all()
    return {str(kind): int(n) for kind, n in rows}
