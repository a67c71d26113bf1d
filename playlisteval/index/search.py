"""Chunk search over the stored vectors (SPEC A8), restricted to a corpus (a domain, or everything).

The index over a corpus is made from the store on first use and kept per process; it is made again
when the corpus changes (more vectors, or videos that became duplicates). An HNSW index (a corpus
above ``[index] exact_search_max`` vectors) is saved under the project's ``indexes/`` keyed by its
vectors, so a later process reads it back rather than building it again.

This module is the whole of `playlisteval search`'s import path: it must not import OCR, video
decoding, the broker or transformers (tests/test_search_cli.py checks), so that a cold search
answers in seconds.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import func, or_
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from playlisteval.config import Settings
from playlisteval.errors import ConfigError, PlaylistEvalError
from playlisteval.index.embedders import Embedder, get_embedder, needs_frames
from playlisteval.index.vectors import VectorIndex, decode_many
from playlisteval.store.tables import Chunk, ChunkVector, Domain, Playlist, Video


@dataclass(frozen=True)
class Hit:
    chunk_id: int
    video_id: int
    path: str
    title: str
    start: float
    end: float
    score: float
    transcript: str


@dataclass
class _Corpus:
    key: tuple[object, ...]
    chunk_ids: list[int]
    index: VectorIndex


_corpora: dict[tuple[str, str, str | None], _Corpus] = {}
_lock = threading.Lock()


class UnknownDomain(ConfigError):
    def __init__(self, domain: str, known: list[str]) -> None:
        listed = ", ".join(known) if known else "none yet (run `playlisteval add`)"
        super().__init__(f"unknown domain {domain!r}; known: {listed}")
        self.known = known


class NotIndexed(PlaylistEvalError):
    """Nothing to search: no chunk has a vector for the embedder."""


def known_domains(engine: Engine) -> list[str]:
    with Session(engine) as session:
        return sorted(session.exec(select(Domain.name)).all())


def check_searchable(engine: Engine, embedder: str, domain: str | None) -> None:
    """UnknownDomain for a domain the store lacks; NotIndexed when there is nothing to search."""
    if domain is not None and domain not in (known := known_domains(engine)):
        raise UnknownDomain(domain, known)
    with Session(engine) as session:
        if session.exec(_scope(select(func.count(col(ChunkVector.id))), embedder, None)).one():
            return
        indexed = session.exec(select(func.count(col(Video.id))).where(Video.status == "indexed")).one()
    if not indexed:
        raise NotIndexed("nothing is indexed yet: run `playlisteval index` first")
    raise NotIndexed(f"no chunk has a vector for embedder {embedder!r}: run `playlisteval index --embedder "
                     f"{embedder}` first")


@dataclass(frozen=True)
class Unreachable:
    """An indexed video with no vector for the embedder: nothing a query matches can be in it."""

    video_id: int
    path: str
    domain: str


def unreachable_videos(engine: Engine, embedder: Embedder, domain: str | None = None) -> list[Unreachable]:
    """Indexed videos (of ``domain``, or all) that a text embedder cannot place (issue 44): no chunk has a
    transcript or on-screen text, so every vector of theirs is zero and no query can ever find them —
    while `search` still answers with the nearest other video. A visual embedder reads frames: none then.
    In path order."""
    if needs_frames(embedder):
        return []
    with Session(engine) as session:
        worded = select(Chunk.video_id).where(or_(func.trim(col(Chunk.transcript)) != "",
                                                  func.trim(col(Chunk.ocr_text)) != ""))
        stmt = (select(col(Video.id), col(Video.path), col(Domain.name))
                .join(Playlist, col(Playlist.id) == col(Video.playlist_id))
                .join(Domain, col(Domain.id) == col(Playlist.domain_id))
                .where(Video.status == "indexed", col(Video.id).not_in(worded)))
        if domain is not None:
            stmt = stmt.where(Domain.name == domain)
        rows = session.exec(stmt.order_by(col(Video.path))).all()
    return [Unreachable(int(v or 0), str(p), str(d)) for v, p, d in rows]


def _scope(stmt: Any, embedder: str, domain: str | None) -> Any:
    stmt = (
        stmt.join(Chunk, Chunk.id == ChunkVector.chunk_id)
        .join(Video, Video.id == Chunk.video_id)
        .where(ChunkVector.embedder == embedder, Video.status == "indexed")
    )
    if domain is not None:
        stmt = (
            stmt.join(Playlist, Playlist.id == Video.playlist_id)
            .join(Domain, Domain.id == Playlist.domain_id)
            .where(Domain.name == domain)
        )
    return stmt


def index_cache_dir(settings: Settings) -> Path:
    """Where HNSW indexes are saved, keyed by their vectors (beside the project's store)."""
    return settings.root / "indexes"


def corpus_index(engine: Engine, embedder: Embedder, domain: str | None,
                 exact_max: int, cache_dir: Path | None = None) -> tuple[list[int], VectorIndex]:
    """(chunk ids, index) of the live chunks of ``domain`` (None: the whole collection); an HNSW index
    is read back from ``cache_dir`` when the same vectors were indexed before."""
    with Session(engine) as session:
        count, last = session.exec(
            _scope(select(func.count(col(ChunkVector.id)), func.max(col(ChunkVector.id))), embedder.name, domain)
        ).one()
        key = (count, last, exact_max)  # another threshold may make another kind of index
        cache_key = (str(engine.url), embedder.name, domain)
        with _lock:
            cached = _corpora.get(cache_key)
        if cached is not None and cached.key == key:
            return cached.chunk_ids, cached.index
        rows = session.exec(
            _scope(select(ChunkVector.chunk_id, ChunkVector.vector), embedder.name, domain)
            # in (video, position in it) order, not chunk id order: chunk ids follow which video's index
            # finished first, and rows are how equal scores are tied, so they must not depend on it
            .order_by(Chunk.video_id, Chunk.idx, ChunkVector.chunk_id)
        ).all()
    chunk_ids = [r[0] for r in rows]
    index = VectorIndex(decode_many([r[1] for r in rows], embedder.dim), exact_max=exact_max,
                        cache_dir=cache_dir)
    with _lock:
        _corpora[cache_key] = _Corpus(key, chunk_ids, index)
    return chunk_ids, index


def project_index(settings: Settings, engine: Engine, embedder: Embedder,
                  domain: str | None = None) -> tuple[list[int], VectorIndex]:
    """``corpus_index`` as the project's settings make it: exact up to ``[index] exact_search_max``
    vectors, HNSW above, saved under ``index_cache_dir`` and read back by every later process (a
    `search`, an evaluation) over the same vectors instead of rebuilt."""
    return corpus_index(engine, embedder, domain, settings.index.exact_search_max, index_cache_dir(settings))


def search(settings: Settings, engine: Engine, query: str, domain: str | None = None, k: int = 10,
           embedder: Embedder | str | None = None) -> list[Hit]:
    """The ``k`` chunks most similar to ``query``, best first."""
    if embedder is None or isinstance(embedder, str):
        embedder = get_embedder(embedder or settings.index.embedder, settings.index.embedding_dims, settings.index)
    chunk_ids, index = project_index(settings, engine, embedder, domain)
    if not chunk_ids:
        return []
    rows, scores = index.search(embedder.embed_texts([query])[0], k)
    wanted = [chunk_ids[r] for r in rows]
    with Session(engine) as session:
        found = {
            c.id: (c, v)
            for c, v in session.exec(
                select(Chunk, Video).join(Video, Video.id == Chunk.video_id)  # type: ignore[arg-type]
                .where(Chunk.id.in_(wanted))  # type: ignore[union-attr]
            ).all()
        }
    hits = []
    for chunk_id, score in zip(wanted, scores.tolist(), strict=True):
        chunk, video = found[chunk_id]
        hits.append(Hit(chunk_id, video.id, video.path, video.title, chunk.start, chunk.end,  # type: ignore[arg-type]
                        float(score), chunk.transcript))
    return hits
