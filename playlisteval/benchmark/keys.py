"""Content keys for questions and pairs: what every seeded draw of the selection is keyed by.

Row ids are auto-increment: they depend on insertion order, and PostgreSQL hands back rows in an order
of its own (a table that was updated no longer reads in id order), so a draw keyed by ids — or over rows
read without ORDER BY — gives another benchmark on another store. A key made of content is the same on
SQLite and PostgreSQL for the same collection and build: the domain, the question and its gold answer,
and where its two evidence segments lie (video file name — not the path, which names the project's
folder — and time range).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import PurePath
from typing import Any

import sqlalchemy as sa
from sqlmodel import Session, col, select

from playlisteval.store.tables import QA, Domain, Item, Seed, Segment, Video

_SEP = "\x1f"
_CHUNK = 500  # bounded IN lists


def content_key(*parts: object) -> str:
    return hashlib.sha256(_SEP.join(str(p) for p in parts).encode("utf-8")).hexdigest()[:16]


def pair_key(question_key: str, better_rating: int, worse_rating: int) -> str:
    """A pair's key: its question's key and which two answers it sets against each other."""
    return f"{question_key}-{better_rating}{worse_rating}"


def question_keys(session: Session, item_ids: Iterable[int]) -> dict[int, str]:
    """Item id → the content key of its current question (items without one are left out)."""
    wanted = sorted(set(item_ids))
    rows: list[Any] = []
    for start in range(0, len(wanted), _CHUNK):
        rows += session.execute(  # sqlalchemy's select: sqlmodel's is typed for at most four columns
            sa.select(col(Item.id), col(Domain.name), col(QA.question), col(QA.answer), col(Seed.segment1_id),
                      col(Seed.segment2_id))
            .join(QA, col(QA.id) == col(Item.current_qa_id))
            .join(Seed, col(Seed.id) == col(Item.seed_id))
            .join(Domain, col(Domain.id) == col(Seed.domain_id))
            .where(col(Item.id).in_(wanted[start:start + _CHUNK]))
            .order_by(col(Item.id))
        ).all()
    seg_ids = sorted({int(s) for row in rows for s in row[4:6]})
    where: dict[int, str] = {}
    for start in range(0, len(seg_ids), _CHUNK):
        for seg_id, video_path, seg_start, seg_end in session.exec(
            select(col(Segment.id), Video.path, Segment.start, Segment.end)
            .join(Video, col(Video.id) == col(Segment.video_id))
            .where(col(Segment.id).in_(seg_ids[start:start + _CHUNK]))
        ).all():
            where[int(seg_id or 0)] = f"{PurePath(video_path).name}@{float(seg_start):.3f}-{float(seg_end):.3f}"
    return {
        int(item_id or 0): content_key(domain, question, answer, where.get(int(s1), ""), where.get(int(s2), ""))
        for item_id, domain, question, answer, s1, s2 in rows
    }


def by_key(keys: dict[int, str]) -> list[int]:
    """The ids in the order of their keys (ties — identical content — by id)."""
    return sorted(keys, key=lambda i: (keys[i], i))
