"""`eval import FILE --judge NAME`: a judge's verdicts made elsewhere become a judge run of the benchmark
(issue 40 item 9; the logic is eval/imported.py, the file format eval/verdict_file.py)."""

from __future__ import annotations

from pathlib import Path

import click
from rich.table import Table
from rich.text import Text

from playlisteval.commands import exitcodes
from playlisteval.commands.eval_group import eval_group
from playlisteval.commands.support import console, emit_json, err_console, settings_of


@eval_group.command("import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--judge", required=True, help="The judge's name on the leaderboard (e.g. openai/gpt-5.4).")
@click.option("--benchmark", default=None, help="Benchmark name (default: [select] benchmark).")
@click.option("--evidence", type=click.Choice(["retrieved", "uniform", "oracle"]), default=None,
              help="The evidence the judge was shown (default: the benchmark protocol's, `protocol show`).")
@click.option("--scope", default=None, help="The corpus scope it came from (default: the protocol's).")
@click.option("--swapped", is_flag=True,
              help="The file's A and B are the export's answer_b and answer_a (the position-bias pass).")
@click.option("--replace", is_flag=True, help="Replace this judge's earlier import (same evidence, scope, sides).")
@click.option("--json", "as_json", is_flag=True, help="Print the run's summary as JSON.")
@click.pass_context
def import_cmd(ctx: click.Context, file: Path, judge: str, benchmark: str | None, evidence: str | None,
               scope: str | None, swapped: bool, replace: bool, as_json: bool) -> None:
    """Make a judge run of the benchmark from verdicts given elsewhere: FILE has one line per pair.

    \b
    JSON Lines (one object a line) or CSV with a header (by the suffix .jsonl/.csv), fields:
      pair_id        the pair's id in `export`'s data/test.jsonl (or the store's pair number)
      verdict        "A", "B", or null / empty for no verdict (scores 0.5, as here)
      raw            optional: the judge's reply
      input_tokens   optional, and output_tokens: what the judge reported (kept, never priced)
      outcome        optional beside no verdict: no_verdict (default), refusal or tie
    e.g. a JSON line, and the same as CSV (header, then a row; an empty verdict is no verdict):
      {"pair_id": "3f2a9c0e1b7d4a55-54", "verdict": "A", "raw": "… [[A]]", "input_tokens": 9120, "output_tokens": 312}
      pair_id,verdict,raw,input_tokens,output_tokens
      3f2a9c0e1b7d4a55-54,A,… [[A]],9120,312
    A and B are the exported row's answer_a and answer_b. An exported row with "verdict" added is a valid
    line; its a_is_better / label are checked against the benchmark's sides.

    \b
    The run is recorded like `eval judge`'s, labelled imported (the file's name and SHA-256), and is the
    judge's main run for the evidence it declares: the leaderboard, power, eval attribute, the judge − judge
    table with Holm and the report count it like a run made here. No model call was made here, so no
    spend is recorded for it. A bad line (unknown pair id, a pair of another benchmark, a verdict that is
    not A/B/empty, a pair given twice, bad JSON) is an error naming the line, and nothing is imported.
    Importing the same judge again is refused unless --replace.

    \b
    Exit status: 0 every pair of the benchmark imported; 3 pairs left without a line (the run is
    incomplete); 6 a larger share of lines without a verdict than [analytics] max_no_verdict_share
    (FLAGGED); 1 a bad file or a refused import.
    """
    from playlisteval.eval.imported import SPEND_NOTE, import_verdicts

    settings = settings_of(ctx)
    summary = import_verdicts(settings, file, judge, benchmark, evidence=evidence, scope=scope, swapped=swapped,
                              replace=replace)
    if summary.missing:  # stderr: --json output stays one document
        err_console.print(f"[yellow]warning:[/] {summary.missing} of {summary.pairs} pairs of the benchmark have no "
                          "line in the file: the run is incomplete (the leaderboard marks it)", highlight=False)
    if as_json:
        emit_json(summary.as_json())
    else:
        side = "swapped" if summary.swapped else "forward"
        table = Table(title=f"imported run {summary.run_id}: {summary.judge} on {summary.benchmark!r}")
        for column in ("evidence", "judged", "no verdict", "accuracy", "tokens in / out", "spend"):
            table.add_column(column, justify="left" if column in ("evidence", "spend") else "right")
        tokens = " / ".join("-" if n is None else str(n) for n in (summary.input_tokens, summary.output_tokens))
        accuracy = "-" if summary.accuracy is None else f"{100 * summary.accuracy:.1f}%"
        table.add_row(f"{summary.evidence} · {summary.scope} · {side}", f"{summary.judged}/{summary.pairs}",
                      str(summary.no_verdict), accuracy, tokens, "not recorded")
        console.print(table)
        console.print(Text(f"from {summary.file} (sha256 {summary.sha256}); spend {SPEND_NOTE}"
                           + (f"; replaced run(s) {', '.join(map(str, summary.replaced))}" if summary.replaced
                              else ""), style="dim"))
    # a file of mostly no verdicts is not a chance-level judge (issue 40 item 6): said, and its own exit
    limit = getattr(settings.analytics, "max_no_verdict_share", None)
    flagged = limit is not None and summary.judged > 0 and summary.no_verdict / summary.judged > limit
    if flagged:
        err_console.print(f"[bold yellow]FLAGGED:[/] {summary.no_verdict} of {summary.judged} imported lines have "
                          f"no verdict (over [analytics] max_no_verdict_share = {limit:g}): its accuracy is not a "
                          "measurement of the judge", highlight=False)
    if summary.missing:
        ctx.exit(exitcodes.INCOMPLETE)
    if flagged:
        ctx.exit(exitcodes.FLAGGED)


COMMANDS: list[click.Command] = []  # `eval import` joins the `eval` group
