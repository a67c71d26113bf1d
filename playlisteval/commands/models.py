"""Commands about the model layer: `models check` (is every role usable?) and `cost estimate`."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import click
from rich.markup import escape
from rich.table import Table

from playlisteval.commands.judge_cost import estimate_judge_cmd, judge_estimate_wanted, judge_options
from playlisteval.commands.support import console, err_console, settings_of
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


@click.group("cost")
def cost_group() -> None:
    """Money: what a build is expected to cost."""


@cost_group.command("estimate")
@click.option("--seeds", type=click.IntRange(min=1), default=None,
              help="Seeds to build. Default: the seeds in the store (index first, or pass a number).")
@click.option("--segment-minutes", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Mean segment length. Default: measured from the store's seeds, else the [index] range's middle.")
@click.option("--from-ledger/--no-from-ledger", default=True,
              help="Use mean tokens of calls already in the ledger where a role has some (default).")
@judge_options
@click.option("--json", "as_json", is_flag=True, help="Print the projection as JSON (README, \"--json\").")
@click.pass_context
def estimate(ctx: click.Context, seeds: int | None, segment_minutes: float | None, from_ledger: bool,
             as_json: bool, **judge: Any) -> None:
    """Project the cost of a build from the price table and the expected tokens of each role.

    Offline and free: no model is called. Calls per seed include the expected repeated attempts
    ([estimate] attempts_phase1/2) and second opinions; local models are charged per GPU-hour.
    With --judge MODEL: a judge run over the benchmark instead (pairs × (1 + --swap) × --samples calls,
    each with the run's evidence), per pair and in total (issue 42; commands/judge_cost.py).
    """
    if judge_estimate_wanted(judge):
        return estimate_judge_cmd(ctx, from_ledger=from_ledger, as_json=as_json, **judge)
    from playlisteval.models.batch.estimate import mode_costs, totals
    from playlisteval.models.estimate import project_cost, store_facts
    from playlisteval.store import open_store

    settings = settings_of(ctx)
    engine = open_store(settings)
    stored_seeds, stored_segment_s = store_facts(engine)
    count = seeds if seeds is not None else stored_seeds
    if count <= 0:
        from playlisteval.commands.build_hints import no_seeds_reason

        raise ConfigError(f"{no_seeds_reason(settings)}; or pass --seeds N to project a build of N seeds")
    segment_s = segment_minutes * 60 if segment_minutes is not None else stored_segment_s
    projection = project_cost(settings, count, segment_s, engine if from_ledger else None)
    costs = mode_costs(settings, projection)
    if as_json:
        online, batch, cached = totals(costs)
        click.echo(json.dumps({
            "seeds": count, "segment_s": projection.segment_s,
            "roles": [{"role": c.role.role, "model": c.role.spec, "calls_per_seed": c.role.calls_per_seed,
                       "input_tokens": c.role.usage.input_tokens, "output_tokens": c.role.usage.output_tokens,
                       "thinking_tokens": c.role.usage.thinking_tokens, "usd_per_call": c.role.usd_per_call,
                       "measured": c.role.measured, "batched": c.batched,
                       "usd": {"online": c.online * c.role.calls_per_seed * count,
                               "batch": c.batch * c.role.calls_per_seed * count,
                               "batch_cached": c.cached * c.role.calls_per_seed * count}} for c in costs],
            "per_seed_usd": {"online": online, "batch": batch, "batch_cached": cached},
            "total_usd": {"online": online * count, "batch": batch * count, "batch_cached": cached * count}}))
        return
    table = Table(title=f"Projected build cost: {count} seed(s), segments of {projection.segment_s / 60:.1f} min")
    for column in ("role", "model", "calls/seed", "in tok", "out tok", "think tok", "USD/call", "online",
                   "batch", "batch+cache"):
        table.add_column(column, justify="left" if column in ("role", "model") else "right")
    for c in costs:
        r = c.role
        unpriced = not any(getattr(settings.price_for(r.spec), f)
                           for f in ("input", "output", "thinking", "gpu_hour", "cpu_hour"))
        usd = "no price" if unpriced else f"{r.usd_per_call:.4f}"
        table.add_row(r.role + (" *" if r.measured else ""), escape(r.spec), f"{r.calls_per_seed:.2f}",
                      f"{r.usage.input_tokens:,}", f"{r.usage.output_tokens:,}", f"{r.usage.thinking_tokens:,}",
                      usd, f"{c.online * r.calls_per_seed * count:.2f}",
                      f"{c.batch * r.calls_per_seed * count:.2f}" + ("" if c.batched else " †"),
                      f"{c.cached * r.calls_per_seed * count:.2f}")
    console.print(table)
    if any(r.measured for r in projection.roles):
        console.print("* tokens measured from the ledger's calls of that role and model")
    if not all(c.batched for c in costs):
        console.print("† no batch price for this model (local, or no batch API): the online price")
    online, batch, cached = totals(costs)
    console.print(f"per seed: [bold]{online:.4f} USD[/] online, {batch:.4f} by batch "
                  f"({_ratio(batch, online)}), {cached:.4f} by batch with context caching ({_ratio(cached, online)})")
    console.print(f"total: [bold]{online * count:.2f} USD[/] online, {batch * count:.2f} by batch, "
                  f"{cached * count:.2f} by batch with context caching")


def _ratio(part: float, whole: float) -> str:
    return f"{part / whole:.2f}× online" if whole > 0 else "-"


# -- batches (issue 15) ----------------------------------------------------------------------------------
T = TypeVar("T")


def batch_wanted(settings: Settings, roles: tuple[str, ...], flag: bool | None) -> bool:
    """`--batch` / `--no-batch` when given, else whether [batch] roles lists any of ``roles``."""
    return flag if flag is not None else any(r in settings.batch.roles for r in roles)


def run_maybe_batched(settings: Settings, roles: tuple[str, ...], use_batch: bool,
                      work: Callable[[Any], T]) -> tuple[T, Any]:
    """``work(runner)`` online (runner None: its own), or through batches: then the batches' report."""
    if not use_batch:
        return work(None), None
    from playlisteval.models.batch.run import run_batched
    from playlisteval.store import open_store

    result, report, waiting = run_batched(settings, open_store(settings), roles, work)
    report.waiting = waiting
    return result, report


def print_batch_report(report: Any, *, stderr: bool = False) -> None:
    if report is None:
        return
    out = err_console if stderr else console
    out.print(f"batches: {report.sent} sent, {report.stored} answer(s) stored at the batch price"
              + (f", {report.released} asked online instead (failed or expired in a batch)" if report.released else ""),
              highlight=False)
    if report.stopped:
        out.print(f"[yellow]batches stopped:[/] the {report.stopped} is spent; the queued requests wait in the store",
                  highlight=False)
    if report.waiting:
        out.print(f"[yellow]{report.waiting} request(s) still in batches:[/] run the same command again later "
                  "(`playlisteval batches` shows them); nothing is sent twice", highlight=False)


@click.command("batches")
@click.option("--collect", is_flag=True, help="Also send what is queued and store every answer the open batches "
                                              "have, waiting for them up to --wait seconds.")
@click.option("--wait", "wait_s", type=click.FloatRange(min=0), default=0.0,
              help="With --collect: seconds to wait for batches still running (default 0: ask once).")
@click.option("--json", "as_json", is_flag=True, help="Print the open batches as JSON lines.")
@click.pass_context
def batches_cmd(ctx: click.Context, collect: bool, wait_s: float, as_json: bool) -> None:
    """The open batches: provider, state, requests answered, age and expected cost (at the batch price).

    Batches are written to the store before they are sent and found again by their marker, so a
    crash never sends a request twice. Answers collected here land in the response cache: the next
    `eval judge --batch` or `select --batch` uses them at once.
    """
    from playlisteval.models.batch.listing import open_batches
    from playlisteval.models.batch.run import drive
    from playlisteval.store import open_store

    settings = settings_of(ctx)
    engine = open_store(settings)
    if collect:
        print_batch_report(drive(settings, engine, wait_s=wait_s), stderr=as_json)
    rows = open_batches(engine)
    if as_json:
        for b in rows:
            click.echo(json.dumps(vars(b)))
        return
    if not rows:
        console.print("no open batches")
        return
    table = Table(title="Open batches")
    for column in ("batch", "model", "state", "answered", "age", "expected USD", "remote id", "last error"):
        table.add_column(column, overflow="fold")
    for b in rows:
        table.add_row(str(b.id or "-"), escape(b.spec), b.state, f"{b.answered}/{b.requests}",
                      f"{b.age_s / 3600:.1f} h", f"{b.expected_usd:.4f}", escape(b.remote_id), escape(b.error[:80]))
    console.print(table)


COMMANDS = [models_group, cost_group, batches_cmd]
