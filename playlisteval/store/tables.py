"""The store's tables (DESIGN "Data model"). The store is the source of truth; the queue carries ids.

JSON columns hold model outputs and records exactly as produced, so they stay auditable.
Vectors are float32 blobs with the hash of the content they were computed from.
"""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import JSON, BigInteger, Column, Index, LargeBinary, UniqueConstraint
from sqlmodel import Field, SQLModel
from sqlmodel.main import SQLModelConfig

from playlisteval.store.media_paths import MediaPath


def now() -> float:
    return time.time()


class StoreTable(SQLModel):
    """Every table's base. pydantic builds a model's validator when the class is made, unless told to wait
    for its first use: for 44 tables that the store writes and reads through SQLAlchemy (rarely validated)
    that was ~90 ms of every command's start-up (issue 26: `status` at 100k items was start-up bound)."""

    model_config = SQLModelConfig(defer_build=True)


class SchemaMigration(StoreTable, table=True):
    __tablename__ = "schema_migration"
    name: str = Field(primary_key=True)
    applied_at: float = Field(default_factory=now)


class KeyValue(StoreTable, table=True):
    """Small shared settings every worker must see (the build budget, the pause flag)."""

    __tablename__ = "kv"
    key: str = Field(primary_key=True)
    value: str


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


class Item(StoreTable, table=True):
    id: int | None = Field(default=None, primary_key=True)
    seed_id: int = Field(foreign_key="seed.id", unique=True)
    state: str = Field(default="pending", index=True)
    phase1_attempts: int = 0
    phase2_attempts: int = 0
    phase2_on_question: int = 0
    failed_from: str | None = None
    current_qa_id: int | None = None
    current_set_id: int | None = None
    lease_owner: str | None = None
    lease_expires: float | None = Field(default=None, index=True)
    # 0500 (issue 10): when the holder last renewed its lease (its heartbeat): a stale one is a dead holder's
    lease_renewed_at: float = 0.0
    claims: int = 0  # claims since the last committed step: a worker-killing item is poison
    version: int = 0
    error: str | None = None
    created_at: float = Field(default_factory=now)
    updated_at: float = Field(default_factory=now)


class ItemEvent(StoreTable, table=True):
    """One row per committed step. (item_id, version) is unique: a step is never committed twice."""

    __tablename__ = "item_event"
    __table_args__ = (UniqueConstraint("item_id", "version"),)
    id: int | None = Field(default=None, primary_key=True)
    item_id: int = Field(foreign_key="item.id", index=True)
    version: int
    from_state: str
    event: str
    to_state: str
    worker: str | None = None
    at: float = Field(default_factory=now)


class QA(StoreTable, table=True):
    __table_args__ = (UniqueConstraint("item_id", "attempt"),)
    id: int | None = Field(default=None, primary_key=True)
    item_id: int = Field(foreign_key="item.id", index=True)
    attempt: int  # Phase I attempt number for the seed (1-based)
    question: str = ""
    answer: str = ""
    keyword: str = ""
    payload: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    template: str = ""
    template_hash: str = ""
    malformed: bool = False


class DistractorSet(StoreTable, table=True):
    __tablename__ = "distractor_set"
    __table_args__ = (UniqueConstraint("item_id", "attempt"),)
    id: int | None = Field(default=None, primary_key=True)
    item_id: int = Field(foreign_key="item.id", index=True)
    qa_id: int = Field(foreign_key="qa.id")
    attempt: int  # Phase II attempt number for the seed (1-based)
    payload: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    template: str = ""
    template_hash: str = ""
    malformed: bool = False


class Answer(StoreTable, table=True):
    __table_args__ = (UniqueConstraint("set_id", "rating"),)
    id: int | None = Field(default=None, primary_key=True)
    set_id: int = Field(foreign_key="distractor_set.id", index=True)
    rating: int  # 5 = gold … 1
    text: str
    degraded_weight: float = 0.0
    record: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))


class GateResult(StoreTable, table=True):
    __tablename__ = "gate_result"
    id: int | None = Field(default=None, primary_key=True)
    item_id: int = Field(foreign_key="item.id", index=True)
    phase: int
    attempt: int
    gate: str
    verdict: str  # pass / reject
    reason: str = ""
    details: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    rejected_output: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    call_ids: list[int] | None = Field(default=None, sa_column=Column(JSON))
    at: float = Field(default_factory=now)


class ModelCall(StoreTable, table=True):
    """The ledger: one row per model call, cache hits (0 USD) and failures included (SPEC K1)."""

    __tablename__ = "model_call"
    id: int | None = Field(default=None, primary_key=True)
    request_hash: str = Field(index=True)
    role: str = Field(index=True)
    provider: str
    model: str
    item_id: int | None = Field(default=None, index=True)
    run_id: int | None = None
    purpose: str = "build"  # build / eval / index
    status: str = Field(default="in_flight", index=True)  # in_flight / ok / cached / malformed / error / interrupted
    cache_hit: bool = False
    input_tokens: int = 0
    output_tokens: int = 0
    thinking_tokens: int = 0
    gpu_seconds: float = 0.0
    estimated_usd: float = 0.0
    usd: float = 0.0
    latency_s: float = 0.0
    # 0801 (issue 15): input tokens read from a provider's cache; the batch that answered the call (0: online)
    cached_input_tokens: int = 0
    batch_id: int = 0
    error: str | None = None
    worker: str | None = None
    created_at: float = Field(default_factory=now)
    finished_at: float | None = None


class ResponseCache(StoreTable, table=True):
    __tablename__ = "response_cache"
    request_hash: str = Field(primary_key=True)
    provider: str
    model: str
    response: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False))
    created_at: float = Field(default_factory=now)


class ModelPrompt(StoreTable, table=True):
    """What a request asked, once per request hash: its text parts, its media named (`show ITEM`)."""

    __tablename__ = "model_prompt"
    request_hash: str = Field(primary_key=True)
    role: str = ""
    text: str = ""
    created_at: float = Field(default_factory=now)


class RemoteFile(StoreTable, table=True):
    """Uploaded media (e.g. Gemini Files API) reused while it is valid."""

    __tablename__ = "remote_file"
    __table_args__ = (UniqueConstraint("provider", "fingerprint"),)
    id: int | None = Field(default=None, primary_key=True)
    provider: str
    fingerprint: str
    remote_name: str
    uri: str = ""
    expires_at: float | None = None


class Pair(StoreTable, table=True):
    __table_args__ = (UniqueConstraint("item_id", "better_rating", "worse_rating"),)
    id: int | None = Field(default=None, primary_key=True)
    item_id: int = Field(foreign_key="item.id", index=True)
    set_id: int = Field(foreign_key="distractor_set.id")
    better_rating: int
    worse_rating: int
    gap: int
    difficulty: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    kept: bool | None = None


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


class HumanStudy(StoreTable, table=True):
    """A human study of one benchmark (SPEC H1): its seed and the settings it was planned with."""

    __tablename__ = "human_study"
    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(unique=True)
    benchmark_id: int = Field(foreign_key="benchmark.id", index=True)
    seed: int = 0
    settings: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    created_at: float = Field(default_factory=now)


class HumanTask(StoreTable, table=True):
    __tablename__ = "human_task"
    id: int | None = Field(default=None, primary_key=True)
    pair_id: int = Field(foreign_key="pair.id", index=True)
    intended_slot: str = "A"
    attention_check: bool = False
    clips: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    # 0701 (issue 12): the study, a content key for seeded draws, and the evidence clips' grounding
    # (SPEC H2): pending / ok / fault, with the fault's reason, the attempts and the last ledger row
    study_id: int = Field(default=0, index=True)
    task_key: str = ""
    evidence_status: str = "pending"
    evidence_reason: str = ""
    evidence_attempts: int = 0
    evidence_call_id: int = 0
    grounding: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))


class HumanRating(StoreTable, table=True):
    __tablename__ = "human_rating"
    # a rating is final: one per annotator and task (0703 adds the index to older stores)
    __table_args__ = (Index("uq_human_rating_task_annotator", "task_id", "annotator", unique=True),)
    id: int | None = Field(default=None, primary_key=True)
    task_id: int = Field(foreign_key="human_task.id", index=True)
    annotator: str
    choice: str
    reason: str = ""
    # 0702 (issue 12): where it came from (app / import) and when
    source: str = "app"
    created_at: float = 0.0


class HumanAnnotator(StoreTable, table=True):
    """An invited annotator; only a hash of their link token is kept."""

    __tablename__ = "human_annotator"
    __table_args__ = (UniqueConstraint("study_id", "name"),)
    id: int | None = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="human_study.id", index=True)
    name: str
    token_hash: str = Field(unique=True)
    created_at: float = Field(default_factory=now)


class HumanClaim(StoreTable, table=True):
    """A task shown to an annotator, held for them a while so that no more than N people rate a pair."""

    __tablename__ = "human_claim"
    __table_args__ = (UniqueConstraint("task_id", "annotator_id"),)
    id: int | None = Field(default=None, primary_key=True)
    task_id: int = Field(foreign_key="human_task.id", index=True)
    annotator_id: int = Field(foreign_key="human_annotator.id", index=True)
    claimed_at: float = Field(default_factory=now)


class ModelBatch(StoreTable, table=True):
    """One provider batch (issue 15), written before it is sent: its ``marker`` is the client-side
    idempotency key the provider stores with it (OpenAI metadata, Gemini display name), so a batch whose
    sending was interrupted is looked up by marker and adopted, never sent twice.

    state: pending (written, maybe sent) → submitted (remote id known) → completed / failed / expired /
    cancelled (its requests all settled)."""

    __tablename__ = "model_batch"
    id: int | None = Field(default=None, primary_key=True)
    marker: str = Field(unique=True)
    provider: str
    model: str
    state: str = Field(default="pending", index=True)
    remote_id: str = ""
    input_ref: str = ""  # the uploaded input file (OpenAI), reused if sending is retried
    requests: int = 0
    estimated_usd: float = 0.0
    polls: int = 0
    next_poll_at: float = 0.0
    error: str = ""
    created_at: float = Field(default_factory=now)
    submitted_at: float | None = None
    finished_at: float | None = None


class ContextCache(StoreTable, table=True):
    """A provider's context cache (issue 15): media sent once and read by later calls, until it expires."""

    __tablename__ = "context_cache"
    __table_args__ = (UniqueConstraint("provider", "model", "fingerprint"),)
    id: int | None = Field(default=None, primary_key=True)
    provider: str
    model: str
    fingerprint: str  # of the cached parts (media files by path, size and modification time)
    name: str  # the provider's name for it (Gemini: cachedContents/…)
    tokens: int = 0
    expires_at: float = 0.0
    created_at: float = Field(default_factory=now)


class ModelBatchRequest(StoreTable, table=True):
    """A request waiting for, or answered by, a batch. ``live_hash`` is the request hash while the request
    is queued or in a batch and NULL after, and it is unique: a request is in at most one live batch.

    state: queued → submitted → done (answer in the response cache and the ledger) / failed / expired
    (asked online by whoever needs it next)."""

    __tablename__ = "model_batch_request"
    id: int | None = Field(default=None, primary_key=True)
    request_hash: str = Field(index=True)
    live_hash: str | None = Field(default=None, unique=True)
    spec: str
    role: str = ""
    purpose: str = "build"
    request: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False))
    batch_id: int = Field(default=0, index=True)
    state: str = Field(default="queued", index=True)
    call_id: int = 0  # the ledger row reserved when the batch was written
    error: str = ""
    created_at: float = Field(default_factory=now)
    finished_at: float | None = None
    checked: bool = False  # 0802: the caller checks the reply's meaning (``validate``): its answer waits as try 0


class WorkJob(StoreTable, table=True):
    """One question's share of `select` or `eval judge` work, or a block of questions of `eval retrieve`,
    done by an actor (issue 10): ``kind`` "gate" (run_id 0), "judge" or "retrieve". Unique per (kind, run,
    item), so sending it again is harmless; a worker claims it with a lease (renewed while it runs) and
    marks it done or failed. ``pass_id`` names the command's pass (its shared stop flag); ``payload``
    carries what a worker needs beyond ids (a run's options, a block's questions).

    state: queued → running → done / failed (queued again by the next pass)."""

    __tablename__ = "work_job"
    __table_args__ = (UniqueConstraint("kind", "run_id", "item_id"),)
    id: int | None = Field(default=None, primary_key=True)
    kind: str = Field(index=True)
    run_id: int = 0
    item_id: int
    pass_id: str = ""
    payload: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    result: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))  # the job's counts
    state: str = Field(default="queued", index=True)
    worker: str = ""  # the process that did it last (host:pid)
    error: str = ""
    lease_until: float = 0.0
    updated_at: float = Field(default_factory=now)


class SpendTotal(StoreTable, table=True):
    """The ledger's money per purpose, kept by triggers on ``model_call`` (store/spend_totals.py, 0540) in
    the transaction of every ledger change: a budget check reads one row instead of summing the ledger.
    The columns are ``models.budget.Spend``'s: paid, reserved (in flight), interrupted (cut short, cost unknown)."""

    __tablename__ = "spend_total"
    purpose: str = Field(primary_key=True)
    paid: float = 0.0
    reserved: float = 0.0
    interrupted: float = 0.0


class ItemOutbox(StoreTable, table=True):
    """An item's next message, pending (issue 10, 0530): written in the transaction of the commit that moved
    the item into a working state, deleted once the message is sent (store/outbox.py). A row older than the
    sweepers' grace is a message the broker never got — Redis down, the worker killed between commit and
    send — and a sweeper sends it. One row per item: an item waits for one step at a time."""

    __tablename__ = "item_outbox"
    item_id: int = Field(primary_key=True, sa_column_kwargs={"autoincrement": False})
    state: str  # the working state the message is for: its step's actor
    created_at: float = Field(default_factory=now, index=True)  # when written, or last taken by a sweeper


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


class MediaRoot(StoreTable, table=True):
    """A named folder outside the project that media paths are stored under ("@NAME/…", issue 41): moving
    the media is re-pointing the root (`playlisteval media-root set NAME FOLDER`), not rewriting every path."""

    __tablename__ = "media_root"
    name: str = Field(primary_key=True)
    path: str  # absolute, as set on this store's machine
    set_at: float = Field(default_factory=now)


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
