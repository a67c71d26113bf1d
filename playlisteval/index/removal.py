"""Undoing an `add` (issue 14): remove videos, playlists or domains from the collection.

What goes with a video: its chunks, their vectors, its segments, the seeds built on them, and the items
of those seeds with everything recorded about them (questions, wrong answers, gate results, events,
pairs, benchmark entries, judgments, human tasks: every row that points at them through a foreign key,
found from the schema itself, so tables added later are covered). What stays: the media files (never
touched), the ledger of model calls (money spent stays spent and counts against the budgets) and the
response cache.

Items that reached ``accepted``, ``selected`` or ``too_easy`` are results someone may rely on: a removal
that would take any of them is refused unless forced. An item a worker holds right now, or a video
being indexed right now, is never removed: the removal is refused until its lease ends.

What the removal invalidates is recomputed by the next `playlisteval index`: a video marked as a
near-duplicate of a removed one is put back to ``indexed`` with its segments dropped, so the next run
segments it again, checks it for duplicates against the live collection and builds its seeds, as if the
removed videos had never been added. Playlists left empty, and domains left with no playlist, go too;
the remaining videos of a playlist are renumbered in their order. (One case is not undone: a live video
indexed after such a copy and close to it was checked against the collection without the copy, so it
stays live where a collection that never had the removed video would have marked it.)
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import Table, delete
from sqlalchemy import select as core_select
from sqlalchemy.engine import Engine
from sqlmodel import Session, SQLModel, col, select

from playlisteval.errors import PlaylistEvalError
from playlisteval.store.engine import transaction
from playlisteval.store.tables import Chunk, ChunkVector, Domain, Item, Playlist, Seed, Segment, Video

#: Item states that are results: removing them needs --force.
PROTECTED = ("accepted", "selected", "too_easy")
_BATCH = 500  # ids per IN (...) list


class RemovalRefused(PlaylistEvalError):
    """The removal would take protected or busy items; nothing was removed."""


class NothingToRemove(PlaylistEvalError):
    """A target names nothing in the collection."""


@dataclass
class Removal:
    """What a removal takes (a plan before it runs, a report after)."""

    videos: list[tuple[int, str, str]] = field(default_factory=list)  # (id, path, "domain/playlist")
    playlists: list[str] = field(default_factory=list)  # "domain/playlist" left empty, removed
    domains: list[str] = field(default_factory=list)  # left without playlists, removed
    chunks: int = 0
    vectors: int = 0
    segments: int = 0
    seeds: int = 0
    items_not_started: list[int] = field(default_factory=list)
    items_started: list[int] = field(default_factory=list)  # worked on, not results: removed with history
    items_protected: list[tuple[int, str]] = field(default_factory=list)  # (id, state): need --force
    items_busy: list[int] = field(default_factory=list)  # held by a live lease right now
    videos_busy: list[str] = field(default_factory=list)  # being indexed right now
    rechecked: list[str] = field(default_factory=list)  # near-duplicates of removed videos, to re-check
    rows: dict[str, int] = field(default_factory=dict)  # table → rows deleted (after the removal)
    done: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "removed": self.done,
            "videos": [{"id": i, "path": p, "playlist": pl} for i, p, pl in self.videos],
            "playlists": self.playlists, "domains": self.domains,
            "chunks": self.chunks, "vectors": self.vectors, "segments": self.segments, "seeds": self.seeds,
            "items": {"not_started": self.items_not_started, "started": self.items_started,
                      "protected": [{"id": i, "state": s} for i, s in self.items_protected],
                      "busy": self.items_busy},
            "videos_busy": self.videos_busy,
            "rechecked": self.rechecked, "rows": self.rows,
        }


def _chunks(ids: Sequence[int]) -> Iterable[list[int]]:
    for start in range(0, len(ids), _BATCH):
        yield list(ids[start:start + _BATCH])


def _resolve(session: Session, videos: Sequence[str | Path], playlists: Sequence[str],
             domains: Sequence[str]) -> list[int]:
    """Video ids named by paths (a file, or a folder: every video under it), "domain/playlist" names and
    domain names; an unknown target is an error listing what is known."""
    ids: set[int] = set()
    known_domains = {name: int(did or 0) for did, name in session.exec(select(Domain.id, Domain.name))}
    for name in domains:
        if name not in known_domains:
            hint = [d for d in known_domains if d.lower() == name.lower()]
            known = ", ".join(sorted(known_domains)) or "none"
            raise NothingToRemove(f"no domain {name!r}" + (f" (did you mean {hint[0]!r}?)" if hint else "")
                                  + f"; known: {known}")
        ids.update(int(v or 0) for v in session.exec(
            select(Video.id).join(Playlist, col(Playlist.id) == Video.playlist_id)
            .where(Playlist.domain_id == known_domains[name])))
    for full in playlists:
        domain, sep, playlist = full.partition("/")
        row = session.exec(select(Playlist.id).join(Domain, col(Domain.id) == Playlist.domain_id)
                           .where(Domain.name == domain, Playlist.name == playlist)).first()
        if not sep or row is None:
            names = [f"{d}/{p}" for d, p in session.exec(
                select(Domain.name, Playlist.name).join(Playlist, col(Playlist.domain_id) == Domain.id)
                .order_by(col(Domain.name), col(Playlist.name)))]
            raise NothingToRemove(f"no playlist {full!r} (give DOMAIN/PLAYLIST); known: {', '.join(names) or 'none'}")
        ids.update(int(v or 0) for v in session.exec(select(Video.id).where(Video.playlist_id == row)))
    for raw in videos:
        path = Path(raw).expanduser().resolve()
        exact = [int(v or 0) for v in session.exec(select(Video.id).where(Video.path == str(path)))]
        under = [int(v or 0) for v in session.exec(select(Video.id).where(
            col(Video.path).startswith(str(path).rstrip(os.sep) + os.sep)))]
        if not exact and not under:
            raise NothingToRemove(f"{raw}: no video of the collection is this file or lies under this folder "
                                  "(`playlisteval sql \"SELECT path FROM video\"` lists them)")
        ids.update(exact + under)
    return sorted(ids)


def _ids(session: Session, column: Any, key: Any, values: Sequence[int]) -> list[int]:
    """The distinct ``column`` values of the rows whose ``key`` is in ``values`` (NULLs left out)."""
    out: set[int] = set()
    for part in _chunks(values):
        out.update(int(v) for v in session.execute(core_select(column).where(key.in_(part))).scalars()
                   if v is not None)
    return sorted(out)


def _plan(session: Session, video_ids: list[int]) -> tuple[Removal, dict[str, list[int]]]:
    removal = Removal()
    now = time.time()
    removal.videos_busy = sorted(session.exec(select(Video.path).where(
        col(Video.id).in_(video_ids), Video.lease_owner != "", col(Video.lease_expires) > now)))
    rows = session.exec(
        select(Video.id, Video.path, Domain.name, Playlist.name)
        .join(Playlist, col(Playlist.id) == Video.playlist_id).join(Domain, col(Domain.id) == Playlist.domain_id)
        .where(col(Video.id).in_(video_ids))
        .order_by(col(Domain.name), col(Playlist.name), col(Video.position), col(Video.id))).all()
    removal.videos = [(int(i or 0), p, f"{d}/{pl}") for i, p, d, pl in rows]
    chunk_ids = _ids(session, col(Chunk.id), col(Chunk.video_id), video_ids)
    segment_ids = _ids(session, col(Segment.id), col(Segment.video_id), video_ids)
    seed_ids = sorted(set(_ids(session, col(Seed.id), col(Seed.segment1_id), segment_ids))
                      | set(_ids(session, col(Seed.id), col(Seed.segment2_id), segment_ids)))
    removal.chunks, removal.segments, removal.seeds = len(chunk_ids), len(segment_ids), len(seed_ids)
    removal.vectors = len(_ids(session, col(ChunkVector.id), col(ChunkVector.chunk_id), chunk_ids))
    item_ids: list[int] = []
    for part in _chunks(seed_ids):
        for item in session.exec(select(Item).where(col(Item.seed_id).in_(part))):
            assert item.id is not None
            item_ids.append(item.id)
            if item.lease_owner and (item.lease_expires or 0) > now:
                removal.items_busy.append(item.id)
            if item.state in PROTECTED:
                removal.items_protected.append((item.id, item.state))
            elif item.state == "pending" and not item.phase1_attempts and not item.version:
                removal.items_not_started.append(item.id)
            else:
                removal.items_started.append(item.id)
    # videos whose segments were judged copies of the removed ones: re-checked by the next index
    dup_owners = _ids(session, col(Segment.video_id), col(Segment.duplicate_of), segment_ids)
    recheck = [v for v in dup_owners if v not in set(video_ids)]
    removal.rechecked = sorted(session.exec(select(Video.path).where(col(Video.id).in_(recheck)))) if recheck else []
    targets = {"video": video_ids, "chunk": chunk_ids, "segment": segment_ids, "seed": seed_ids, "item": item_ids,
               "recheck": recheck}
    return removal, targets


def _children(table: Table) -> list[tuple[Table, Any]]:
    """(child table, its column) for every foreign key that points at ``table``'s id."""
    found = []
    for child in SQLModel.metadata.sorted_tables:
        for fk in child.foreign_keys:
            if fk.column.table is table and fk.column.name == "id":
                found.append((child, fk.parent))
    return found


def _cascade(session: Session, table: Table, ids: list[int], counts: dict[str, int]) -> None:
    """Delete rows ``ids`` of ``table`` and, first, every row that points at them (recursively)."""
    if not ids:
        return
    for child, column in _children(table):
        if child is table:
            continue
        child_ids = _ids(session, child.c.id, column, ids) if "id" in child.c else []
        if child_ids:
            _cascade(session, child, child_ids, counts)
        elif "id" not in child.c:
            for part in _chunks(ids):
                session.execute(delete(child).where(column.in_(part)))
    for part in _chunks(ids):
        result = session.execute(delete(table).where(table.c.id.in_(part)))
        counts[table.name] = counts.get(table.name, 0) + int(result.rowcount or 0)  # type: ignore[attr-defined]


def _table(model: type[SQLModel]) -> Table:
    table = model.__table__  # type: ignore[attr-defined]
    assert isinstance(table, Table)
    return table


def _renumber(session: Session, playlist_ids: set[int]) -> None:
    for playlist_id in sorted(playlist_ids):
        videos = session.exec(select(Video).where(Video.playlist_id == playlist_id)
                              .order_by(col(Video.position), col(Video.id))).all()
        for position, video in enumerate(videos):
            if video.position != position:
                video.position = position


def _empty_containers(session: Session, playlist_ids: set[int], removal: Removal,
                      counts: dict[str, int]) -> None:
    domain_ids: set[int] = set()
    for playlist in session.exec(select(Playlist).where(col(Playlist.id).in_(playlist_ids))).all():
        if session.exec(select(Video.id).where(Video.playlist_id == playlist.id).limit(1)).first() is None:
            domain = session.get(Domain, playlist.domain_id)
            removal.playlists.append(f"{domain.name if domain else '?'}/{playlist.name}")
            domain_ids.add(playlist.domain_id)
            _cascade(session, _table(Playlist), [playlist.id or 0], counts)
    for domain_id in sorted(domain_ids):
        if session.exec(select(Playlist.id).where(Playlist.domain_id == domain_id).limit(1)).first() is None:
            domain = session.get(Domain, domain_id)
            if domain is not None:
                removal.domains.append(domain.name)
                _cascade(session, _table(Domain), [domain_id], counts)


def remove(engine: Engine, *, videos: Sequence[str | Path] = (), playlists: Sequence[str] = (),
           domains: Sequence[str] = (), force: bool = False, dry_run: bool = False) -> Removal:
    """Remove what the targets name, in one transaction; see the module doc. Raises RemovalRefused (and
    removes nothing) when protected items would go without ``force``, or when an item is busy."""
    if not (videos or playlists or domains):
        raise NothingToRemove("nothing named: give video files or folders, --playlist DOMAIN/PLAYLIST or --domain")
    with transaction(engine) as session:
        video_ids = _resolve(session, videos, playlists, domains)
        removal, targets = _plan(session, video_ids)
        if dry_run:
            return removal
        if removal.videos_busy:
            raise RemovalRefused(f"{removal.videos_busy[0]} is being indexed right now; nothing was removed: let "
                                 "`playlisteval index` finish (or its lease run out) and run `playlisteval remove` "
                                 "again")
        if removal.items_busy:
            shown = ", ".join(map(str, removal.items_busy[:10]))
            raise RemovalRefused(f"item(s) {shown} are being worked on right now; nothing was removed: stop the "
                                 "build (or wait for it) and run `playlisteval remove` again")
        if removal.items_protected and not force:
            shown = ", ".join(f"{i} ({s})" for i, s in removal.items_protected[:10])
            more = f" and {len(removal.items_protected) - 10} more" if len(removal.items_protected) > 10 else ""
            raise RemovalRefused(
                f"this would remove {len(removal.items_protected)} finished item(s): {shown}{more}; nothing was "
                "removed. Pass --force to remove them too, with their pairs, benchmark entries and judgments")
        playlist_ids = set(_ids(session, col(Video.playlist_id), col(Video.id), video_ids))
        counts: dict[str, int] = {}
        _cascade(session, _table(Item), targets["item"], counts)
        _cascade(session, _table(Seed), targets["seed"], counts)
        recheck = targets["recheck"]
        # the copies of removed videos lose their verdict and their segments: the next index judges them afresh
        recheck_segments = _ids(session, col(Segment.id), col(Segment.video_id), recheck)
        _cascade(session, _table(Segment), sorted(set(targets["segment"]) | set(recheck_segments)), counts)
        for video in session.exec(select(Video).where(col(Video.id).in_(recheck))).all() if recheck else []:
            video.status, video.reason = "indexed", None
            session.add(video)
        _cascade(session, _table(Video), video_ids, counts)
        session.flush()
        _renumber(session, playlist_ids)
        _empty_containers(session, playlist_ids, removal, counts)
        removal.rows, removal.done = counts, True
    return removal
