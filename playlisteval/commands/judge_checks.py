"""`eval attribute` (why a judge's wrong verdicts were wrong) and `eval correlate` (does this benchmark rank
judges the way a published one does) — issue 20, deliverables 4 and 5. Both read stored records only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from rich.table import Table
from rich.text import Text

from playlisteval.commands import exitcodes
from playlisteval.commands.eval_group import eval_group
from playlisteval.commands.support import console, emit_json, err_console, settings_of


def _ci(share: Any) -> str:
    """An Interval as "61.5% [36.4, 84.6]" (no interval with one question: the estimate alone)."""
    if share is None:
        return "-"
    if share.low is None or share.high is None:
        return f"{100 * share.estimate:.1f}%"
    return f"{100 * share.estimate:.1f}% [{100 * share.low:.1f}, {100 * share.high:.1f}]"


def _runs_to_attribute(settings: Any, run: int | None) -> list[int]:
    """RUN, or every judge's main forward full-domain runs (retrieved and uniform evidence)."""
    if run is not None:
        return [run]
    from playlisteval.analytics import Analytics
    from playlisteval.store import open_store

    with Analytics(open_store(settings), settings) as an:
        rows = an.rows("SELECT run_id FROM main_run WHERE NOT swapped ORDER BY judge, evidence, scope, run_id")
    return [int(r["run_id"]) for r in rows]


_IMPORTED_NOTE = ("imported (`eval import`): what its judge was shown is not on record, so its wrong verdicts "
                  "are counted as 'no evidence judged (shortcut judge, none served or none on record)'; "
                  "the no-verdict count is exact")


@eval_group.command("attribute")
@click.argument("run", type=int, required=False)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per run: counts, shares_ci, examples.")
@click.pass_context
def attribute_cmd(ctx: click.Context, run: int | None, as_json: bool) -> None:
    """Why each wrong or no-verdict judgment of RUN went wrong: cited evidence not retrieved, retrieved but
    not sampled, served but still wrong, or no verdict (default: every main run)."""
    from playlisteval.analytics.attribution import CATEGORIES, LABELS, attribute
    from playlisteval.store import open_store

    settings = settings_of(ctx)
    engine = open_store(settings)
    runs = _runs_to_attribute(settings, run)
    if not runs:
        raise click.ClickException("no judge runs yet: run `playlisteval eval judge` first")
    from playlisteval.eval.imported import imported_runs

    imported = imported_runs(engine)  # issue 40: runs whose served evidence is not on record
    for run_id in runs:
        try:
            result = attribute(engine, run_id, seed=settings.project.seed)
        except LookupError as exc:
            raise click.ClickException(str(exc)) from None
        if as_json:
            marked = {"imported": True, "note": _IMPORTED_NOTE} if run_id in imported else {}
            emit_json({**result.as_json(), **marked})
            continue
        table = Table(title=f"run {run_id}: {result.judge}, {result.evidence} evidence, scope {result.scope} — "
                            f"{result.failed} of {result.judged} judgments wrong or without a verdict")
        for column in ("category", "judgments", "share [95 % interval]", "examples (pair → show ITEM)"):
            table.add_column(column, justify="right" if column == "judgments" else "left", overflow="fold")
        for c in CATEGORIES:
            shown = ", ".join(f"pair {e['pair_id']} (item {e['item_id']})" for e in result.examples[c])
            table.add_row(Text(LABELS[c]), str(result.counts[c]), _ci(result.shares[c]), Text(shown))
        console.print(table)
        if run_id in imported:
            err_console.print(Text(f"run {run_id}: {_IMPORTED_NOTE}", style="yellow"))
    if not as_json:
        console.print(Text("shares of the run's wrong + no-verdict judgments; intervals clustered by "
                           "question", style="dim"))


@eval_group.command("correlate")
@click.argument("file", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print judges, missing_here, missing_in_file, correlation.")
@click.pass_context
def correlate_cmd(ctx: click.Context, file: Path, as_json: bool) -> None:
    """Correlate each judge's main-run accuracy with a published score (FILE: CSV of judge, score): Pearson
    and Spearman, each with its Fisher-z interval and a permutation p (exact over all orderings up to 9
    judges); the report draws the scatter."""
    from playlisteval.analytics import Analytics
    from playlisteval.analytics.external import (
        CorrelateInputError,
        correlation,
        main_accuracy,
        read_scores,
        store_scores,
    )
    from playlisteval.store import open_store

    settings = settings_of(ctx)
    try:
        published = read_scores(file)
    except CorrelateInputError as exc:
        raise click.ClickException(str(exc)) from None
    for problem in published.problems:
        err_console.print(Text(f"skipped: {problem}"), style="yellow")
    engine = open_store(settings)
    store_scores(engine, published, str(file))
    with Analytics(engine, settings) as an:
        accuracy = main_accuracy(an)
    out = correlation(accuracy, published.scores, seed=settings.project.seed)
    out["skipped_lines"] = published.problems
    if as_json:
        emit_json(out)
    else:
        _print_correlation(out)
    if out["correlation"] is None:
        ctx.exit(exitcodes.INCOMPLETE)


def _print_correlation(out: dict[str, Any]) -> None:
    table = Table(title="judges: main-run accuracy here against the published score")
    for column in ("judge", "accuracy", "pairs", "published"):
        table.add_column(column, justify="left" if column == "judge" else "right", overflow="fold")
    for j in out["judges"]:
        table.add_row(Text(j["judge"]), f"{100 * j['accuracy']:.1f}%", str(j["pairs"]), f"{j['published']:g}")
    console.print(table)
    c = out["correlation"]
    if c is None:
        err_console.print(Text(f"no correlation: {out['why_none']}"), style="yellow")
    else:
        from playlisteval.analytics.correlation import summary

        for name in ("pearson", "spearman"):  # the interval and the p named on the line (issue 40)
            console.print(Text(f"{summary(c, name)}; n = {c['n']} judges"))
    if out["missing_here"]:
        err_console.print(Text("in the file but without a main run here: " + ", ".join(out["missing_here"])),
                          style="yellow")
    if out["missing_in_file"]:
        err_console.print(Text("with a main run here but not in the file: " + ", ".join(out["missing_in_file"])),
                          style="yellow")


COMMANDS: list[click.Command] = []  # both commands join the `eval` group
