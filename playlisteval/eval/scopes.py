"""The scopes a judge run may search: the fixed ones (a whole domain, the two gold segments) and the frozen
corpora configured under ``[eval] scopes``. Kept apart from corpus.py, which reads the store: checking a
run's options (eval/options.py, and the report's main-run test through it) must not load the store's
table classes (~0.25 CPU-s of a cold report, issue 43)."""

from __future__ import annotations

from playlisteval.config import Settings
from playlisteval.errors import ConfigError

FIXED_SCOPES = ("domain", "oracle")


def scope_names(settings: Settings) -> list[str]:
    return [*FIXED_SCOPES, *settings.eval.scopes]


def check_scope(settings: Settings, scope: str) -> str:
    if scope not in scope_names(settings):
        raise ConfigError(f"unknown scope {scope!r}; known: {', '.join(scope_names(settings))} "
                          "(add frozen corpora under [eval] scopes)")
    return scope
