"""Settings: a project's playlisteval.toml, then PLAYLISTEVAL_<SECTION>__<KEY> environment overrides.

API keys are never part of the settings: providers read them from the environment when called.
"""

from __future__ import annotations

import difflib
import os
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeFloat,
    ValidationError,
    field_validator,
    model_validator,
)

from playlisteval.config.judges import JudgeDeclaration, check_judges, move_role_declarations
from playlisteval.config.sections_models import (
    DEFAULT_MODELS,
    AnalyticsSettings,
    BatchSettings,
    EstimateSettings,
    EvalSettings,
    HumanSettings,
    Price,
    ProviderSettings,
    RoleGeneration,
    RunnerSettings,
    SelectSettings,
    SimSettings,
)
from playlisteval.config.sections_pipeline import (
    BrokerSettings,
    BuildSettings,
    IndexSettings,
    MediaSettings,
    ProjectSettings,
    StoreSettings,
    is_redis,
)
from playlisteval.config.values import CHOICES, ENDPOINT_PROVIDERS, ModelSpec, ServerUrl, one_of
from playlisteval.errors import ConfigError, ProjectNotFound

CONFIG_NAME = "playlisteval.toml"
ENV_PREFIX = "PLAYLISTEVAL_"

__all__ = [
    "CHOICES", "CONFIG_NAME", "DEFAULT_MODELS", "ENDPOINT_PROVIDERS", "ENV_PREFIX", "AnalyticsSettings",
    "BatchSettings", "BrokerSettings", "BuildSettings", "EstimateSettings", "EvalSettings", "HumanSettings",
    "IndexSettings", "MediaSettings", "Price", "ProjectSettings", "ProviderSettings", "RoleGeneration",
    "RunnerSettings", "SelectSettings", "Settings", "SimSettings", "StoreSettings", "env_overrides",
    "find_project", "is_redis", "load_settings", "one_of", "template_text", "write_project",
]

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
