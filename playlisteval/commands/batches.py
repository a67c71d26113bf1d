"""Provider batches from the command line: `batches` lists (and collects) the open ones; `build` and `eval`
send their calls as batches through ``run_maybe_batched``."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

import click
from rich.markup import escape
from rich.table import Table

from playlisteval.commands.support import console, err_console, settings_of
from playlisteval.config import Settings


def batch_wanted(settings: Settings, roles: tuple[str, ...], flag: bool | None) -> bool:
    """`--batch` / `--no-batch` when given, else whether [batch] roles lists any of ``roles``."""
    return flag if flag is not None else any(r in settings.batch.roles for r in roles)


T = TypeVar("T")


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


COMMANDS = [batches_cmd]
