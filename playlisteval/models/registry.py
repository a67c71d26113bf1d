"""Providers by name, imported lazily so a missing SDK only matters when its provider is used."""

from __future__ import annotations

import importlib
import threading

from playlisteval.config import Settings
from playlisteval.errors import ConfigError, ProviderNotAvailable
from playlisteval.models.base import Provider

# name → (module, class, pip extra that brings its SDK)
_KNOWN: dict[str, tuple[str, str, str | None]] = {
    "sim": ("playlisteval.world.sim.provider", "SimProvider", None),
    "gemini": ("playlisteval.models.providers.gemini", "GeminiProvider", "api"),
    "openai": ("playlisteval.models.providers.openai_compat", "OpenAIProvider", "api"),
    "qwen": ("playlisteval.models.providers.openai_compat", "QwenProvider", "api"),
    "vllm": ("playlisteval.models.providers.openai_compat", "VLLMProvider", "api"),
    "hf": ("playlisteval.models.providers.hf", "HFProvider", "gpu"),
    "llama": ("playlisteval.models.providers.llama", "LlamaProvider", "llm"),  # GGUF on the CPU (issue 24)
}


def split_spec(spec: str) -> tuple[str, str]:
    """"provider/model" → (provider, model); the model part may itself contain slashes."""
    provider, sep, model = spec.partition("/")
    if not sep or not model or provider not in _KNOWN:
        known = ", ".join(sorted(_KNOWN))
        raise ConfigError(f"model {spec!r} must be 'provider/model' with provider one of: {known}")
    return provider, model


def providers() -> list[str]:
    return sorted(_KNOWN)


def extra_for(provider: str) -> str | None:
    """The pip extra that brings ``provider``'s SDK (None: nothing to install)."""
    return _KNOWN[provider][2]


def provider_class(name: str) -> type:
    """The class of provider ``name``, its module imported (ProviderNotAvailable when its SDK is missing)."""
    module_name, class_name, extra = _KNOWN[name]
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
        module_name, class_name, extra = _KNOWN[name]
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            hint = f" (pip install 'playlisteval[{extra}]')" if extra else ""
            raise ProviderNotAvailable(f"provider {name!r} is not available: {exc}{hint}") from exc
        cls = getattr(module, class_name)
        if name == "sim":
            return cls(self._settings.sim, self._settings.project.seed)
        return cls(self._settings)
