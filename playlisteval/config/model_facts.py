"""Model facts as data (issue 42): one reviewed file per vendor, read by cost, the frame rule, preflight and
`models check`.

What a model can take and what it costs — images per request, context window, reply cap, whether it
thinks, knowledge cutoff, price — are facts about the vendor's model, not settings of a project, and not
code. Each provider has one TOML file in ``playlisteval/config/model_facts/<provider>.toml``::

    [models."gemini-3-flash-preview"]
    max_images = 3600
    context_tokens = 1048576
    thinking = "always"            # "none", "optional" or "always"
    knowledge_cutoff = "2025-01"
    [models."gemini-3-flash-preview".price]   # as [prices] in playlisteval.toml
    input = 0.50
    output = 3.00

    [models."*"]                   # every other model of the provider
    max_images = 3600

A user adds or corrects a model with a file of the same shape in the project's ``model_facts/`` folder
(``<provider>.toml``); its entries replace the packaged ones model by model. A project's ``[prices]`` and
``[providers] image_limits`` still win over any file: they are the user's own word. A field left out is
unknown and shown so; nothing is guessed.
"""

from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PositiveInt, ValidationError

from playlisteval.errors import ConfigError

Thinking = Literal["none", "optional", "always"]
#: the folder of a project that may hold its own facts files
PROJECT_FOLDER = "model_facts"
WILDCARD = "*"


class ModelFacts(BaseModel):
    """What one model (or, under ``"*"``, every model of a provider) can take and costs."""

    model_config = ConfigDict(extra="forbid")

    max_images: PositiveInt | None = None
    context_tokens: PositiveInt | None = None
    max_output_tokens: PositiveInt | None = None
    thinking: Thinking | None = None
    knowledge_cutoff: str | None = Field(default=None, pattern=r"^\d{4}-\d{2}(-\d{2})?$")
    # the [prices] fields (config.Price); kept as a mapping here so this module needs no import of Settings
    price: dict[str, float | None] | None = None


@dataclass(frozen=True)
class Found:
    """The facts that apply to one ``provider/model``, and the file each came from (for `models check`)."""

    facts: ModelFacts
    source: str  # "packaged gemini.toml [gemini-3-flash-preview]" or the project file's path
    exact: bool  # an entry for this model, not the provider's "*"


def _parse(text: str, where: str) -> dict[str, ModelFacts]:
    try:
        data: dict[str, Any] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"model facts {where}: not valid TOML: {exc}") from exc
    unknown = set(data) - {"models"}
    if unknown:
        raise ConfigError(f"model facts {where}: unknown table(s) {sorted(unknown)}; only [models.\"NAME\"]")
    out: dict[str, ModelFacts] = {}
    for name, entry in (data.get("models") or {}).items():
        try:
            out[str(name)] = ModelFacts.model_validate(entry or {})
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"])
            raise ConfigError(f"model facts {where} [models.{name!r}] {field}: {first['msg']}") from exc
    return out


@functools.cache
def packaged(provider: str) -> dict[str, ModelFacts]:
    """The packaged file's entries for ``provider`` (empty when the provider has no file)."""
    path = resources.files("playlisteval.config").joinpath("model_facts", f"{provider}.toml")
    if not path.is_file():
        return {}
    return _parse(path.read_text(encoding="utf-8"), f"playlisteval/config/model_facts/{provider}.toml")


def _project(root: Path, provider: str) -> dict[str, ModelFacts]:
    path = root / PROJECT_FOLDER / f"{provider}.toml"
    if not path.is_file():
        return {}
    return _cached_project(str(path.resolve()), path.stat().st_mtime_ns)


@functools.lru_cache(maxsize=64)
def _cached_project(path: str, _mtime_ns: int) -> dict[str, ModelFacts]:
    return _parse(Path(path).read_text(encoding="utf-8"), path)


def lookup(spec: str, root: Path | None = None) -> Found | None:
    """The facts of ``provider/model``, field by field: the project's entry for the model, then the packaged
    one, then the project's ``"*"``, then the packaged ``"*"`` (a field one leaves out is taken from the
    next); None when no file says anything about it."""
    provider, _, model = spec.partition("/")
    project = _project(root, provider) if root is not None else {}
    shipped = packaged(provider)
    project_file = str(root / PROJECT_FOLDER / f"{provider}.toml") if root is not None else ""
    layers = [(project, model, project_file), (shipped, model, f"packaged {provider}.toml"),
              (project, WILDCARD, project_file), (shipped, WILDCARD, f"packaged {provider}.toml")]
    merged: dict[str, Any] = {}
    sources: list[str] = []
    for table, name, where in layers:
        entry = table.get(name)
        if entry is None:
            continue
        given = entry.model_dump(exclude_none=True)
        if any(k not in merged for k in given):
            sources.append(f"{where} [{name}]")
        merged = {**given, **merged}
    if not sources:
        return None
    exact = model in project or model in shipped
    return Found(ModelFacts.model_validate(merged), "; ".join(sources), exact)


def listed(root: Path | None = None, provider: str | None = None) -> dict[str, ModelFacts]:
    """Every ``provider/model`` with an entry of its own (packaged and the project's), for `models facts`."""
    shipped = resources.files("playlisteval.config").joinpath("model_facts")
    names = {Path(f.name).stem for f in shipped.iterdir() if f.name.endswith(".toml")}
    if root is not None and (root / PROJECT_FOLDER).is_dir():
        names |= {f.stem for f in (root / PROJECT_FOLDER).glob("*.toml")}
    out: dict[str, ModelFacts] = {}
    for name in sorted(names):
        if provider and name != provider:
            continue
        merged = {**packaged(name), **(_project(root, name) if root is not None else {})}
        out.update({f"{name}/{model}": facts for model, facts in merged.items()})
    return dict(sorted(out.items()))
