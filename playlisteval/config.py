"""Settings: a project's playlisteval.toml, then PLAYLISTEVAL_<SECTION>__<KEY> environment overrides.

API keys are never part of the settings: providers read them from the environment when called.
"""

from __future__ import annotations

import os
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from playlisteval.errors import ConfigError, ProjectNotFound

CONFIG_NAME = "playlisteval.toml"
ENV_PREFIX = "PLAYLISTEVAL_"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ProjectSettings(_Section):
    name: str = "playlisteval"
    seed: int = 20260601


class StoreSettings(_Section):
    url: str = "sqlite:///playlisteval.db"
    busy_timeout_s: float = 30


class BrokerSettings(_Section):
    url: str = "memory://"
    threads: int = 4
    lease_s: float = 900
    max_claims: int = 5
    sweep_every_s: float = 60


class MediaSettings(_Section):
    dir: str = "media"


class IndexSettings(_Section):
    chunk_s: float = 30
    min_last_chunk_s: float = 5
    segment_min_s: float = 600
    segment_max_s: float = 1800
    embedder: str = "minilm"
    embedding_dims: int = 0
    frames_per_chunk: int = 4
    near_duplicate: float = 0.95
    seed_similarity_min: float = 0.40
    seed_similarity_max: float = 0.90
    seed_min_gap_s: float = 240
    seeds_same_playlist: bool = True
    asr: str = "pocketsphinx"
    exact_search_max: int = 5000


class BuildSettings(_Section):
    attempts_per_phase: int = 6
    phase2_per_question: int = 3
    budget_usd: float = 0
    malformed_retries: int = 2
    min_chunks_per_segment: int = 2
    min_chunks_total: int = 4
    max_chunks_total: int = 30
    min_paragraphs: int = 3
    gen_fps: float = 0.5
    verify_fps: float = 0.5


class RunnerSettings(_Section):
    max_attempts: int = 6
    backoff_base_s: float = 1.0
    backoff_max_s: float = 60.0
    timeout_s: float = 300


class SimSettings(_Section):
    latency_s: float = 0.0
    transcript_answerable: float = 0.08
    parametric_answerable: float = 0.05
    bad_citation: float = 0.08
    ungrounded: float = 0.05
    narrated_degradation: float = 0.08
    wrong_severity: float = 0.08
    malformed_json: float = 0.03
    refusal: float = 0.01
    rate_limited: float = 0.02


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


class Price(_Section):
    input: float = 0.0  # USD per 1M input tokens
    output: float = 0.0
    thinking: float = 0.0
    batch_discount: float = 0.0
    gpu_hour: float = 0.0  # USD per GPU-hour, for local models


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    project: ProjectSettings = Field(default_factory=ProjectSettings)
    store: StoreSettings = Field(default_factory=StoreSettings)
    broker: BrokerSettings = Field(default_factory=BrokerSettings)
    media: MediaSettings = Field(default_factory=MediaSettings)
    index: IndexSettings = Field(default_factory=IndexSettings)
    build: BuildSettings = Field(default_factory=BuildSettings)
    models: dict[str, str] = Field(default_factory=lambda: dict(DEFAULT_MODELS))
    prices: dict[str, Price] = Field(default_factory=dict)
    runner: RunnerSettings = Field(default_factory=RunnerSettings)
    rate_limits: dict[str, dict[str, float]] = Field(default_factory=dict)
    sim: SimSettings = Field(default_factory=SimSettings)
    root: Path = Field(default=Path("."), exclude=True)

    # -- derived ---------------------------------------------------------------------------------
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

    def price_for(self, model_spec: str) -> Price:
        """Exact "provider/model" entry first, then "provider/*"; unknown models cost 0 (and say so)."""
        if model_spec in self.prices:
            return self.prices[model_spec]
        provider = model_spec.split("/", 1)[0]
        return self.prices.get(f"{provider}/*", Price())


def template_text(name: str = "playlisteval") -> str:
    text = resources.files("playlisteval").joinpath("config_template.toml").read_text()
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


def load_settings(project: Path | None = None, environ: dict[str, str] | None = None) -> Settings:
    """Read the project's settings; ``project`` defaults to the one found from the working directory."""
    root = find_project(project)
    path = root / CONFIG_NAME
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    data = _merge(data, env_overrides(environ))
    if "models" in data:
        data["models"] = {**DEFAULT_MODELS, **data["models"]}
    try:
        settings = Settings.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    settings.root = root
    return settings
