"""`select` (draw the benchmark from the accepted items, SPEC F) and `export` (write it as a dataset).

`eval judge` and `eval retrieve` are in commands/evaluate.py."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click
from rich.table import Table

from playlisteval.commands.batches import batch_wanted, print_batch_report, run_maybe_batched
from playlisteval.commands.eval_output import (
    gate_exit,
    print_gate_problems,
)
from playlisteval.commands.support import console, emit_json, progress_bar, settings_of


@click.command("select")
@click.option("--name", default=None, help="Benchmark name (default: [select] benchmark).")
@click.option("--questions-per-domain", type=click.IntRange(min=0), default=None,
              help="First level (SPEC F3): accepted questions sampled per domain; 0 = the smallest domain's count.")
@click.option("--pairs-per-domain", type=click.IntRange(min=1), default=None,
              help="Second level (SPEC F3): kept pairs drawn per domain.")
@click.option("--budget", type=click.FloatRange(min=0), default=None,
              help="USD the difficulty gate's calls may spend, all selections of this store together "
                   "(0 = none; default: [select] budget_usd).")
@click.option("--batch/--no-batch", "use_batch", default=None,
              help="Send the weak judges' calls through their provider's batch API (half price, answers within "
                   "24 h; the command waits up to [batch] wait_s). Default: on when [batch] roles lists F_first "
                   "or F_second.")
@click.option("--wait/--no-wait", default=True,
              help="With a Redis broker: wait for the `playlisteval worker` processes to judge every question "
                   "(default), or send the questions and return at once (run `select` again to draw).")
@click.option("--redraw", is_flag=True,
              help="Draw an existing benchmark again from every accepted item, with this run's settings: its "
                   "live version is frozen first (leaderboard/export --version N still read it) and the new "
                   "draw becomes the next version (none when its content does not change).")
@click.option("--json", "as_json", is_flag=True, help="Print the outcome as JSON.")
@click.pass_context
def select_cmd(ctx: click.Context, name: str | None, questions_per_domain: int | None,
               pairs_per_domain: int | None, budget: float | None, use_batch: bool | None, wait: bool,
               redraw: bool, as_json: bool) -> None:
    """Draw the benchmark from the accepted items (SPEC F).

    \b
    1. sample accepted questions per domain to a common count (seeded);
    2. make each sampled question's 10 preference pairs (gaps 4/3/2/1);
    3. the difficulty gate: the weak judges of roles F_first and F_second judge every pair with the
       judge prompt; a pair is kept iff at least one of them gets it wrong;
    4. draw the kept pairs per domain (seeded), each with its Model A side drawn from the shared seed.
    Questions with a drawn pair move to `selected`, those with no kept pair to `too_easy`. Running it
    again under the same name changes nothing; an interrupted gate resumes where it stopped. When items
    were accepted after the benchmark was drawn, it says how many per domain, leaves the benchmark as it
    is and exits 3: `--redraw` draws it again as its next version (the gate asks only about the new
    questions' pairs; the old version stays readable with `leaderboard --version N`, `export --version N`).
    A weak judge whose call fails or whose reply holds no verdict decides nothing: the pair stays open,
    nothing is drawn, and running `select` again asks that judge again. Exit status 3 while pairs stay
    open, 4 when the budget stopped the gate.
    """
    from playlisteval.analytics.provenance import provenance
    from playlisteval.models.preflight import check_select
    from playlisteval.models.simulated import is_simulated
    from playlisteval.select.sampling import select_benchmark
    from playlisteval.store import open_store

    settings = settings_of(ctx)
    check_select(settings, open_store(settings))  # SDKs, keys, prices, sim world: before anything is made
    if budget is not None:
        settings.select.budget_usd = budget
    if questions_per_domain is not None:
        settings.select.questions_per_domain = questions_per_domain
    if pairs_per_domain is not None:
        settings.select.pairs_per_domain = pairs_per_domain
    weak = ("F_first", "F_second")
    with progress_bar("select", "pairs", enabled=not as_json) as update:
        out, batches = run_maybe_batched(settings, weak, batch_wanted(settings, weak, use_batch), lambda runner: (
            select_benchmark(settings, name, runner=runner, progress=update, wait=wait, redraw=redraw)))
    print_batch_report(batches, stderr=as_json)
    if out.sent:  # --no-wait: the workers have the questions; nothing is drawn yet
        if as_json:
            emit_json({"benchmark_id": 0, "name": out.name, "created": False, "sent": True, "warnings": out.warnings})
        else:
            for warning in out.warnings:
                console.print(f"[yellow]sent:[/] {warning}", highlight=False)
        return
    if as_json:
        click.echo(json.dumps({
            "benchmark_id": out.benchmark_id, "name": out.name, "created": out.created, "pairs": out.pairs,
            "domains": {d: vars(v) for d, v in out.domains.items()}, "gate": vars(out.gate),
            "selected": out.selected, "too_easy": out.too_easy, "warnings": out.warnings,
            "version": out.version, "redrawn": out.redrawn, "new_version": out.new_version,
            "accepted_since_draw": out.new_items, "weak_judges_changed": out.judges_changed,
            "simulated": is_simulated(open_store(settings)),
            "provenance": provenance(open_store(settings), settings, out.name)}))
        print_gate_problems(out.gate)
        sys.exit(_select_exit(out))
    table = Table(title=f"benchmark {out.name!r}" + ("" if out.created or out.redrawn else " (already drawn)"))
    for column in ("domain", "accepted", "sampled", "kept pairs", "pairs drawn", "questions"):
        table.add_column(column, justify="left" if column == "domain" else "right")
    for d in out.domains.values():
        table.add_row(d.domain, str(d.accepted or "-"), str(d.sampled), str(d.kept_pairs), str(d.pairs),
                      str(d.questions))
    console.print(table)
    g = out.gate
    if out.created or out.redrawn or g.undecided:
        console.print(f"difficulty gate: {g.judged} pair(s) decided now, {g.kept} kept, {g.dropped} too easy"
                      + (f", {g.undecided} undecided ({g.errors} weak-judge fault(s))" if g.undecided else ""))
    for change in g.changed:  # a weak judge changed since its verdicts: they were not reused (issue 25)
        console.print(f"difficulty gate: weak judge changed, {change}", highlight=False)
    console.print(f"items moved: {out.selected} selected, {out.too_easy} too easy")
    for warning in out.warnings:
        console.print(f"[yellow]warning:[/] {warning}", highlight=False)
    if out.redrawn and out.benchmark_id:  # a redraw says what it made (issue 22)
        console.print(f"benchmark {out.name!r} drawn again: " + (
            f"version {out.version} (version {out.version - 1} stays readable: `leaderboard --version "
            f"{out.version - 1}`, `export --version {out.version - 1}`)" if out.new_version
            else f"the same pairs, still version {out.version}"), highlight=False)
    if is_simulated(open_store(settings)):
        console.print("[yellow]simulated:[/] built and gated by the sim world (synthetic playlists)")
    print_gate_problems(out.gate)
    sys.exit(_select_exit(out))


def _select_exit(out: Any) -> int:
    """The gate's exit status; else 3 (INCOMPLETE) when items accepted after the draw were left out of
    an existing benchmark (run with --redraw to draw them in), or its weak judges changed since its draw
    (it was not gated again: draw under a new name)."""
    from playlisteval.commands.exitcodes import DONE, INCOMPLETE

    code = gate_exit(out.gate)
    return code if code != DONE else INCOMPLETE if out.new_items or out.judges_changed else DONE


@click.command("export")
@click.argument("out", type=click.Path(file_okay=False, path_type=Path))
@click.option("--benchmark", default=None, help="Benchmark name (default: [select] benchmark).")
@click.option("--force", is_flag=True, help="Write into OUT even when it is not empty (its files of the same "
                                            "names are overwritten).")
@click.option("--version", "version", type=click.IntRange(min=1), default=None,
              help="A version of the benchmark (`playlisteval versions` lists them): an older one is written "
                   "as it stood when it was superseded. Default: the live version.")
@click.option("--json", "as_json", is_flag=True, help="Print what was written as JSON (README, \"--json\").")
@click.pass_context
def export_cmd(ctx: click.Context, out: Path, benchmark: str | None, force: bool, version: int | None,
               as_json: bool) -> None:
    """Write the benchmark to OUT: data/test.parquet, data/test.jsonl, README.md (a dataset card with the
    SPEC F4 statistics) and stats.json. Load it with
    `datasets.load_dataset("parquet", data_files="OUT/data/test.parquet")`."""
    from playlisteval.select.versions import export_version

    with progress_bar("export", "steps") as update:
        report = export_version(settings_of(ctx), out, benchmark, force=force, progress=update, version=version)
    st = report.stats
    if as_json:
        emit_json({"out": str(out), "pairs": report.rows, "files": [str(p.relative_to(out)) for p in report.files],
                   "stats": st.as_dict(), "provenance": report.provenance, "notes": report.notes})
        return
    console.print(f"wrote {report.rows} pair(s) to {out}: " + ", ".join(str(p.relative_to(out)) for p in report.files))
    console.print(f"{st.sampled_after} question(s); gaps {st.pairs_by_gap}; longer answer wins "
                  f"{st.longer_answer_wins_pct}% of pairs")
    for note in report.notes:
        console.print(f"[yellow]note:[/] {note}", highlight=False)


COMMANDS: list[click.Command] = [select_cmd, export_cmd]
