"""Checks a build makes before it starts: SPEC C4 (no verifier checks its own model family) and a
user template folder that exists.

A model's family: ``[build] model_families`` first (exact "provider/model", then globs in the order
given); else, for hosted APIs, the provider (gemini, openai, qwen); for local servers (vllm, hf) the
organisation the model name starts with ("vllm/Qwen/Qwen3-VL-30B" → qwen, so a local Qwen and the
hosted Qwen API are one family); each sim model is a family of its own ("sim/verifier-b").
"""

from __future__ import annotations

import re
from fnmatch import fnmatchcase
from pathlib import Path

from playlisteval.config import Settings
from playlisteval.errors import ConfigError
from playlisteval.models.registry import split_spec

#: (verifier role, the role whose output it checks). D3's text judges are left out on purpose: they
#: are adversaries of D1 (a set is rejected when they *can* rank it), and the paper runs Gemini there.
CHECKS: tuple[tuple[str, str], ...] = (
    ("C2_transcript_verify", "C2_transcript_answer"),
    ("C2_parametric_verify_a", "C2_parametric_answer_a"),
    ("C2_parametric_verify_b", "C2_parametric_answer_b"),
    ("C3", "B"),
    ("D4", "D1"),
)
LOCAL_PROVIDERS = frozenset({"vllm", "hf", "llama"})


def family(spec: str, families: dict[str, str] | None = None) -> str:
    families = families or {}
    if spec in families:
        return families[spec].lower()
    for pattern, name in families.items():
        if fnmatchcase(spec, pattern):
            return name.lower()
    provider, model = split_spec(spec)
    if provider == "sim":
        return f"sim:{model}"
    if provider in LOCAL_PROVIDERS:
        if "/" in model:
            return model.split("/", 1)[0].lower()
        lead = re.match(r"[A-Za-z]+", model)
        return (lead.group(0) if lead else model).lower()
    return provider


def family_clashes(settings: Settings) -> list[str]:
    """One line per verifier configured with the family of the model it checks."""
    out = []
    for verifier, checked in CHECKS:
        v_spec, c_spec = settings.model_for(verifier), settings.model_for(checked)
        fam = family(v_spec, settings.build.model_families)
        if fam == family(c_spec, settings.build.model_families):
            out.append(f"{verifier} = {v_spec!r} checks {checked} = {c_spec!r}, both of family {fam!r}")
    return out


def check_families(settings: Settings) -> None:
    clashes = family_clashes(settings)
    if clashes:
        raise ConfigError(
            "a verifier must not belong to the model family whose output it checks (SPEC C4): "
            + "; ".join(clashes)
            + ". Choose another model in [models], or set [build] model_families if the families differ."
        )


def check_prompts_dir(settings: Settings) -> None:
    folder = settings.build.prompts_dir
    if folder and not (settings.root / folder).is_dir():
        raise ConfigError(f"[build] prompts_dir {folder!r} is not a folder (looked in {Path(settings.root).resolve()})")


def preflight(settings: Settings) -> None:
    """Raise ConfigError when the build must not start."""
    check_families(settings)
    check_prompts_dir(settings)
