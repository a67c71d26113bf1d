"""Operations (issue 44): `ps` lists who holds what now, `parked` what waits for a person and how to replay it,
`cancel` stops a running build, index, select or judge run on every machine (store/cancels.py)."""

from __future__ import annotations

import sys
import time

import click
from rich.table import Table

from playlisteval.commands import exitcodes
from playlisteval.commands.support import console, emit_json, settings_of
from playlisteval.commands.terminal_text import plain


def _ids(ids: list[int] | tuple[int, ...], shown: int) -> str:
    head = ", ".join(str(i) for i in ids[:shown])
    return head + (f", … (+{len(ids) - shown})" if len(ids) > shown else "")


def _ago(t: float | None, at: float) -> str:
    if not t:
        return "—"
    seconds = max(0.0, at - t)
    return f"{seconds:.0f} s ago" if seconds < 120 else f"{seconds / 60:.0f} min ago"


@click.command("ps")
@click.option("--json", "as_json", is_flag=True,
              help='Print [{"process", "kind", "count", "ids", "lease_until", "renewed_at"}] as JSON.')
@click.pass_context
def ps(ctx: click.Context, as_json: bool) -> None:
    """List the worker processes that hold work now: build items, videos being indexed, select and judge
    jobs, with how many each holds, which, and its last heartbeat.

    Reads only the store, so on a fleet's shared store it lists every machine's workers. A lease is listed
    until it expires; a holder that died stops renewing and is taken back by the others after `[broker]
    lease_s`."""
    from playlisteval.actors.workforce import SHOWN_IDS, job_kinds_running, live_holdings
    from playlisteval.store import open_store
    from playlisteval.store.cancels import pending

    engine = open_store(settings_of(ctx))
    at = time.time()
    holdings = live_holdings(engine, at)
    if as_json:
        emit_json([{"process": h.process, "kind": h.kind, "count": h.count, "ids": h.ids,
                    "lease_until": h.lease_until, "renewed_at": h.renewed_at} for h in holdings])
        sys.exit(exitcodes.DONE)
    for c in pending(engine):  # what the holders finish and then stop taking
        console.print(f"[yellow]cancellation pending:[/] {c.what} (asked {_ago(c.since, at)}; running it again "
                      "clears it)", highlight=False)
    if not holdings:
        waiting = job_kinds_running(engine)
        extra = ("; open jobs with no live holder: " + ", ".join(f"{n} {k}" for k, n in sorted(waiting.items()))
                 + " (start `playlisteval worker`)") if waiting else ""
        console.print(f"no worker holds any work now{extra}")
        sys.exit(exitcodes.DONE)
    table = Table("process", "kind", "holds", "ids", "lease ends in", "last heartbeat",
                  title=f"{len({h.process for h in holdings})} worker process(es) holding work")
    for h in holdings:
        table.add_row(plain(h.process), h.kind, str(h.count), _ids(h.ids, SHOWN_IDS),
                      f"{max(0.0, h.lease_until - at):.0f} s", _ago(h.renewed_at, at))
    console.print(table)
    sys.exit(exitcodes.DONE)


@click.command("parked")
@click.option("--replay", is_flag=True,
              help="Put the failed build items back where they failed and resume them (as `retry-failed`); "
                   "for the other kinds, print the command that takes them up again.")
@click.option("--json", "as_json", is_flag=True,
              help='Print [{"kind", "reason", "count", "ids", "replay"}] as JSON.')
@click.pass_context
def parked(ctx: click.Context, replay: bool, as_json: bool) -> None:
    """List the work that stopped and waits for a person, of every kind, grouped by reason: failed build
    items, videos refused by `add`/`index`, failed select and judge jobs — each group with the command that
    replays it.

    Exit status: 0 nothing parked (or all replayed); 3 something is parked."""
    from playlisteval.actors.workforce import SHOWN_IDS, parked_work
    from playlisteval.store import open_store

    settings = settings_of(ctx)
    groups = parked_work(open_store(settings))
    retried: list[int] = []
    if replay and any(g.kind == "item" for g in groups):
        from playlisteval.actors.build_run import retry_failed

        retried = retry_failed(settings)
        groups = [g for g in groups if g.kind != "item"]
    code = exitcodes.INCOMPLETE if groups else exitcodes.DONE
    if as_json:
        emit_json({"parked": [{"kind": g.kind, "reason": g.reason, "count": g.count, "ids": list(g.ids),
                               "replay": g.replay} for g in groups], "retried_items": retried, "exit_code": code})
        sys.exit(code)
    if retried:
        console.print(f"retried {len(retried)} failed item(s)")
    if not groups:
        console.print("nothing is parked")
        sys.exit(code)
    table = Table("kind", "n", "reason", "ids", "replay with", title="parked work", show_lines=True)
    for g in groups:
        table.add_row(g.kind, str(g.count), plain(g.reason), _ids(g.ids, SHOWN_IDS), g.replay)
    console.print(table)
    sys.exit(code)


_CANCEL_KINDS = ("build", "index", "select", "judge", "retrieve")


@click.command("cancel")
@click.argument("what", type=click.Choice(_CANCEL_KINDS))
@click.argument("run_id", type=click.IntRange(min=1), required=False)
@click.option("--json", "as_json", is_flag=True, help='Print {"cancelled", "jobs_stopped"} as JSON.')
@click.pass_context
def cancel(ctx: click.Context, what: str, run_id: int | None, as_json: bool) -> None:
    """Cancel a running build, index, select, or judge (retrieve) run RUN_ID, on every machine.

    The cancellation is recorded in the store: every worker stops taking that work — a build step, a video
    or a question not yet started is left as it was, one in flight finishes and commits — and the command
    waiting on it (`build`, `index`, `select`, `eval judge`) ends with exit status 7. Running the work again
    the normal way (`resume`, `index`, `select`, `eval judge` with the same options) clears the
    cancellation and finishes what is left; nothing done is done or paid again."""
    from playlisteval.store import cancels, open_store

    if what in ("judge", "retrieve") and run_id is None:
        raise click.UsageError(f"`cancel {what}` needs the run's id (`playlisteval eval runs` lists them)")
    if what not in ("judge", "retrieve") and run_id is not None:
        raise click.UsageError(f"`cancel {what}` takes no run id")
    key = {"build": cancels.BUILD, "index": cancels.INDEX, "select": cancels.job_key("gate", 0)}.get(what) \
        or cancels.job_key(what, int(run_id or 0))
    stopped = cancels.request(open_store(settings_of(ctx)), key)
    if as_json:
        emit_json({"cancelled": cancels.what_of(key), "jobs_stopped": stopped})
        sys.exit(exitcodes.DONE)
    jobs = f"; {stopped} queued question(s) will not start" if key.count(":") == 2 else ""
    console.print(f"cancelled {cancels.what_of(key)}{jobs}: what is in flight finishes, nothing new starts. "
                  "Running it again clears the cancellation.", highlight=False)
    sys.exit(exitcodes.DONE)


COMMANDS = [ps, parked, cancel]
