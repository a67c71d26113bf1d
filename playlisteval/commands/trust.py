"""Commands that say how far a benchmark can be trusted (issue 21): power (the smallest difference it can
detect) and check (whether its videos are still there and unchanged)."""

from __future__ import annotations

import json
from typing import Any

import click
from rich.table import Table
from rich.text import Text

from playlisteval.commands import exitcodes
from playlisteval.commands.support import console, emit_json, err_console, settings_of


def _mde(figure: dict[str, Any]) -> str:
    """An MDE cell: points, "none detectable" (never a figure over 100 points: issue 40), or "—"."""
    from playlisteval.analytics.power import mde_cell

    return mde_cell(figure) or "—"


@click.command("power")
@click.option("--benchmark", default=None, help="Benchmark name. Default: the one judged most recently.")
@click.option("--alpha", type=float, default=0.05, show_default=True, help="Level of the two-sided test.")
@click.option("--power", "power_", type=float, default=0.8, show_default=True, help="Power to detect the MDE.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (units: question, video, playlist).")
@click.pass_context
def power(ctx: click.Context, benchmark: str | None, alpha: float, power_: float, as_json: bool) -> None:
    """The minimum detectable difference (MDE) between two judges on this benchmark, per clustering unit.

    \b
    From the benchmark's own intra-cluster correlation (question, video, playlist: pairs of one cluster
    share evidence and difficulty, so the benchmark holds fewer effective pairs than rows), paired, at
    the given level and power; and the pairs needed to detect 3, 5 and 10 points. With two judges' main
    runs the paired differences of the two best-covered model judges are used; with one, two independent
    judges of its accuracy are assumed (conservative).
    """
    from playlisteval.analytics import Analytics, trust, trust_data
    from playlisteval.analytics.rates import is_simulated
    from playlisteval.analytics.report import choose_benchmark
    from playlisteval.store import open_store

    settings = settings_of(ctx)
    if not (0 < alpha < 1 and 0 < power_ < 1):
        raise click.UsageError("--alpha and --power must lie between 0 and 1")
    if power_ <= alpha:  # a test already rejects with probability alpha when nothing differs
        raise click.UsageError("--power must exceed --alpha")
    with err_console.status("loading the store into DuckDB …"), Analytics(open_store(settings), settings) as an:
        bench = choose_benchmark(an, benchmark)
        figures = trust.power_figures(trust_data.load(an, bench), settings.eval.evidence, alpha, power_)
        simulated = is_simulated(an.engine)
    if as_json:
        emit_json({"benchmark": bench["name"] if bench else None, "simulated": simulated, **figures})
        return
    if not figures.get("units"):
        console.print(Text(figures.get("note", "nothing to size")))
        return
    table = Table(title=f"Minimum detectable difference — {bench['name'] if bench else 'all benchmarks'}"
                  + (" (SIMULATED)" if simulated else ""),
                  caption=f"{' vs '.join(figures['judges'])}; alpha {alpha}, power {power_}; "
                          f"{figures['n_pairs']} pairs; MDE by the exact noncentral t on clusters − 1 df")
    for header in ("Unit", "Clusters", "ICC", "Design effect", "Effective n", "MDE pts", "Pairs for 3 / 5 / 10 pts"):
        # room for "detectable" on one line (an ellipsis would hide what the cell says), taken from two
        # headers that wrap anyway, so the table still fits 80 columns
        table.add_column(header, justify="right", min_width=10 if header == "MDE pts" else None,
                         max_width=9 if header in ("Design effect", "Effective n") else None)
    for unit, u in figures["units"].items():
        needed = " / ".join(str(p["pairs"]) for p in u["pairs_for"] or []) or u.get("note", "—")
        table.add_row(unit, str(u["clusters"]), "—" if u["icc"] is None else f"{u['icc']:.3f}",
                      "—" if u["design_effect"] is None else f"{u['design_effect']:.2f}",
                      "—" if u["effective_n"] is None else f"{u['effective_n']:.0f}", _mde(u), Text(needed))
    console.print(table)


@click.command("check")
@click.option("--benchmark", default=None, help="Benchmark name. Default: [select] benchmark.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object with every problem video.")
@click.pass_context
def check(ctx: click.Context, benchmark: str | None, as_json: bool) -> None:
    """Re-read every video the benchmark uses (size, SHA-256) and report the missing or changed ones.

    Exits 3 when any video is missing, changed or has no recorded hash, naming the pairs whose question
    cites it; 0 when every video is as it was indexed. The result and its date are kept: the report and
    the dataset card `export` writes show them ("not checked" when it never ran).
    """
    from playlisteval.benchmark.health import check_benchmark
    from playlisteval.benchmark.pairs import find_benchmark
    from playlisteval.store import open_store

    settings = settings_of(ctx)
    engine = open_store(settings)
    bench = find_benchmark(engine, benchmark or settings.select.benchmark)
    from playlisteval.benchmark.check_record import record

    with err_console.status("re-reading the benchmark's videos …"):
        got = check_benchmark(engine, int(bench.id or 0))
    kept = record(engine, int(bench.id or 0), got)  # the report and the dataset card say what was found, and when
    if as_json:
        emit_json({"benchmark": bench.name, **got, "checked_at": kept["checked_at"]})
    else:
        for v in got["problems"]:
            pairs = v["cited_pairs"]
            console.print(Text(f"{v['status']}: {v['path']} ({v['domain']}) {v['error']}".rstrip()
                               + f"; {len(pairs)} pair(s) cite it" + (f": {json.dumps(pairs)}" if pairs else "")))
        console.print(Text(f"{bench.name}: {got['ok']} of {got['videos']} video(s) as indexed; {got['missing']} "
                           f"missing, {got['changed']} changed, {got['unverifiable']} unverifiable; "
                           f"{len(got['affected_pairs'])} pair(s) affected"))
    if got["problems"]:
        ctx.exit(exitcodes.INCOMPLETE)


COMMANDS: list[click.Command] = [power, check]


def print_paired(keys: dict[str, Any]) -> None:
    """The leaderboard's judge − judge table (Holm-adjusted, each comparison with its MDE) and the MDE per unit."""
    from playlisteval.analytics.tabular import fmt
    from playlisteval.analytics.trust_sections import paired_rows

    paired, power_ = keys["paired"], keys["power"]
    rows = paired_rows(paired)
    if rows:
        table = Table(title="Judge − judge (main runs, pairs both judged)",
                      caption=f"p-values Holm-adjusted over {paired['m']} comparison(s): "
                              f"{paired.get('smallest_p', '')}; MDE at power "
                              f"{paired['power']}, alpha {paired['alpha']}, by {paired['unit']}")
        for header in ("A", "B", "Pairs", "A − B pts [CI]", "p", "p (Holm)", "MDE pts"):
            table.add_column(header, justify="right")
        for r in rows:
            table.add_row(*(Text(c) for c in (r["judge_a"], r["judge_b"], fmt(r["pairs"], "int"),
                                              fmt(r["difference_ci"], "cipts"), fmt(r["p_value"], "p"),
                                              fmt(r["p_holm"], "p"), _mde(r))))
        console.print(table)
    units = power_.get("units", {})
    if units:
        shown = (f"{u}: {_mde(v)}" + (" pts" if v["mde"] is not None else "") for u, v in units.items())
        console.print(Text(f"MDE (alpha {power_['alpha']}, power {power_['power']}) by " + ", ".join(shown)
                           + f" ({' vs '.join(power_['judges'])})"))
