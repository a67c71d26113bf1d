"""`eval export RUN OUT`: a judge run as an Inspect AI eval log (issue 41 item 6; the logic is
eval/run_records.py, which reads the run, and eval/inspect_log.py, which writes it with inspect_ai)."""

from __future__ import annotations

from pathlib import Path

import click
from rich.text import Text

from playlisteval.commands import exitcodes
from playlisteval.commands.eval_group import eval_group
from playlisteval.commands.support import console, emit_json, err_console, settings_of


@eval_group.command("export")
@click.argument("run_id", metavar="RUN", type=int)
@click.argument("out", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help='Print {"path", "samples", "errors", "not_asked"} as JSON.')
@click.pass_context
def export_cmd(ctx: click.Context, run_id: int, out: Path, as_json: bool) -> None:
    """Write judge run RUN as an Inspect AI eval log: `inspect view --log-dir OUT` opens it.

    \b
    OUT is a folder (the log is written in it, named as Inspect names its logs) or a file ending in
    .eval or .json. One sample per judged pair: input = the prompt the judge was given (as the ledger kept
    it), output = its reply, target = the intended answer's letter as shown, the score "verdict" = C
    (correct), I (incorrect) or N (no verdict: never scored correct, nor 0.5 as Inspect's partial P).
    Sample metadata: the pair (its id in `export`'s data), tokens, dollars and the evidence served. The
    log's results give this project's pairwise accuracy (no verdict 0.5, SPEC G4) and the three counts.
    Needs the inspect extra: pip install 'playlisteval[inspect]'.

    \b
    Exit status: 0 every pair of the benchmark judged; 3 the run has failed or unasked pairs (they are
    not samples; the log's status is "error" and says how many); 1 no such run, or inspect_ai missing.
    """
    from playlisteval.eval.inspect_log import write
    from playlisteval.eval.run_records import load_run
    from playlisteval.store import open_store

    run = load_run(open_store(settings_of(ctx)), run_id)
    done = write(run, out)
    unfinished = done.errors + done.not_asked
    if unfinished:  # stderr: --json output stays one document
        err_console.print(f"[yellow]warning:[/] run {run_id} is incomplete: {done.errors} failed and {done.not_asked} "
                          f"unasked pair(s) are not in the log (its status says so)", highlight=False)
    if as_json:
        emit_json({"run_id": run_id, "judge": run.judge, "benchmark": run.benchmark, "path": str(done.path),
                   "samples": done.samples, "errors": done.errors, "not_asked": done.not_asked})
    else:
        console.print(Text(f"wrote {done.path}: run {run_id} ({run.judge} on {run.benchmark!r}), {done.samples} "
                           f"sample(s), one per judged pair; open it with `inspect view --log-dir {done.path.parent}`"),
                      soft_wrap=True)  # a path stays whole, to be copied
    if unfinished:
        ctx.exit(exitcodes.INCOMPLETE)


COMMANDS: list[click.Command] = []  # `eval export` joins the `eval` group
