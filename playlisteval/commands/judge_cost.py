"""`cost estimate --judge MODEL …` (issue 42, item 6): a judge run priced before it starts.

The options here are added to `cost estimate` (commands/cost.py); with ``--judge`` it prints the judge
step's estimate (eval/judge_estimate.py) instead of the build's. The run's options not given default
to the benchmark's stored protocol, else [eval], as `eval judge` does.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

import click
from rich.markup import escape
from rich.table import Table

from playlisteval.commands.support import console, settings_of

F = TypeVar("F", bound=Callable[..., Any])

_OPTIONS = [
    click.option("--judge", "judges", multiple=True,
                 help="Estimate a judge run instead of a build: \"provider/model\" (repeat for a panel)."),
    click.option("--benchmark", default=None, help="With --judge: the benchmark (default: [select] benchmark)."),
    click.option("--evidence", type=click.Choice(["retrieved", "uniform", "oracle"]), default=None,
                 help="With --judge: the run's evidence (default: the benchmark's protocol, else [eval])."),
    click.option("--scope", default=None, help="With --judge: the run's corpus (domain, oracle, 24h, …)."),
    click.option("--frames", type=click.IntRange(min=1), default=None, help="With --judge: frames per judgment."),
    click.option("--modality", type=click.Choice(["frames+transcript", "frames", "transcript", "frames+audio",
                                                  "audio", "none"]), default=None,
                 help="With --judge: what the judge gets besides the question."),
    click.option("--swap", is_flag=True,
                 help="With --judge: count the swapped (position-bias) pass too: 2 calls a pair."),
    click.option("--samples", type=click.IntRange(min=1), default=1, help="With --judge: samples per pair."),
    click.option("--max-pairs", type=click.IntRange(min=1), default=None,
                 help="With --judge: only the first N pairs (as `eval judge --max-pairs`)."),
]


def judge_options(func: F) -> F:
    """The `cost estimate` options of a judge run."""
    for option in reversed(_OPTIONS):
        func = option(func)
    return func


def judge_estimate_wanted(judge: dict[str, Any]) -> bool:
    """Whether `cost estimate` was asked for a judge run; a judge run's option without --judge is a usage error."""
    if judge["judges"]:
        return True
    given = [f"--{k.replace('_', '-')}" for k, v in judge.items() if k != "samples" and v not in (None, False, ())]
    if given or judge["samples"] != 1:
        raise click.UsageError(f"{', '.join(given or ['--samples'])} describe(s) a judge run: add --judge MODEL")
    return False


def estimate_judge_cmd(ctx: click.Context, judges: tuple[str, ...], benchmark: str | None, evidence: str | None,
                       scope: str | None, frames: int | None, modality: str | None, swap: bool, samples: int,
                       max_pairs: int | None, from_ledger: bool, as_json: bool) -> None:
    from playlisteval.benchmark.pairs import find_benchmark
    from playlisteval.eval.judge_estimate import estimate_judges
    from playlisteval.eval.options import JudgeOptions
    from playlisteval.store import open_store, protocol

    settings = settings_of(ctx)
    engine = open_store(settings)
    chosen = find_benchmark(engine, benchmark or settings.select.benchmark)
    settings = protocol.applied(settings, protocol.stored(engine, int(chosen.id or 0)))
    options = JudgeOptions.from_settings(settings, evidence=evidence, scope=scope, frames=frames, modality=modality)
    est = estimate_judges(settings, engine, list(judges), options, benchmark=chosen.name, swap=swap,
                          samples=samples, max_pairs=max_pairs, from_ledger=from_ledger)
    if as_json:
        click.echo(json.dumps(est.as_json()))
        return
    ev = est.evidence
    console.print(f"Judge run on benchmark {est.benchmark!r}: {est.pairs} pair(s)"
                  + (f" of {est.benchmark_pairs}" if est.pairs != est.benchmark_pairs else "")
                  + f" × {'2 (forward and swapped)' if swap else '1'} × {samples} sample(s); evidence "
                  f"{options.evidence}, scope {options.scope}, {options.modality}, {options.frames} frame(s)",
                  highlight=False)
    limit = f", at most {ev.image_limit} images a request" if ev.image_limit is not None else ""
    console.print(f"assumptions: {ev.tokens_per_frame} tokens per frame (\\[estimate] tokens_per_frame), "
                  f"{ev.frames} frame(s) sent{limit}; "
                  + (f"{ev.stream} of {ev.chunks} chunk(s) ≈ {ev.stream_tokens:,} tokens; " if ev.stream else "")
                  + f"prompt, question and answers ≈ {ev.prompt_tokens:,} tokens", highlight=False)
    table = Table(title="Projected judge cost")
    for column in ("judge", "calls", "in tok", "out tok", "think tok", "USD/call", "USD/pair", "total USD",
                   "batch USD"):
        table.add_column(column, justify="left" if column == "judge" else "right")
    for j in est.judges:
        table.add_row(escape(j.judge) + (" *" if j.measured else ""), f"{j.calls:,}", f"{j.usage.input_tokens:,}",
                      f"{j.usage.output_tokens:,}", f"{j.usage.thinking_tokens:,}", f"{j.usd_per_call:.4f}",
                      _usd(j.usd_per_pair), _usd(j.total_usd), _usd(j.calls * j.batch_usd_per_call))
    console.print(table)
    if any(j.measured for j in est.judges):
        console.print("* tokens measured from the ledger's calls of this judge with these options")
    console.print(f"per pair: [bold]{_usd(est.usd_per_pair)} USD[/]  total: [bold]{_usd(est.total_usd)} USD[/] "
                  f"({sum(j.calls for j in est.judges):,} call(s))", highlight=False)


def _usd(value: float) -> str:
    return f"{value:,.2f}" if value >= 100 else f"{value:.4f}"
