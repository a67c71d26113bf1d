"""A retriever's index size on disk (SPEC R4, paper Table 4): the bytes of its stored vectors plus the saved
HNSW index that `search` reads back for a corpus above ``[index] exact_search_max`` vectors.

The vectors' bytes are counted in the store (``length(vector)`` per row), not computed from dims × chunks,
so a half-made index or a mix of widths is reported as it is. The HNSW file is found the way search.py names
it — by the key of the corpus matrix in search order (index/vectors.py ``matrix_key``) — and counted only if
it is there: a corpus small enough to be searched exactly has none, by design.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import func
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from playlisteval.index.vectors import decode_many, matrix_key
from playlisteval.store.tables import Chunk, ChunkVector, Video

#: the parameters search.py's VectorIndex is built with (its defaults: M, ef_construction, seed); a test
#: builds one and checks its file is the one found here
HNSW_PARAMS = (16, 200, 0)


@dataclass(frozen=True)
class Footprint:
    vectors: int  # live vectors of the embedder
    vector_bytes: int
    hnsw_bytes: int

    @property
    def total(self) -> int:
        return self.vector_bytes + self.hnsw_bytes


def _live(stmt: Any, embedder: str) -> Any:
    return (stmt.join(Chunk, col(Chunk.id) == col(ChunkVector.chunk_id))
            .join(Video, col(Video.id) == col(Chunk.video_id))
            .where(ChunkVector.embedder == embedder, Video.status == "indexed"))


def footprint(engine: Engine, embedder: str, dim: int, cache_dir: Path | None, exact_max: int) -> Footprint:
    """The embedder's vectors over the whole collection and its saved HNSW index, if one was built."""
    with Session(engine) as session:
        count, stored = session.exec(_live(select(func.count(col(ChunkVector.id)),
                                                  func.coalesce(func.sum(func.length(ChunkVector.vector)), 0)),
                                           embedder)).one()
        hnsw = 0
        if cache_dir is not None and int(count) > exact_max and cache_dir.is_dir():
            rows = session.exec(_live(select(ChunkVector.vector), embedder)
                                .order_by(Chunk.video_id, Chunk.idx, ChunkVector.chunk_id)).all()
            path = cache_dir / f"hnsw-{matrix_key(decode_many([bytes(r) for r in rows], dim), *HNSW_PARAMS)}.bin"
            hnsw = path.stat().st_size if path.is_file() else 0
    return Footprint(int(count), int(stored), hnsw)
