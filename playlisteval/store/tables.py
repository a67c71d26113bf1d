"""The store's tables (DESIGN "Data model"). The store is the source of truth; the queue carries ids.

JSON columns hold model outputs and records exactly as produced, so they stay auditable.
Vectors are float32 blobs with the hash of the content they were computed from.

Each table lives in a module of its theme (tables_media, tables_items, tables_calls, tables_benchmarks,
tables_human); importing this module registers all of them on SQLModel's metadata, in one place, and
every table is imported from here.
"""

from __future__ import annotations

from sqlmodel import Field

from playlisteval.store.table_base import StoreTable, now
from playlisteval.store.tables_benchmarks import (
    Benchmark,
    BenchmarkGate,
    BenchmarkPair,
    BenchmarkProtocol,
    BenchmarkQuestion,
    BenchmarkSeal,
    BenchmarkVersion,
    ExternalScore,
    JudgeError,
    JudgeRun,
    Judgment,
    Ranking,
    RetrievalError,
    RetrievalRun,
    RetrievalVariant,
)
from playlisteval.store.tables_calls import (
    ContextCache,
    ModelBatch,
    ModelBatchRequest,
    ModelCall,
    ModelPrompt,
    RemoteFile,
    ResponseCache,
    SpendTotal,
)
from playlisteval.store.tables_human import (
    HumanAnnotator,
    HumanClaim,
    HumanRating,
    HumanStudy,
    HumanTask,
)
from playlisteval.store.tables_items import (
    QA,
    Answer,
    DistractorSet,
    GateResult,
    Item,
    ItemEvent,
    ItemOutbox,
    Pair,
    WorkJob,
)
from playlisteval.store.tables_media import (
    Chunk,
    ChunkVector,
    Domain,
    MediaRoot,
    Playlist,
    Seed,
    Segment,
    Video,
)

__all__ = [
    "Answer",
    "Benchmark",
    "BenchmarkGate",
    "BenchmarkPair",
    "BenchmarkProtocol",
    "BenchmarkQuestion",
    "BenchmarkSeal",
    "BenchmarkVersion",
    "Chunk",
    "ChunkVector",
    "ContextCache",
    "DistractorSet",
    "Domain",
    "ExternalScore",
    "GateResult",
    "HumanAnnotator",
    "HumanClaim",
    "HumanRating",
    "HumanStudy",
    "HumanTask",
    "Item",
    "ItemEvent",
    "ItemOutbox",
    "JudgeError",
    "JudgeRun",
    "Judgment",
    "KeyValue",
    "MediaRoot",
    "ModelBatch",
    "ModelBatchRequest",
    "ModelCall",
    "ModelPrompt",
    "Pair",
    "Playlist",
    "QA",
    "Ranking",
    "RemoteFile",
    "ResponseCache",
    "RetrievalError",
    "RetrievalRun",
    "RetrievalVariant",
    "SchemaMigration",
    "Seed",
    "Segment",
    "SpendTotal",
    "StoreTable",
    "Video",
    "WorkJob",
    "now",
]


class SchemaMigration(StoreTable, table=True):
    __tablename__ = "schema_migration"
    name: str = Field(primary_key=True)
    applied_at: float = Field(default_factory=now)


class KeyValue(StoreTable, table=True):
    """Small shared settings every worker must see (the build budget, the pause flag)."""

    __tablename__ = "kv"
    key: str = Field(primary_key=True)
    value: str
