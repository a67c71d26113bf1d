"""`eval rescore RUN`: a judge run's stored replies read again with today's parsers, into a new run that makes
no model call (issue 42 item 3; the logic is eval/rescore.py)."""

from __future__ import annotations

import click
from rich.table import Table
from rich.text import Text

from playlisteval.commands import exitcodes
from playlisteval.commands.eval_group import eval_group
from playlisteval.commands.support import console, emit_json, err_console, settings_of


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


@eval_group.command("rescore")
@click.argument("run_id", metavar="RUN", type=int)
@click.option("--json", "as_json", is_flag=True, help="Print the new run's summary and its changes as JSON.")
@click.pass_context
def rescore_cmd(ctx: click.Context, run_id: int, as_json: bool) -> None:
    """Re-derive judge run RUN's verdicts from the replies it stored, with today's parsers.

    \b
    The verdicts go into a new run recorded as a rescore of RUN (its settings say rescore_of: RUN); RUN
    itself is left as it is. No model is called and nothing is added to the ledger: the new run has no
    spend of its own. A verdict is read from the reply's answer, never from its thinking (<think>…</think>).
    Prints how many verdicts changed, from what to what, and the accuracy before and after. A pair whose
    reply is not stored is counted and reported, not guessed: the new run has no judgment for it. Running
    it again for the same RUN replaces the earlier rescore. `eval runs` lists both runs; `eval drop RUN`
    makes the rescore the judge's main run where RUN was.

    \b
    Exit status: 0 every pair re-read; 3 pairs without a stored reply (the new run is incomplete);
    1 no such run, or an imported run (its verdicts came from a file).
    """
    from playlisteval.eval.rescore import rescore_run

    summary = rescore_run(settings_of(ctx), run_id)
    if summary.missing:  # stderr: --json output stays one document
        shown = ", ".join(map(str, summary.missing_pairs[:10])) + (" …" if summary.missing > 10 else "")
        err_console.print(f"[yellow]warning:[/] {summary.missing} of {summary.pairs} pairs have no stored reply in run "
                          f"{run_id} (pairs {shown}): not guessed, the new run is incomplete", highlight=False)
    if as_json:
        emit_json(summary.as_json())
    else:
        table = Table(title=f"run {summary.run_id}: rescore of run {run_id} ({summary.judge} on {summary.benchmark!r})")
        for column in ("judged", "re-read", "changed", "accuracy before", "accuracy now", "model calls"):
            table.add_column(column, justify="right")
        table.add_row(f"{summary.judged}/{summary.pairs}", str(summary.reread), str(summary.changed),
                      _pct(summary.accuracy_before), _pct(summary.accuracy), "0")
        console.print(table)
        if summary.changes:
            console.print("changed: " + ", ".join(f"{k.replace('none', 'no verdict')} {n}"
                                                  for k, n in summary.changes.items()), highlight=False)
        else:
            console.print("no verdict changed", highlight=False)
        if summary.replaced:
            console.print(Text(f"replaced earlier rescore run(s) {', '.join(map(str, summary.replaced))}",
                               style="dim"))
    if summary.missing:
        ctx.exit(exitcodes.INCOMPLETE)


COMMANDS: list[click.Command] = []  # `eval rescore` joins the `eval` group
