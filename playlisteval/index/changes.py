"""Videos changed in place (issue 22): a file whose bytes changed under the same path is indexed again.

A video's row keeps the file's SHA-256 and, since migration 2250, its size and mtime as stamped at
`add` (and here). ``detect`` compares cheaply first — a size and mtime equal to the stamps mean
unchanged without reading the file — and only then hashes; a file touched without new bytes just gets
new stamps, and one stamped before stamps existed is hashed once and stamped.

``reset`` undoes what the old content produced by the same cascade as `playlisteval remove`
(index/removal.py): the chunks and their vectors, the segments, the seeds on them and the items of those
seeds with everything that points at them (pairs, benchmark entries, judgments); near-duplicates of the
old content are re-checked. Unlike a removal the video row stays, back to ``new`` with the new hash,
probe and stamps, so the same `index` run indexes the new content in full. An item a worker holds right
now keeps its video as it is until the next `index` (named in the report). Finished items go too: they
were built on content that is no longer there; a selected benchmark they were part of gets its next
version and the one before stays readable (the `index` command freezes it first, select/versions.py).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import select as core_select
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from playlisteval.errors import ConfigError, MediaError
from playlisteval.index.captions import find_sidecar
from playlisteval.index.file_identity import content_moved, file_stamp
from playlisteval.index.removal import _cascade, _ids, _plan, _table
from playlisteval.logs import get_logger
from playlisteval.media.probe import probe
from playlisteval.store.engine import transaction
from playlisteval.store.tables import Chunk, Item, Seed, Segment, Video

log = get_logger(__name__)
_WATCHED = ("new", "indexed", "duplicate")  # a skipped file is probed again by `add` once repaired


@dataclass(frozen=True)
class Changed:
    """A video whose file holds new content: its new hash and stamps."""

    video_id: int
    path: str
    sha256: str
    size: int
    mtime: float


@dataclass
class ChangeReport:
    """What ``reset`` did: the videos put back to ``new`` and what their old content took with it."""

    reindexed: list[str] = field(default_factory=list)
    busy: list[str] = field(default_factory=list)  # an item built on it is being worked on: next `index`
    unreadable: list[str] = field(default_factory=list)  # the new file does not probe: skipped
    rows: dict[str, int] = field(default_factory=dict)  # table → rows deleted
    finished_items: int = 0  # accepted / selected / too-easy items that went

    def as_dict(self) -> dict[str, Any]:
        return {"reindexed": self.reindexed, "busy": self.busy, "unreadable": self.unreadable,
                "finished_items": self.finished_items, "rows": self.rows}


def detect(engine: Engine) -> list[Changed]:
    """The collection's videos whose files changed since they were stamped; stamps the unchanged ones
    whose size or mtime moved (or that had none), so the next look is a stat again."""
    with Session(engine) as session:
        rows = list(session.execute(core_select(col(Video.id), col(Video.path), col(Video.sha256),
                                                col(Video.file_size), col(Video.file_mtime))
                                    .where(col(Video.status).in_(_WATCHED)).order_by(col(Video.id))))
    changed: list[Changed] = []
    restamp: dict[int, tuple[int, float]] = {}
    for video_id, path, sha, size, mtime in rows:
        stamp = file_stamp(path)
        if stamp is None or video_id is None or stamp == (int(size or 0), float(mtime or 0)):
            continue
        moved = content_moved(path, sha, 0, 0.0)  # the stamps differ: the hash decides
        if moved:
            changed.append(Changed(int(video_id), str(path), moved, *stamp))
        else:
            restamp[int(video_id)] = stamp
    if restamp:
        with transaction(engine) as session:
            for video in session.exec(select(Video).where(col(Video.id).in_(sorted(restamp)))).all():
                video.file_size, video.file_mtime = restamp[int(video.id or 0)]
                session.add(video)
    if changed:
        log.info("index.changed", videos=len(changed), paths=[c.path for c in changed][:10])
    return changed


def finished_items(engine: Engine, changed: Sequence[Changed]) -> int:
    """How many accepted / selected / too-easy items the old content of ``changed`` holds (a selected
    benchmark may change: the caller freezes its version before ``reset``)."""
    if not changed:
        return 0
    with Session(engine) as session:
        plan, _ = _plan(session, [c.video_id for c in changed])
    return len(plan.items_protected)


def reset(engine: Engine, changed: Sequence[Changed]) -> ChangeReport:
    """Drop what each changed video's old content produced and put the video back to ``new`` (one
    transaction per video); see the module doc."""
    report = ChangeReport()
    for change in changed:
        reason = ""
        try:
            info = probe(change.path)
        except MediaError as exc:
            info, reason = None, exc.reason
        with transaction(engine) as session:
            plan, targets = _plan(session, [change.video_id])
            if plan.items_busy or plan.videos_busy:
                report.busy.append(change.path)
                continue
            counts = report.rows
            _cascade(session, _table(Item), targets["item"], counts)
            _cascade(session, _table(Seed), targets["seed"], counts)
            recheck = targets["recheck"]
            recheck_segments = _ids(session, col(Segment.id), col(Segment.video_id), recheck)
            _cascade(session, _table(Segment), sorted(set(targets["segment"]) | set(recheck_segments)), counts)
            for video in session.exec(select(Video).where(col(Video.id).in_(recheck))).all() if recheck else []:
                video.status, video.reason = "indexed", None
                session.add(video)
            chunk_ids = _ids(session, col(Chunk.id), col(Chunk.video_id), [change.video_id])
            _cascade(session, _table(Chunk), chunk_ids, counts)
            row = session.get(Video, change.video_id)
            if row is None:
                continue
            row.sha256, row.file_size, row.file_mtime = change.sha256, change.size, change.mtime
            row.index_report, row.lease_owner, row.lease_expires = "", "", 0.0
            if info is None:
                row.status, row.reason = "skipped", reason
                report.unreadable.append(change.path)
            else:
                row.status, row.reason = "new", None
                row.duration, row.codec, row.width, row.height = info.duration, info.codec, info.width, info.height
                sidecar = find_sidecar(Path(change.path))
                row.captions_path = str(sidecar.resolve()) if sidecar else None
                report.reindexed.append(change.path)
            session.add(row)
            report.finished_items += len(plan.items_protected)
    if changed:
        log.info("index.changed_reset", report=json.dumps(report.as_dict())[:500])
    return report


def refuse_changed(engine: Engine) -> None:
    """Before a build: a video changed in place still has the old content's chunks, segments and seeds, and
    a build over them would ask about scenes that are no longer in the file. A clear error instead."""
    found = detect(engine)
    if found:
        shown = ", ".join(c.path for c in found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3 else "")
        raise ConfigError(f"{len(found)} video(s) changed on disk since they were indexed ({shown}); nothing was "
                          "built: run `playlisteval index` first (it indexes them again), then build")
