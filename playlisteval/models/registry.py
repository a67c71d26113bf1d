"""Providers by name, imported lazily so a missing SDK only matters when its provider is used.

Providers are registered through the ``playlisteval.providers`` entry-point group (issue 42): the built-in
ones are declared in this package's pyproject.toml exactly as a plugin declares its own, ``name =
"module:Class [extra]"`` (the extra is the pip extra that brings its SDK). A provider class takes the
project's Settings (``sim`` takes its world's settings and seed) and implements ``models.base.Provider``;
its model facts go in a file (config/model_facts.py), not in code.
"""

from __future__ import annotations

import functools
import importlib
import threading
from importlib.metadata import entry_points

from playlisteval.config import Settings
from playlisteval.errors import ConfigError, ProviderNotAvailable
from playlisteval.models.base import Provider

GROUP = "playlisteval.providers"
# The built-ins as pyproject.toml declares them, used only when this package's own metadata does not declare
# them (a source tree run without installing, or installed before the group existed): plugins still count.
_BUILT_IN: dict[str, tuple[str, str, str | None]] = {
    "sim": ("playlisteval.world.sim.provider", "SimProvider", None),
    "gemini": ("playlisteval.models.providers.gemini", "GeminiProvider", "api"),
    "openai": ("playlisteval.models.providers.openai_compat", "OpenAIProvider", "api"),
    "qwen": ("playlisteval.models.providers.openai_servers", "QwenProvider", "api"),
    "vllm": ("playlisteval.models.providers.openai_servers", "VLLMProvider", "api"),
    "hf": ("playlisteval.models.providers.hf", "HFProvider", "gpu"),
    "llama": ("playlisteval.models.providers.llama", "LlamaProvider", "llm"),  # GGUF on the CPU (issue 24)
}


@functools.cache
def known() -> dict[str, tuple[str, str, str | None]]:
    """name → (module, class, pip extra that brings its SDK), from the entry-point group."""
    found: dict[str, tuple[str, str, str | None]] = {}
    for ep in entry_points(group=GROUP):
        module, _, attr = ep.value.partition(":")
        attr = attr.split("[", 1)[0].strip()
        found.setdefault(ep.name, (module.strip(), attr, ep.extras[0] if ep.extras else None))
    if not any(module.startswith("playlisteval.") for module, _, _ in found.values()):
        found = {**_BUILT_IN, **found}
    return found


def split_spec(spec: str) -> tuple[str, str]:
    """"provider/model" → (provider, model); the model part may itself contain slashes."""
    provider, sep, model = spec.partition("/")
    if not sep or not model or provider not in known():
        names = ", ".join(sorted(known()))
        raise ConfigError(f"model {spec!r} must be 'provider/model' with provider one of: {names}")
    return provider, model


def providers() -> list[str]:
    return sorted(known())


def extra_for(provider: str) -> str | None:
    """The pip extra that brings ``provider``'s SDK (None: nothing to install)."""
    return known()[provider][2]


def provider_class(name: str) -> type:
    """The class of provider ``name``, its module imported (ProviderNotAvailable when its SDK is missing)."""
    module_name, class_name, extra = known()[name]
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        hint = f" (pip install 'playlisteval[{extra}]')" if extra else ""
        raise ProviderNotAvailable(f"provider {name!r} is not available: {exc}{hint}") from exc
    cls: type = getattr(module, class_name)
    return cls


class Registry:
    """One provider instance per name per process (SDK clients are kept alive and reused)."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._providers: dict[str, Provider] = {}
        self._lock = threading.Lock()

    def register(self, name: str, provider: Provider) -> None:
        self._providers[name] = provider

    def get(self, name: str) -> Provider:
        with self._lock:
            if name not in self._providers:
                self._providers[name] = self._create(name)
            return self._providers[name]

    def _create(self, name: str) -> Provider:
        cls = provider_class(name)
        if name == "sim":
            return cls(self._settings.sim, self._settings.project.seed)
        return cls(self._settings)
