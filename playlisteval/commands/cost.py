"""`cost estimate`: what a build (or, with --judge, a judge run) is expected to cost, offline."""

from __future__ import annotations

import json
from typing import Any

import click
from rich.markup import escape
from rich.table import Table

from playlisteval.commands.judge_cost import estimate_judge_cmd, judge_estimate_wanted, judge_options
from playlisteval.commands.support import console, settings_of
from playlisteval.errors import ConfigError


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




COMMANDS = [cost_group]
