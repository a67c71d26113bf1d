"""The store's tables of what was indexed: domains, playlists, videos, their chunks, vectors, segments
and seeds, and the media roots (DESIGN "Data model"; every table is re-exported by store/tables.py).
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, LargeBinary, UniqueConstraint
from sqlmodel import Field

from playlisteval.store.media_paths import MediaPath
from playlisteval.store.table_base import StoreTable, now


class Domain(StoreTable, table=True):
    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(unique=True, index=True)
    description: str = ""  # 2001 (issue 20): what the domain covers (paper Table 13), exported with the benchmark


class Playlist(StoreTable, table=True):
    __table_args__ = (UniqueConstraint("domain_id", "name"),)
    id: int | None = Field(default=None, primary_key=True)
    domain_id: int = Field(foreign_key="domain.id", index=True)
    name: str
    # the folder or manifest it was added from; stored portable like a video's path (store/media_paths.py)
    source: str | None = Field(default=None, sa_column=Column(MediaPath, nullable=True))


class Video(StoreTable, table=True):
    __table_args__ = (UniqueConstraint("playlist_id", "path"),)
    id: int | None = Field(default=None, primary_key=True)
    playlist_id: int = Field(foreign_key="playlist.id", index=True)
    # relative to the project, "@ROOT/…" under a named media root, or absolute; read back as a file path
    # (store/media_paths.py: the one place a stored path is resolved; issue 41)
    path: str = Field(sa_column=Column(MediaPath, nullable=False))
    title: str
    position: int = 0
    url: str | None = None
    sha256: str | None = None
    duration: float | None = None
    codec: str | None = None
    width: int | None = None
    height: int | None = None
    captions_path: str | None = Field(default=None, sa_column=Column(MediaPath, nullable=True))
    # new → indexed; or skipped (missing/corrupt/silent…) / duplicate (SPEC A7), with the reason
    status: str = Field(default="new", index=True)
    reason: str | None = None
    # indexing (SPEC A4–A5) is claimed per video with a lease, so duplicate or late messages on the
    # "index" queue do nothing; its outcome (warnings, counts) is kept for the coordinator's report
    lease_owner: str = ""
    lease_expires: float = 0.0
    index_report: str = ""  # JSON written by the worker that indexed the video
    # the file as it was when added or last indexed (issue 22): a size or mtime that moved makes `add` and
    # `index` hash it again, and a new sha256 re-indexes it; 0 = not stamped yet (a store from before)
    file_size: int = Field(default=0, sa_column=Column(BigInteger, nullable=False, server_default="0"))
    file_mtime: float = Field(default=0.0, sa_column_kwargs={"server_default": "0"})


class Chunk(StoreTable, table=True):
    __table_args__ = (UniqueConstraint("video_id", "idx"),)
    id: int | None = Field(default=None, primary_key=True)
    video_id: int = Field(foreign_key="video.id", index=True)
    idx: int
    start: float
    end: float
    transcript: str = ""
    transcript_source: str = ""  # captions / subtitles / faster-whisper / qwen3-asr / pocketsphinx / none
    transcript_model: str = ""  # the ASR model that heard it ("" for captions and subtitles)
    ocr_text: str = ""


class ChunkVector(StoreTable, table=True):
    __tablename__ = "chunk_vector"
    __table_args__ = (UniqueConstraint("chunk_id", "embedder"),)
    id: int | None = Field(default=None, primary_key=True)
    chunk_id: int = Field(foreign_key="chunk.id", index=True)
    embedder: str = Field(index=True)
    dim: int
    content_hash: str
    vector: bytes = Field(sa_column=Column(LargeBinary, nullable=False))


class Segment(StoreTable, table=True):
    __table_args__ = (UniqueConstraint("video_id", "idx", "embedder"),)
    id: int | None = Field(default=None, primary_key=True)
    video_id: int = Field(foreign_key="video.id", index=True)
    idx: int
    embedder: str
    start: float
    end: float
    first_chunk: int
    last_chunk: int
    vector: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    duplicate_of: int | None = None


class Seed(StoreTable, table=True):
    __table_args__ = (UniqueConstraint("segment1_id", "segment2_id"),)
    id: int | None = Field(default=None, primary_key=True)
    domain_id: int = Field(foreign_key="domain.id", index=True)
    segment1_id: int = Field(foreign_key="segment.id")
    segment2_id: int = Field(foreign_key="segment.id")
    similarity: float


class MediaRoot(StoreTable, table=True):
    """A named folder outside the project that media paths are stored under ("@NAME/…", issue 41): moving
    the media is re-pointing the root (`playlisteval media-root set NAME FOLDER`), not rewriting every path."""

    __tablename__ = "media_root"
    name: str = Field(primary_key=True)
    path: str  # absolute, as set on this store's machine
    set_at: float = Field(default_factory=now)
