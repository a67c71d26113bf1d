"""The settings' sections of the project, its store and broker, media and indexing, and the build."""

from __future__ import annotations

from pydantic import (
    Field,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
)

from playlisteval.config.values import (
    AsrDevice,
    BrokerUrl,
    Cosine,
    GreyLevel,
    NonEmpty,
    OcrBackend,
    OcrDetector,
    Resolution,
    Section,
    Share,
    Size,
)


class ProjectSettings(Section):
    name: str = "playlisteval"
    seed: NonNegativeInt = 20260601


class StoreSettings(Section):
    url: NonEmpty = "sqlite:///playlisteval.db"
    busy_timeout_s: NonNegativeFloat = 30
    # PostgreSQL: a session silent inside a transaction this long is ended by the server and its locks freed
    # (a worker whose host lost the network mid-transaction would hold the budget's lock for hours; store/
    # engine.py); 0: never. Behind a pooler that refuses startup options (PgBouncer's transaction mode), 0
    idle_in_transaction_s: NonNegativeFloat = 300


class BrokerSettings(Section):
    url: BrokerUrl = "memory://"
    threads: PositiveInt = 4
    lease_s: PositiveFloat = 60  # renewed every lease_s / 3 while a step runs (issue 10)
    max_claims: PositiveInt = 5
    sweep_every_s: PositiveFloat = 15
    sweep_grace_s: NonNegativeFloat = 30  # a working item with no lease and no message this long gets a new message
    # start-to-close ceilings (issue 44; actors/ceilings.py): past its ceiling a build step or a gate/judge/retrieve
    # job is failed with the reason even while its worker lives and renews its lease. 0: derived — a step, one
    # model call with all its retries ([runner] timeout_s x max_attempts, at least lease_s); a job, 20 steps
    step_ceiling_s: NonNegativeFloat = 0
    job_ceiling_s: NonNegativeFloat = 0
    # on SIGTERM a worker finishes its steps within this, else gives back what it holds and exits anyway (a
    # step blocked on a frozen Redis or a slow call would keep it alive for ever; issue 25)
    stop_timeout_s: PositiveFloat = 10


def is_redis(url: str) -> bool:
    """A broker URL that names a Redis server (anything else is the in-process broker)."""
    return url.startswith(("redis://", "rediss://", "unix://"))


class MediaSettings(Section):
    dir: NonEmpty = "media"


class IndexSettings(Section):
    ordered = (("segment_min_s", "segment_max_s"), ("seed_similarity_min", "seed_similarity_max"),
               ("vl_min_pixels", "vl_max_pixels"))
    chunk_s: PositiveFloat = 30
    min_last_chunk_s: NonNegativeFloat = 5
    segment_min_s: PositiveFloat = 600
    segment_max_s: PositiveFloat = 1800
    embedder: NonEmpty = "minilm"
    embedding_dims: NonNegativeInt = 0
    frames_per_chunk: PositiveInt = 4
    near_duplicate: Cosine = 0.95
    seed_similarity_min: Cosine = 0.40
    seed_similarity_max: Cosine = 0.90
    seed_min_gap_s: NonNegativeFloat = 240
    seeds_same_playlist: bool = True
    # speech to text for videos without captions (issue 11): faster-whisper (offline default), qwen3-asr
    # (a vLLM server's OpenAI-compatible transcription endpoint) or pocketsphinx
    asr: str = "faster-whisper"
    asr_model: str = ""  # "" = the backend's default (the bundled Whisper tiny.en; Qwen/Qwen3-ASR-1.7B)
    asr_fallback: str = "pocketsphinx"  # used when the configured backend fails on a video; "" = none
    asr_vad: bool = True  # voice-activity filter: music and silence reach no recogniser
    asr_language: str = "en"  # "" lets the model detect it (multilingual models only)
    # per domain or "domain/playlist": the spoken language there ("" = detect); index/languages.py
    asr_languages: dict[str, str] = Field(default_factory=dict)
    asr_beam_size: PositiveInt = 5
    asr_compute_type: str = "int8"  # CTranslate2 compute type (int8 / float32 / float16 on a GPU)
    asr_device: AsrDevice = "cpu"  # faster-whisper: cpu / cuda / auto
    asr_threads: PositiveInt = 1  # CPU threads per faster-whisper model (index threads run one model each)
    asr_base_url: str = "http://127.0.0.1:8000/v1"  # qwen3-asr: the vLLM server (key: VLLM_API_KEY)
    asr_timeout_s: PositiveFloat = 120
    # captions are the transcript only when they pass their checks (issue 44; index/caption_checks.py): at least
    # this share of the chunks get text, and a sidecar is not older than its video by more than captions_stale_s
    # (0: not checked); otherwise embedded subtitles or speech recognition make the transcript, with a warning
    captions_min_share: Share = 0.25
    captions_stale_s: NonNegativeFloat = 3600
    search_no_match: Cosine = 0.2  # `search` warns when its best score is below this
    # up to this many vectors a corpus is searched exactly, above it through HNSW. From `python -m bench
    # retrieval` (README "Retrieval", load 4-17): at 5,000-10,000 HNSW's recall@64 was 0.91-0.94 and a
    # batch of exact searches as fast as HNSW's batch (0.3-1.1x); from 20,000 recall >= 0.996 and HNSW
    # 12-65x the best one-query exact search, 1.1-5.8x the batched one
    exact_search_max: NonNegativeInt = 20000
    # on-screen text (issue 3): OCR of the sampled frames, embedded with the transcript
    ocr: OcrBackend = "rapidocr"  # rapidocr (offline, bundled models) or none
    ocr_max_side: PositiveInt = 640  # frames are shrunk to this longest side before OCR (cost grows with area)
    # a whole frame's text lines are found on the frame shrunk to this longest side, then only lines that
    # are new or changed are recognised, at ocr_max_side (index/ocr_boxes.py); 0: detect and recognise
    # every line at ocr_max_side. Smaller is faster but misses text under ~8 px tall at this size. A line is
    # unchanged when its pixels are, or its glyphs (ocr_boxes.same_glyphs: a caption on a see-through box).
    ocr_detect_side: NonNegativeInt = 384
    # the text detector's arithmetic: int8 (an 8-bit copy made once into the user's cache, index/ocr_int8.py:
    # ~5x faster where the CPU has 8-bit dot products; a box can end a few pixels off), float (rapidocr's
    # own), or auto: int8 where the CPU has them (VNNI, AMX, Arm's dot product), float elsewhere
    ocr_detector: OcrDetector = "auto"
    # the recogniser's: int8 (its convolutions in 8 bits, the same cache; ~1.7x faster with 8-bit dot
    # products; the character error rate 2.84 % -> 3.25 % on unseen fonts), float, or auto, as ocr_detector
    ocr_recognizer: OcrDetector = "auto"
    ocr_min_score: Share = 0.5  # recognised lines below this confidence are dropped
    # a frame is not re-read when under ocr_skip_share of its 64x64 grey thumbnail differs from the last
    # frame read by more than ocr_skip_level grey levels (of 255): it reuses that frame's text
    ocr_skip_share: Share = 0.002
    ocr_skip_level: GreyLevel = 24
    # ONNX threads per OCR engine; 0: the process's cores shared among the videos it reads at once (one
    # video on 2 cores: 2 threads; two or more videos: 1 each)
    ocr_threads: NonNegativeInt = 0
    ocr_weight: NonNegativeFloat = 1.0  # weight of the on-screen text against the transcript in a chunk vector
    threads: NonNegativeInt = 2  # index worker threads in the `index` process (one video each); 0 with Redis: none
    # the longest one video's indexing may take, its start-to-close ceiling: past it the video is skipped with the
    # reason even while its worker lives (issue 44; actors/ceilings.py); the video's lease itself is
    # [broker] lease_s, renewed while it is indexed, so a dead holder's lapses within that (issue 25)
    lease_s: PositiveFloat = 3600
    wait_stall_s: PositiveFloat = 1800  # with Redis: stop waiting when no video finished for this long
    poll_s: PositiveFloat = 0.5  # how often `index` checks the store for finished videos
    vl_model: str = ""  # local folder of Qwen3-VL-Embedding weights (embedder "qwen3-vl-embedding")
    vl_max_frames: PositiveInt = 16  # [A5] at most 16 frames per chunk (4/8/16 in the paper's sweep)
    vl_min_pixels: PositiveInt = 4096  # [A5] 64x64
    vl_max_pixels: PositiveInt = 691200  # [A5] 960x720
    vl_max_tokens: PositiveInt = 32000  # [A5] input tokens per chunk
    vl_batch: PositiveInt = 4  # chunks per forward pass


class BuildSettings(Section):
    ordered = (("min_chunks_total", "max_chunks_total"),)
    attempts_per_phase: PositiveInt = 6
    phase2_per_question: PositiveInt = 3
    budget_usd: float = Field(default=0, ge=0)  # USD for the build's calls; 0 = no budget (never negative)
    # bounded builds: stop creating new items once reached (0 = no bound)
    max_items: int = Field(default=0, ge=0)  # items in the store, all states (`build --max-items`)
    target_accepted_per_domain: int = Field(default=0, ge=0)  # accepted questions wanted per domain
    max_items_per_segment: int = Field(default=0, ge=0)  # items that may draw on one segment
    malformed_retries: NonNegativeInt = 2
    min_chunks_per_segment: PositiveInt = 2
    min_chunks_total: PositiveInt = 4
    max_chunks_total: PositiveInt = 30
    min_paragraphs: PositiveInt = 3
    gen_fps: PositiveFloat = 0.5
    verify_fps: PositiveFloat = 0.5
    gen_size: Size = (1280, 720)  # [B1] 720p for the generator (fit inside, keep aspect)
    gen_media_resolution: Resolution = "medium"  # [B1] Gemini media resolution for the generator's clips
    verify_size: Size = (640, 480)  # [C3] the video verifier's frames fit inside this
    # a folder of the user's own prompt templates (relative to the project), tried before the package's
    prompts_dir: str = ""
    # [C4] model → family for the check that a verifier never checks its own family: exact
    # "provider/model" or a glob ("vllm/*Qwen*"); unmapped models fall back to the provider
    model_families: dict[str, str] = Field(default_factory=dict)


