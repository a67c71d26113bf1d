"""Content keys for questions and pairs: what every seeded draw of the selection is keyed by.

Row ids are auto-increment: they depend on insertion order, and PostgreSQL hands back rows in an order
of its own (a table that was updated no longer reads in id order), so a draw keyed by ids — or over rows
read without ORDER BY — gives another benchmark on another store. A key made of content is the same on
SQLite and PostgreSQL for the same collection and build: the domain, the question and its gold answer,
and where its two evidence segments lie (video file name — not the path, which names the project's
folder — and time range).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable, Sequence
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


def place(video_path: str, start: float, end: float) -> str:
    """Where a segment lies, as a question's key names it: its video's file name (never the folder, which
    names the project's) and its time range."""
    return f"{_file_name(video_path)}@{float(start):.3f}-{float(end):.3f}"


@functools.lru_cache(maxsize=4096)
def _file_name(path: str) -> str:
    """A path's file name; kept per path: a video's segments all name it, and PurePath costs ~25 us."""
    return PurePath(path).name


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
            where[int(seg_id or 0)] = place(video_path, seg_start, seg_end)
    return _keyed(rows, where)


def question_keys_of(session: Session, item_ids: Any) -> dict[int, str]:
    """``question_keys`` of the items a subquery selects (a benchmark's): set-based, two statements whatever
    their number, none carrying a parameter per item (SQLite's limit, issue 26)."""
    rows = session.execute(
        sa.select(col(Item.id), col(Domain.name), col(QA.question), col(QA.answer), col(Seed.segment1_id),
                  col(Seed.segment2_id))
        .join(QA, col(QA.id) == col(Item.current_qa_id))
        .join(Seed, col(Seed.id) == col(Item.seed_id))
        .join(Domain, col(Domain.id) == col(Seed.domain_id))
        .where(col(Item.id).in_(item_ids))
        .order_by(col(Item.id))
    ).all()
    where = {int(seg_id): place(video_path, seg_start, seg_end) for seg_id, video_path, seg_start, seg_end
             in session.execute(sa.select(col(Segment.id), col(Video.path), col(Segment.start), col(Segment.end))
                                .join(Video, col(Video.id) == col(Segment.video_id))
                                .where(segments_of(item_ids))).all()}
    return _keyed(rows, where)


def segments_of(item_ids: Any) -> Any:
    """The condition on ``segment.id`` that holds for the two evidence segments of the items ``item_ids``
    (a subquery) select."""
    seeds = sa.select(col(Item.seed_id)).where(col(Item.id).in_(item_ids))
    return (col(Segment.id).in_(sa.select(col(Seed.segment1_id)).where(col(Seed.id).in_(seeds)))
            | col(Segment.id).in_(sa.select(col(Seed.segment2_id)).where(col(Seed.id).in_(seeds))))


def _keyed(rows: Sequence[Any], where: dict[int, str]) -> dict[int, str]:
    """Item id → question key, from (item id, domain, question, gold answer, segment 1, segment 2) rows and
    each segment's ``place`` (a segment not found is named by "", as it always was)."""
    return {
        int(item_id or 0): content_key(domain, question, answer, where.get(int(s1), ""), where.get(int(s2), ""))
        for item_id, domain, question, answer, s1, s2 in rows
    }


def by_key(keys: dict[int, str]) -> list[int]:
    """The ids in the order of their keys (ties — identical content — by id)."""
    return sorted(keys, key=lambda i: (keys[i], i))
