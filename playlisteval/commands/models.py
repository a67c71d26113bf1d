"""Commands about the model layer: `models check` (is every role usable?) and `models facts`
(`cost estimate` is in commands/cost.py, `batches` in commands/batches.py)."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import click
from rich.markup import escape
from rich.table import Table

from playlisteval.commands.support import console, settings_of
from playlisteval.config import Settings
from playlisteval.errors import ConfigError, PlaylistEvalError


@dataclass(frozen=True)
class _Needs:
    sdk: str | None  # importable module the provider needs
    keys: tuple[str, ...]  # environment variables that may hold its key (any one)
    key_optional: bool = False


_NEEDS = {
    "sim": _Needs(None, (), True),
    "gemini": _Needs("google.genai", ("GEMINI_API_KEY", "GOOGLE_API_KEY")),
    "openai": _Needs("openai", ("OPENAI_API_KEY",)),
    "qwen": _Needs("openai", ("DASHSCOPE_API_KEY",)),
    "vllm": _Needs("openai", ("VLLM_API_KEY",), True),
    "hf": _Needs("transformers", (), True),
    "llama": _Needs("llama_cpp", (), True),  # GGUF on the CPU, in-process (issue 24)
}


def price_text(settings: Settings, spec: str) -> str:
    """What ``spec`` costs per [prices], in words: tokens, GPU-hours, CPU-hours; "none" when unpriced."""
    if spec.startswith("sim/"):
        return "notional (sim)"
    if not settings.has_price(spec):
        return "none in [prices] nor in its model facts file"
    p = settings.price_for(spec)
    parts = [f"${p.input:g}/1M in, ${p.output:g}/1M out" if p.input or p.output else "",
             f"${p.gpu_hour:g}/GPU-hour" if p.gpu_hour else "", f"${p.cpu_hour:g}/CPU-hour" if p.cpu_hour else ""]
    return ", ".join(x for x in parts if x) or "free (0)"


def facts_text(settings: Settings, spec: str) -> str:
    """What the model's facts file says (config/model_facts.py), every unknown field named as such."""
    from playlisteval.config.model_facts import lookup

    found = lookup(spec, settings.root)
    if found is None:
        return "no model facts file entry (images per request, window, cutoff unknown)"
    f = found.facts

    def known(value: int | None, shown: str) -> str:
        return shown.format(value) if value is not None else "unknown"

    return (f"images/request {known(f.max_images, '≤ {}')}, "
            f"window {known(f.context_tokens, '{:,} tokens')}, "
            f"reply {known(f.max_output_tokens, '≤ {:,} tokens')}, "
            f"thinking {f.thinking or 'unknown'}, cutoff {f.knowledge_cutoff or 'unknown'} — {found.source}")


def _sdk_ok(module: str | None) -> bool:
    if module is None:
        return True
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _key_state(needs: _Needs) -> tuple[bool, str]:
    """Whether a key is present, and which variable holds it (never its value)."""
    for name in needs.keys:
        if os.environ.get(name):
            return True, f"{name} set"
    if needs.key_optional:
        return True, "not needed" if not needs.keys else f"{needs.keys[0]} not set (optional)"
    return False, f"{' or '.join(needs.keys)} missing"


def _endpoint(settings: Settings, provider: str) -> str:
    p = settings.providers
    return {"gemini": p.gemini_base_url or "generativelanguage.googleapis.com", "openai": p.openai_base_url
            or "api.openai.com", "qwen": p.qwen_base_url, "vllm": p.vllm_base_url, "hf": "local", "sim": "offline",
            "llama": "local CPU"}.get(provider, "")


def _probe(settings: Settings, provider: str, model: str) -> tuple[bool, str]:
    """Reach the provider's endpoint (the provider's own ``check``); never raises."""
    from playlisteval.models.registry import Registry

    if provider == "sim":
        return True, "simulated world (no endpoint)"
    try:
        instance = Registry(settings).get(provider)
        check = getattr(instance, "check", None)
        if check is None:
            return True, "no check for this provider"
        return True, str(check(model))
    except PlaylistEvalError as exc:
        return False, str(exc)[:200]
    except Exception as exc:  # an SDK error we did not map: report it, do not crash the check
        return False, f"{type(exc).__name__}: {str(exc)[:200]}"


@click.group("models")
def models_group() -> None:
    """Inspect the models each role uses."""


@models_group.command("check")
@click.option("--network/--no-network", default=True,
              help="Also reach each endpoint with its key (default). --no-network checks SDKs and keys only.")
@click.option("--role", "roles", multiple=True, help="Check only this role (repeatable), e.g. --role B --role C3.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per role instead of a table.")
@click.pass_context
def check(ctx: click.Context, network: bool, roles: tuple[str, ...], as_json: bool) -> None:
    """For each role: its "provider/model", whether the provider's SDK is installed, whether its API key
    is in the environment, and (unless --no-network) whether its endpoint answers with that key.

    Keys are only ever named, never shown. Exits with status 1 when any checked role is not usable.
    """
    settings = settings_of(ctx)
    unknown = set(roles) - set(settings.models)
    if unknown:
        raise ConfigError(f"no such role(s) in [models]: {', '.join(sorted(unknown))}")
    chosen = {r: s for r, s in settings.models.items() if not roles or r in roles}
    rows = []
    with console.status("checking models…") as status:
        probes: dict[str, tuple[bool, str]] = {}
        for role, spec in sorted(chosen.items()):
            rows.append(_check_role(settings, role, spec, network, probes, status.update))
        servers = [_check_endpoint(settings, spec, url, network, status.update)
                   for spec, url in sorted(settings.endpoints.items()) if not roles or spec in chosen.values()]
    failures = [r for r in rows if not r["usable"]]
    if as_json:
        for row in rows:
            click.echo(json.dumps(row))
        for row in servers:
            click.echo(json.dumps(row))
    else:
        table = Table(title="Models per role")
        for column in ("role", "model", "SDK", "key", "endpoint"):
            table.add_column(column, overflow="fold")
        for r in rows:
            # cells are plain text: "[api]" in an install hint is not markup
            table.add_row(*(escape(str(r[k])) for k in ("role", "model", "sdk", "key", "endpoint")),
                          style=None if r["usable"] else "red")
        console.print(table)
        priced = {r["model"]: r["price"] for r in rows if r["provider"] != "sim"}
        for spec, price in sorted(priced.items()):  # what each real model costs (issue 24: local ones too)
            console.print(f"price of {spec}: {price}", soft_wrap=True, highlight=False, markup=False)
            console.print(f"facts of {spec}: {facts_text(settings, spec)}", soft_wrap=True, highlight=False,
                          markup=False)
        for r in failures:  # in full, unwrapped: these lines are what the user acts on
            console.print(f"{r['role']} ({r['model']}): {r['problem']}", soft_wrap=True, highlight=False,
                          markup=False)
        if failures:
            console.print(f"[red]{len(failures)} role(s) not usable[/]")
        else:
            console.print("every role is usable" + ("" if network else " (endpoints not tried: --no-network)"))
        for e in servers:  # issue 42: each [endpoints] server, and whether it serves the model's name
            console.print(f"[endpoints] {e['endpoint']} at {e['server']}: {e['problem'] or e['state']}",
                          soft_wrap=True, highlight=False, markup=False, style=None if e["usable"] else "red")
    if failures or not all(e["usable"] for e in servers):
        sys.exit(1)


@models_group.command("facts")
@click.argument("provider", required=False)
@click.option("--json", "as_json", is_flag=True, help='Print {"provider/model": {facts…}} as JSON.')
@click.pass_context
def facts(ctx: click.Context, provider: str | None, as_json: bool) -> None:
    """List the model facts files' entries (of PROVIDER, or all): images per request, context window,
    reply cap, thinking, knowledge cutoff, price.

    Packaged files are playlisteval/config/model_facts/<provider>.toml; a project adds or corrects a model
    with the same shape in its own model_facts/<provider>.toml. [prices] and [providers] image_limits in
    playlisteval.toml override both. "*" is every other model of the provider."""
    from playlisteval.config.model_facts import listed

    settings = settings_of(ctx)
    entries = listed(settings.root, provider)
    if as_json:
        click.echo(json.dumps({spec: f.model_dump(exclude_none=True) for spec, f in entries.items()}))
        return
    if not entries:
        raise ConfigError(f"no model facts for provider {provider!r}" if provider else "no model facts files")
    table = Table(title="Model facts (unknown: not in the file)")
    for column in ("model", "images", "window", "reply", "thinking", "cutoff", "$/1M in, out"):
        table.add_column(column, overflow="fold")
    for spec, f in entries.items():
        price = f"{f.price.get('input') or 0:g}, {f.price.get('output') or 0:g}" if f.price else "—"
        table.add_row(escape(spec), *(str(v) if v is not None else "unknown" for v in (
            f.max_images, f.context_tokens, f.max_output_tokens, f.thinking, f.knowledge_cutoff)), price)
    console.print(table)


def _check_endpoint(settings: Settings, spec: str, url: str, network: bool,
                    say: Callable[[str], None]) -> dict[str, Any]:
    """Ask the [endpoints] server of ``spec`` which models it serves (GET /v1/models through the openai
    SDK: free) and whether the model's name is one of them. Never raises."""
    from playlisteval.models.registry import Registry, split_spec

    provider, model = split_spec(spec)
    row: dict[str, Any] = {"endpoint": spec, "server": url, "reachable": None, "served": [], "usable": True,
                           "state": "not tried (--no-network)", "problem": ""}
    if not network:
        return row
    say(f"asking {url} which models it serves…")
    try:
        import openai

        client = Registry(settings).get(provider).client(model)  # type: ignore[attr-defined]
        served = [m.id for m in client.with_options(timeout=settings.providers.check_timeout_s,
                                                    max_retries=0).models.list()]
    except ImportError as exc:
        return {**row, "usable": False, "problem": f"{exc} (pip install 'playlisteval[api]')"}
    except PlaylistEvalError as exc:  # no key for a provider that needs one
        return {**row, "usable": False, "problem": str(exc)[:200]}
    except openai.OpenAIError as exc:
        from playlisteval.models.providers.openai_compat import map_error

        return {**row, "reachable": False, "usable": False,
                "problem": f"cannot reach the server: {map_error(exc, url)}"[:300]}
    row.update(reachable=True, served=served)
    if model in served:
        return {**row, "state": f"serves {model}"}
    names = ", ".join(served[:5]) + (" …" if len(served) > 5 else "") if served else "no model"
    return {**row, "usable": False, "problem": f"serves {names}, not {model!r}: the name after '{provider}/' "
            "must be the server's model name (vLLM --served-model-name)"}


def _check_role(settings: Settings, role: str, spec: str, network: bool, probes: dict[str, tuple[bool, str]],
                say: Callable[[str], None]) -> dict[str, Any]:
    from playlisteval.models.registry import extra_for, split_spec

    provider, model = split_spec(spec)
    needs = _NEEDS.get(provider, _Needs(None, ()))
    sdk_ok = _sdk_ok(needs.sdk)
    sdk = ("built in" if needs.sdk is None else needs.sdk) if sdk_ok else (
        f"{needs.sdk} missing (pip install 'playlisteval[{extra_for(provider)}]')")
    key_ok, key = _key_state(needs)
    reach_ok, endpoint = True, settings.endpoint_for(spec) or _endpoint(settings, provider)
    if network and sdk_ok and key_ok:
        if spec not in probes:
            say(f"reaching {provider} for {model}…")
            probes[spec] = _probe(settings, provider, model)
        reach_ok, endpoint = probes[spec]
    elif network:
        endpoint = "not tried"
    problem = sdk if not sdk_ok else key if not key_ok else endpoint if not reach_ok else ""
    return {"role": role, "model": spec, "provider": provider, "sdk": sdk, "sdk_ok": sdk_ok, "key": key,
            "key_ok": key_ok, "endpoint": endpoint, "reachable": reach_ok if network else None,
            "usable": sdk_ok and key_ok and reach_ok, "problem": problem, "price": price_text(settings, spec),
            "facts": facts_text(settings, spec)}


COMMANDS = [models_group]
