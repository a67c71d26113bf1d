"""The store's tables of benchmarks and their evaluation: benchmarks, their pairs, gates, questions,
protocols, versions and seals, judge and retrieval runs with their judgments, rankings and errors, and
external scores (DESIGN "Data model"; re-exported by store/tables.py).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, Column, LargeBinary, UniqueConstraint
from sqlmodel import Field

from playlisteval.store.table_base import StoreTable, now


class Benchmark(StoreTable, table=True):
    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(unique=True)
    seed: int = 0
    settings: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    created_at: float = Field(default_factory=now)
    # 2300 (issue 22): when its questions were last drawn (the pool read by select / select --redraw);
    # 0 = not recorded (drawn before it was kept): a re-select names items accepted after it (select/redraw.py)
    drawn_at: float = 0.0


class BenchmarkPair(StoreTable, table=True):
    __tablename__ = "benchmark_pair"
    __table_args__ = (UniqueConstraint("benchmark_id", "pair_id"),)
    id: int | None = Field(default=None, primary_key=True)
    benchmark_id: int = Field(foreign_key="benchmark.id", index=True)
    pair_id: int = Field(foreign_key="pair.id")
    a_is_better: bool = True  # SPEC G5: side drawn once per pair from a shared seed
    # 2310 (issue 41): the weak judges' verdicts this benchmark was gated with, copied from the pair at the
    # draw: another benchmark's gate with other weak judges rewrites ``pair.difficulty``, never these
    difficulty: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))


class BenchmarkGate(StoreTable, table=True):
    """The difficulty gate's record of every pair of a benchmark's sampled questions, kept and dropped alike
    (issue 41, 2312), copied from ``pair`` when the benchmark is drawn (store/benchmark_gate.py). Its dataset
    card's weak-judge figures read these: another draw's gate rewrites ``pair.difficulty`` and ``pair.kept``,
    also for the pairs this benchmark's gate dropped, which ``benchmark_pair`` does not hold."""

    __tablename__ = "benchmark_gate"
    __table_args__ = (UniqueConstraint("benchmark_id", "pair_id"),)
    id: int | None = Field(default=None, primary_key=True)
    benchmark_id: int = Field(foreign_key="benchmark.id", index=True)
    pair_id: int = Field(foreign_key="pair.id")
    difficulty: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))  # as pair.difficulty
    kept: bool | None = None  # the gate's decision on it for this benchmark


class BenchmarkQuestion(StoreTable, table=True):
    """SPEC F3's first level: the questions sampled per domain (the second level draws pairs from them)."""

    __tablename__ = "benchmark_question"
    __table_args__ = (UniqueConstraint("benchmark_id", "item_id"),)
    id: int | None = Field(default=None, primary_key=True)
    benchmark_id: int = Field(foreign_key="benchmark.id", index=True)
    item_id: int = Field(foreign_key="item.id")
    domain_id: int = Field(foreign_key="domain.id")
    kept_pairs: int = 0  # pairs of this question the difficulty gate kept
    drawn_pairs: int = 0  # of them, drawn into the benchmark


class JudgeRun(StoreTable, table=True):
    __tablename__ = "judge_run"
    id: int | None = Field(default=None, primary_key=True)
    benchmark_id: int = Field(foreign_key="benchmark.id", index=True)
    judge: str
    evidence: str = "retrieved"  # retrieved / uniform / oracle
    scope: str = "domain"
    swapped: bool = False
    settings: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    created_at: float = Field(default_factory=now)
    # 0043 (issue 6): the second stream and when every pair had its judgment (0 = unfinished)
    modality: str = "frames+transcript"
    finished_at: float = 0.0
    # 0202 (issue 9): the run's identity besides benchmark and judge — a hash of every option that changes
    # what the judge sees (eval/runkey.py); finished_at is when the last pass over its pairs ended
    options_hash: str = ""
    # 2201 (issue 22): the benchmark version the run was made on (0: made before versions were kept)
    benchmark_version: int = Field(default=0, sa_column_kwargs={"server_default": "0"})  # raw INSERTs of old code


class JudgeError(StoreTable, table=True):
    """A judge call that failed (issue 9): an error, never a judgment and never a score. Running the same
    run again asks its pair again; a judgment then replaces it."""

    __tablename__ = "judge_error"
    __table_args__ = (UniqueConstraint("run_id", "pair_id"),)
    id: int | None = Field(default=None, primary_key=True)
    run_id: int = Field(foreign_key="judge_run.id", index=True)
    pair_id: int = Field(foreign_key="pair.id")
    item_id: int = 0
    error: str = ""  # the failed calls are on the ledger too (model_call.run_id, status "error")
    attempts: int = 1  # passes that failed on this pair
    created_at: float = Field(default_factory=now)


class RetrievalError(StoreTable, table=True):
    """A question a retriever run could not rank (issue 9): an error, never a miss."""

    __tablename__ = "retrieval_error"
    __table_args__ = (UniqueConstraint("run_id", "item_id"),)
    id: int | None = Field(default=None, primary_key=True)
    run_id: int = Field(foreign_key="retrieval_run.id", index=True)
    item_id: int = Field(foreign_key="item.id")
    error: str = ""
    created_at: float = Field(default_factory=now)


class Judgment(StoreTable, table=True):
    __table_args__ = (UniqueConstraint("run_id", "pair_id"),)
    id: int | None = Field(default=None, primary_key=True)
    run_id: int = Field(foreign_key="judge_run.id", index=True)
    pair_id: int = Field(foreign_key="pair.id")
    a_is_better: bool
    verdict: str | None = None  # A / B / None (no verdict)
    score: float = 0.0  # 1, 0, or 0.5 for no verdict (SPEC G4)
    raw: str = ""
    # 0040–0042 (issue 6): what the judge was shown — chunks, frames (video id, seconds), transcript
    # lines, audio — exactly; how the reply ended (verdict / no_verdict / refusal / error); the ledger row
    evidence: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    outcome: str = "verdict"
    call_id: int = 0  # model_call.id; 0 for shortcut judges, which call no model


class ExternalScore(StoreTable, table=True):
    """The last `eval correlate` input (issue 20, 2000): a published score per judge, so the report can draw the
    correlation scatter without the file; a new input replaces the old one whole."""

    __tablename__ = "external_score"
    id: int | None = Field(default=None, primary_key=True)
    judge: str = Field(unique=True)
    score: float
    source: str = ""  # the file it came from
    loaded_at: float = Field(default_factory=now)


class RetrievalRun(StoreTable, table=True):
    __tablename__ = "retrieval_run"
    id: int | None = Field(default=None, primary_key=True)
    embedder: str
    k: int = 10
    settings: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    created_at: float = Field(default_factory=now)
    # 0044 (issue 6, SPEC R4): the questions' benchmark (0 = every accepted item), vector width,
    # indexed chunks and their bytes, mean query latency (embed + rank), when it finished (0 = not yet)
    benchmark_id: int = 0
    dims: int = 0
    chunks: int = 0
    index_bytes: int = 0
    latency_ms: float = 0.0
    finished_at: float = 0.0
    # 2061 (issue 20, paper Table 4): single queries timed one by one (embed + rank), their median and 95th
    latency_p50_ms: float = 0.0
    latency_p95_ms: float = 0.0


class RetrievalVariant(StoreTable, table=True):
    """A named retriever recipe (issue 20, 2060): ``embedder`` is the self-describing name its vectors are
    stored under (index/modality.py: ``minilm~transcript``); the rest says it in words for lists."""

    __tablename__ = "retrieval_variant"
    name: str = Field(primary_key=True)
    embedder: str
    base: str
    modality: str
    frames_per_chunk: int = 0
    dims: int = 0
    created_at: float = Field(default_factory=now)


class Ranking(StoreTable, table=True):
    __table_args__ = (UniqueConstraint("run_id", "item_id"),)
    id: int | None = Field(default=None, primary_key=True)
    run_id: int = Field(foreign_key="retrieval_run.id", index=True)
    item_id: int = Field(foreign_key="item.id")
    rank1: int
    rank2: int
    n_segments: int
    # 0045 (issue 6): the gold segments ranked (rank1 is segment1's), their scores, the top-k segment ids
    segment1_id: int = 0
    segment2_id: int = 0
    score1: float = 0.0
    score2: float = 0.0
    top_segments: list[int] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))


class BenchmarkProtocol(StoreTable, table=True):
    """The protocol of a benchmark's main runs (issue 22, 2200): the ``[eval]`` options a judge's main run is
    made with, fixed when the benchmark is drawn (or set by `playlisteval protocol set`). A run is main or a
    sweep by this row, never by the configuration of the shell that reads (store/protocol.py)."""

    __tablename__ = "benchmark_protocol"
    benchmark_id: int = Field(foreign_key="benchmark.id", primary_key=True, sa_column_kwargs={"autoincrement": False})
    protocol: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    source: str = "select"  # select / protocol set
    set_at: float = Field(default_factory=now)


class BenchmarkVersion(StoreTable, table=True):
    """One version of a benchmark (issue 22, 2200): `select` makes version 1, anything that changes the
    benchmark's pairs (a removal, a re-indexed video) the next. The newest version is the live one; an older
    one keeps a frozen copy of its export and leaderboard (``snapshot``), so it stays readable after the
    pairs it held were removed (select/versions.py)."""

    __tablename__ = "benchmark_version"
    __table_args__ = (UniqueConstraint("benchmark_id", "version"),)
    id: int | None = Field(default=None, primary_key=True)
    benchmark_id: int = Field(foreign_key="benchmark.id", index=True)
    version: int = 1
    content_hash: str = ""  # sha256 of the export's data/test.jsonl for this version
    pairs: int = 0
    reason: str = "select"  # select / remove / index (a changed video)
    created_at: float = Field(default_factory=now)
    snapshot: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))  # frozen when superseded


class BenchmarkSeal(StoreTable, table=True):
    """What one version of a benchmark is made of, frozen when the version is recorded (issue 41, 2311):
    its export's ``data/test.jsonl`` and ``data/annotations.jsonl`` byte for byte (zlib), its statistics and
    its domains' descriptions. `export` of the version writes these, never rows rebuilt from shared tables
    that a later draw or gate may have changed (select/sealed.py)."""

    __tablename__ = "benchmark_seal"
    __table_args__ = (UniqueConstraint("benchmark_id", "version"),)
    id: int | None = Field(default=None, primary_key=True)
    benchmark_id: int = Field(foreign_key="benchmark.id", index=True)
    version: int = 1
    content_hash: str = ""  # sha256 of the uncompressed ``rows``: the version's content hash
    rows: bytes = Field(sa_column=Column(LargeBinary, nullable=False))  # zlib of data/test.jsonl
    annotations: bytes = Field(sa_column=Column(LargeBinary, nullable=False))  # zlib of data/annotations.jsonl
    stats: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    domains: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))  # name → description
    sealed_at: float = Field(default_factory=now)
