"""Bounded builds (issue 9, item 10): which seeds get new items when the build has limits.

Three limits, each 0 = none:

- ``[build] max_items`` (or `build --max-items N`): items in the store, in any state. Once reached, no
  item is created, whatever happened to the earlier ones.
- ``[build] target_accepted_per_domain``: a domain gets no new item once its accepted questions
  (accepted, selected or too easy) plus its items still being built reach the target. A build in this
  process tops the domain up in waves as items are discarded or fail (``build.build``).
- ``[build] max_items_per_segment``: how many items may draw on one segment (a seed uses two), so a
  small bound does not spend itself on one popular segment.

Under a bound, seeds are taken in an order keyed by their content (the project seed, and each
segment's video hash and time range), so the same collection yields the same items on any store,
whatever ids that store handed out. Without a bound every seed gets its item, as before.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import func
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from playlisteval.config import Settings
from playlisteval.store import items
from playlisteval.store.engine import transaction
from playlisteval.store.states import WORKING, State
from playlisteval.store.tables import Item, Seed, Segment, Video

#: an item in one of these has a question that passed the build
ACCEPTED_STATES = (State.ACCEPTED, State.SELECTED, State.TOO_EASY)


@dataclass(frozen=True)
class Bounds:
    max_items: int = 0
    target_per_domain: int = 0
    per_segment: int = 0

    @property
    def bounded(self) -> bool:
        return bool(self.max_items or self.target_per_domain or self.per_segment)


def bounds_of(settings: Settings, max_items: int | None = None) -> Bounds:
    cfg = settings.build
    return Bounds(max_items=cfg.max_items if max_items is None else max_items,
                  target_per_domain=cfg.target_accepted_per_domain, per_segment=cfg.max_items_per_segment)


def _segment_keys(s: Session) -> dict[int, str]:
    """Segment id → what it is, independent of ids: its video's content hash (else file name) and range."""
    rows = s.exec(select(Video.id, Video.sha256, Video.path))
    videos = {int(v or 0): sha or Path(path).name for v, sha, path in rows}
    return {int(i or 0): f"{videos.get(v, '')}@{start:.3f}-{end:.3f}"
            for i, v, start, end in s.exec(select(Segment.id, Segment.video_id, Segment.start, Segment.end))}


def _counts(s: Session) -> tuple[int, Counter[int], Counter[int]]:
    """Items in the store; items per segment; per domain, items accepted or still being built."""
    total = int(s.exec(select(func.count()).select_from(Item)).one())
    per_segment: Counter[int] = Counter()
    per_domain: Counter[int] = Counter()
    live = [st.value for st in (*ACCEPTED_STATES, *WORKING)]
    for seg1, seg2, domain, state in s.exec(select(Seed.segment1_id, Seed.segment2_id, Seed.domain_id, Item.state)
                                            .join(Item, col(Item.seed_id) == col(Seed.id))).all():
        per_segment.update((int(seg1), int(seg2)))
        if state in live:
            per_domain[int(domain)] += 1
    return total, per_segment, per_domain


def create_items(engine: Engine, bounds: Bounds, project_seed: int) -> list[int]:
    """Create items for seeds that have none, within ``bounds``; returns the new items' ids."""
    if not bounds.bounded:
        return items.create_items(engine)
    with transaction(engine) as s:
        total, per_segment, per_domain = _counts(s)
        keys = _segment_keys(s)
        free = s.exec(select(Seed).where(col(Seed.id).not_in(select(Item.seed_id)))).all()

        def order(seed: Seed) -> str:
            content = f"{project_seed}|{keys.get(seed.segment1_id, '')}|{keys.get(seed.segment2_id, '')}"
            return hashlib.sha256(content.encode()).hexdigest()

        new: list[Item] = []
        for seed in sorted(free, key=order):
            if bounds.max_items and total + len(new) >= bounds.max_items:
                break
            if bounds.target_per_domain and per_domain[seed.domain_id] >= bounds.target_per_domain:
                continue
            segments = (seed.segment1_id, seed.segment2_id)
            if bounds.per_segment and any(per_segment[g] >= bounds.per_segment for g in segments):
                continue
            new.append(Item(seed_id=seed.id or 0))
            per_segment.update(segments)
            per_domain[seed.domain_id] += 1
        s.add_all(new)
        s.flush()
        return [i.id for i in new if i.id is not None]
