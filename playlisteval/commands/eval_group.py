"""The `playlisteval eval` group, its scorers of outside results (`eval retrieval`, `eval verdicts`) and
its management of judge runs (`eval runs`, `eval drop`).

Other modules add their own subcommands (`eval judge`, `eval retrieve`, …) to the same group:

    from playlisteval.commands.eval_group import eval_group

    @eval_group.command("judge")
    def judge(...): ...

Those modules must come after this one in ``playlisteval.commands.MODULES`` only for the order of
``--help``; the group is one object, so any import order works.
"""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.table import Table
from rich.text import Text

from playlisteval.commands.support import console

_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)


@click.group("eval")
def eval_group() -> None:
    """Evaluate judges and retrievers on the benchmark, or score results produced elsewhere."""


@eval_group.command("retrieval")
@click.option("--run", "run_path", type=_FILE, required=True,
              help="TREC run file: lines `qid Q0 docid rank score tag`.")
@click.option("--qrels", "qrels_path", type=_FILE, required=True,
              help="TREC qrels file: lines `qid 0 docid rel` (rel > 0 is relevant).")
@click.option("--k", "k", type=click.IntRange(min=1), default=10, show_default=True, help="Cut-off rank.")
@click.option("--json", "as_json", is_flag=True, help='Print {"n_queries", "hit_all", "hit_any", "ndcg"} as JSON.')
def retrieval(run_path: Path, qrels_path: Path, k: int, as_json: bool) -> None:
    """Score a retrieval run in TREC format against qrels (SPEC R2).

    \b
    Per-metric means over the qrels' queries that have a relevant document:
      Hit_all@k  every relevant document is in the top k (Hit_both for two gold segments)
      Hit_any@k  at least one relevant document is in the top k
      nDCG@k     binary relevance, DCG = sum of 1/log2(rank+1), IDCG over min(|relevant|, k)
    A query the run does not answer scores 0. Documents are ranked by score, highest first; equal
    scores keep the order of the run's rank column. A malformed line is an error naming file and line.
    """
    from playlisteval.eval.trec import score_files

    scores = score_files(run_path, qrels_path, k)
    from playlisteval.commands.support import err_console

    for warning in scores.warnings():  # stderr: --json output stays one document (its "warnings" too)
        err_console.print(f"[yellow]warning:[/] {run_path}: {warning}", highlight=False)
    if as_json:
        click.echo(json.dumps(scores.as_json()))
        return
    table = Table(title=f"{run_path.name} against {qrels_path.name}")
    table.add_column("queries", justify="right")
    for name in (f"Hit_all@{k}", f"Hit_any@{k}", f"nDCG@{k}"):
        table.add_column(name, justify="right")
    table.add_row(str(scores.n_queries), f"{scores.hit_all:.4f}", f"{scores.hit_any:.4f}", f"{scores.ndcg:.4f}")
    console.print(table)


@eval_group.command("verdicts")
@click.argument("file", type=_FILE)
@click.option("--json", "as_json", is_flag=True, help='Print {"n", "accuracy", "no_verdict"} as JSON.')
def verdicts(file: Path, as_json: bool) -> None:
    """Score pairwise verdicts made elsewhere: FILE.jsonl, one object a line (SPEC G4, G8).

    \b
    Each line: {"pair_id": …, "verdict": "A" | "B" | null, "a_is_better": true | false}
    Accuracy counts a pick of the better answer 1, of the other 0, and no verdict (null) 0.5; the
    no-verdicts are also counted. A malformed line is an error naming its line number.
    """
    from playlisteval.eval.verdict_scoring import score_file

    scores = score_file(file)
    if as_json:
        click.echo(json.dumps(scores.as_json()))
        return
    table = Table(title=file.name)
    for name in ("pairs", "accuracy", "no verdict"):
        table.add_column(name, justify="right")
    table.add_row(str(scores.n), f"{scores.accuracy:.4f}", str(scores.no_verdict))
    console.print(table)


@eval_group.command("runs")
@click.option("--benchmark", default=None, help="Only this benchmark's runs.")
@click.option("--judge", default=None, help="Only this judge's runs.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object a line, with every option and error.")
@click.pass_context
def runs(ctx: click.Context, benchmark: str | None, judge: str | None, as_json: bool) -> None:
    """List the judge runs: their options, state and counts.

    \b
    A run is a judge with one set of options (evidence, scope, sides, modality, frames, size, thinking,
    media resolution, audio, retriever), named by their hash (in --json). Main: the judge's run with the
    configured [eval] options — the one the leaderboard shows; any other is a sweep, and `varies` says
    what it changes. State: finished (every pair judged), incomplete (errors or pairs left: run the
    same `eval judge` command again), running (a pass under way, or cut short). Imported: verdicts made
    elsewhere and brought in by `eval import` (the file is named; no spend is recorded).
    Accuracy is over the judged pairs (no verdict counts 0.5); errors are never judged. Verdicts: the
    replies without a verdict (refusals, ties) and the share of A; UNHEALTHY past [analytics]
    max_no_verdict_share / max_one_letter_share (`health` in --json; issue 40).
    """
    from playlisteval.commands.support import settings_of
    from playlisteval.eval.runs import list_runs
    from playlisteval.store import open_store

    settings = settings_of(ctx)
    found = list_runs(settings, open_store(settings), benchmark, judge)
    # each run's verdict health from the analytics view (issue 40): the same flag the leaderboard shows
    from playlisteval.analytics.verdict_health import health_of

    health = health_of(settings, [info.run_id for info in found]) if found else {}
    if as_json:
        from playlisteval.analytics.provenance import provenance

        blocks: dict[str, dict[str, object]] = {}  # one provenance per benchmark (issue 22)
        for info in found:
            if info.benchmark not in blocks:
                blocks[info.benchmark] = provenance(open_store(settings), settings, info.benchmark)
            h = health.get(info.run_id)
            click.echo(json.dumps({**info.as_json(), "health": h.as_dict() if h else None,
                                   "provenance": blocks[info.benchmark]}))
        return
    if not found:
        console.print("[dim]no judge runs yet: `playlisteval eval judge` makes them[/]")
        return
    table = Table(title="judge runs")
    for column in ("run", "judge", "options", "state", "judged", "verdicts", "errors", "accuracy"):
        numeric = column in ("run", "judged", "errors", "accuracy")
        table.add_column(column, justify="right" if numeric else "left", overflow="fold",
                         no_wrap=column in ("state", "accuracy"))
    for info in found:
        c, opts = info.counts, info.settings
        where = " · ".join([str(opts.get("evidence", "?")), str(opts.get("scope", "?")),
                            "swapped" if opts.get("swap") else "forward"])
        what = f"{where}\n" + ("main" if info.main else f"sweep: {info.varies or 'a repeat of the main run'}")
        if info.imported:  # verdicts made elsewhere (`eval import`): say so, with the file they came from
            what += f"\nimported from {info.settings.get('import_file')}"
        if info.settings.get("rescore_of") is not None:  # `eval rescore`: re-read from that run's replies
            what += f"\nrescore of run {info.settings['rescore_of']} (no model call)"
        h = health.get(info.run_id)
        red = "bold red" if h and h.flagged else ""
        table.add_row(str(info.run_id), Text(f"{info.judge}\n{info.benchmark}"), Text(what), c.state,
                      f"{c.judged}/{c.pairs}" + (f"\n{c.no_verdict} no verdict" if c.no_verdict and not h else ""),
                      Text(h.verdicts_mix if h else "", style=red), str(c.errors),
                      Text(("-" if info.accuracy is None else f"{100 * info.accuracy:.1f}%") + (" !" if red else ""),
                           style=red))
    console.print(table)
    for info in found:  # what the ! means, per run: its accuracy is not a measurement of judging
        if (h := health.get(info.run_id)) and h.flagged:
            console.print(Text(f"! run {info.run_id} ({info.judge}): {h.health}", style="bold red"))


@eval_group.command("drop")
@click.argument("run_id", metavar="RUN", type=int)
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.option("--json", "as_json", is_flag=True, help='Print {"run_id", "judge", "judgments", "errors"} as JSON.')
@click.pass_context
def drop(ctx: click.Context, run_id: int, yes: bool, as_json: bool) -> None:
    """Delete judge run RUN (a number from `eval runs`) with its judgments and errors.

    The calls it made stay on the ledger: their cost was paid and is still counted.
    """
    from playlisteval.commands.support import settings_of
    from playlisteval.eval.runs import drop_run, list_runs
    from playlisteval.store import open_store

    settings = settings_of(ctx)
    engine = open_store(settings)
    info = next((r for r in list_runs(settings, engine) if r.run_id == run_id), None)
    if info is None:
        raise click.BadParameter(f"no judge run {run_id}: `playlisteval eval runs` lists them", param_hint="RUN")
    c = info.counts
    described = (f"run {run_id}: {info.judge} on {info.benchmark!r}, {info.varies or 'default options'}, {c.state}, "
                 f"{c.judged} judgment(s), {c.errors} error(s)")
    if not yes:
        click.confirm(f"Delete {described}?", abort=True)
    _, judged, errors = drop_run(engine, run_id)
    if as_json:
        from playlisteval.commands.support import emit_json

        emit_json({"run_id": run_id, "judge": info.judge, "benchmark": info.benchmark, "deleted": True,
                   "judgments": judged, "errors": errors})
        return
    console.print(Text(f"deleted {described.split(':', 1)[0]}: {judged} judgment(s), {errors} error(s)"))


COMMANDS: list[click.Command] = [eval_group]
