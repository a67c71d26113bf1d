"""Before the first paid call of `build`, `select` or `eval judge`: can every model it will use run?

For each (role, "provider/model") the command will call: the provider's module imports (its SDK is
installed), its API key is in the environment (read the way the provider itself reads it: the
``key_env`` names of its class), and the model has a price — a missing price would be charged 0 and
slip past the budget (issue 9, item 4). Every problem is collected and raised as one ConfigError, so a
user fixes them all at once instead of one per run. Nothing is called and nothing is written.

Not checked here: whether the model name exists (that needs a network call, `models check` does it)
and the build's own rules (SPEC C4 families, prompt folder: ``gates/preflight.py``).
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterable

from sqlalchemy.engine import Engine

from playlisteval.config import Settings
from playlisteval.errors import ConfigError, ProviderNotAvailable
from playlisteval.models.registry import extra_for, provider_class, split_spec
from playlisteval.models.simulated import SIM, sim_outside_world

#: the roles a build calls (SPEC B–D); the difficulty gate's (F2); H (evidence clips) is the human study's
BUILD_ROLES = ("B", "C2_transcript_answer", "C2_transcript_verify", "C2_parametric_answer_a",
               "C2_parametric_verify_a", "C2_parametric_answer_b", "C2_parametric_verify_b", "C3", "D1",
               "D3_first", "D3_second", "D4")
SELECT_ROLES = ("F_first", "F_second")
JUDGE_ROLE = "G"
#: SDKs a provider imports only when it first runs a model (its module imports without them)
_LAZY_SDKS: dict[str, tuple[str, ...]] = {"hf": ("transformers", "torch"), "llama": ("llama_cpp",)}

Use = tuple[str, str]  # (role, "provider/model")


def roles(settings: Settings, names: Iterable[str]) -> list[Use]:
    return [(name, settings.model_for(name)) for name in names]


def _sdk_problem(provider: str) -> str | None:
    try:
        provider_class(provider)
    except ProviderNotAvailable as exc:
        return str(exc)
    for module in _LAZY_SDKS.get(provider, ()):
        if importlib.util.find_spec(module) is None:
            extra = extra_for(provider) or "gpu"
            return f"provider {provider!r} needs {module}, which is not installed (pip install 'playlisteval[{extra}]')"
    return None


def _key_problem(provider: str) -> str | None:
    cls = provider_class(provider)
    names: tuple[str, ...] = tuple(getattr(cls, "key_env", ()))
    if not names or getattr(cls, "key_optional", False) or any(os.environ.get(n) for n in names):
        return None
    also = f" (or {', '.join(names[1:])})" if len(names) > 1 else ""
    return f"{names[0]} is not set{also}: export it in the environment"


def _price_problem(settings: Settings, spec: str, provider: str) -> str | None:
    if provider == SIM or settings.has_price(spec):
        return None  # the sim's money is notional: nothing real is spent
    return (f"no price in [prices] — it would be charged 0 USD and never reach the budget; add "
            f'[prices."{spec}"] (input/output per 1M tokens, or gpu_hour for a local model; 0 if it is free)')


def problems(settings: Settings, uses: Iterable[Use]) -> list[str]:
    """One line per problem, "role C3 → gemini/gemini-3-flash: GEMINI_API_KEY is not set", in role order."""
    out: list[str] = []
    seen_sdk: dict[str, str | None] = {}
    for role, spec in uses:
        try:
            provider, _model = split_spec(spec)
        except ConfigError as exc:
            out.append(f"role {role} → {spec}: {exc}")
            continue
        if provider not in seen_sdk:
            seen_sdk[provider] = _sdk_problem(provider)
        found = [seen_sdk[provider]]
        if found[0] is None:
            found.append(_key_problem(provider))
        found.append(_price_problem(settings, spec, provider))
        out.extend(f"role {role} → {spec}: {p}" for p in found if p)
    return out


def require(settings: Settings, command: str, uses: Iterable[Use], engine: Engine | None = None,
            fix: str = "in [models]") -> None:
    """Raise one ConfigError listing every problem before ``command`` calls anything.

    With ``engine``, also refuse sim roles on a collection holding videos that `synth` did not make.
    """
    uses = list(uses)
    found = problems(settings, uses)
    if engine is not None:
        outside = sim_outside_world(engine, uses, fix)
        if outside:
            found.append(outside)
    if found:
        lines = "\n".join(f"  - {p}" for p in found)
        raise ConfigError(f"`{command}` cannot start, {len(found)} problem(s):\n{lines}")


def check_build(settings: Settings, engine: Engine) -> None:
    require(settings, "build", roles(settings, BUILD_ROLES), engine)


def check_select(settings: Settings, engine: Engine) -> None:
    require(settings, "select", roles(settings, SELECT_ROLES), engine)


def check_judges(settings: Settings, judges: Iterable[str], engine: Engine) -> None:
    """Model judges only: shortcut judges ("shortcut/…") call nothing."""
    uses = [(JUDGE_ROLE, j) for j in judges if not j.startswith("shortcut/")]
    require(settings, "eval judge", uses, engine, fix="(--judge provider/model, or [eval] panel)")
