"""Commands that run the build: build, resume, retry-failed, status, worker."""

from __future__ import annotations

import json
import sys
from contextlib import nullcontext
from typing import Any

import click
from rich.console import Group
from rich.live import Live
from rich.table import Table

from playlisteval.commands import exitcodes
from playlisteval.commands.support import StepProgress, console, emit_json, settings_of
from playlisteval.store.states import WORKING, State


def _live_status(settings: Any, as_json: bool = False) -> tuple[Any, Any]:
    """The live status table with a bar of items settled (rate, ETA) under it; piped: one log line per item
    settled (-v); with --json: nothing on stdout until the end."""
    from playlisteval.build.status import status as read_status
    from playlisteval.store.states import TERMINAL

    progress = StepProgress("build", "items", on=console, enabled=not as_json)

    def view(st: Any) -> Any:
        settled = sum(st.states.get(s.value, 0) for s in TERMINAL)
        progress.update("items settled", settled, st.items)
        return Group(_status_table(st), progress.bar) if progress.terminal else _status_table(st)

    if as_json:
        def quiet() -> None:
            view(read_status(settings))
        return nullcontext(), quiet
    live = Live(view(read_status(settings)), console=console, refresh_per_second=4, transient=False)

    def tick() -> None:
        live.update(view(read_status(settings)))

    return live, tick


_BUDGET_HELP = ("Budget in USD for the build's model calls, all runs of this store together (0 = none; "
                "default: [build] budget_usd). The build pauses when it is reached.")
_BUDGET = click.FloatRange(min=0)  # a negative budget is a usage error, not "unlimited"
_EXIT_HELP = ("Exit status: 0 done; 1 error; 2 usage; 3 finished with failed items; 4 paused by the budget; "
              "5 another build holds the items; 7 cancelled (`playlisteval cancel build`); 130 interrupted (Ctrl-C).")


@click.command(epilog=_EXIT_HELP)
@click.option("--budget", type=_BUDGET, default=None, help=_BUDGET_HELP)
@click.option("--max-items", type=click.IntRange(min=0), default=None,
              help="Create no new item once the store holds this many (default: [build] max_items; 0 = no bound). "
                   "[build] target_accepted_per_domain and max_items_per_segment bound it further.")
@click.option("--json", "as_json", is_flag=True, help="Print the outcome as JSON (README, \"--json\").")
@click.pass_context
def build(ctx: click.Context, budget: float | None, max_items: int | None, as_json: bool) -> None:
    """Create an item for every seed that has none and run the items through the state machine.

    With the in-process broker (the default) the items run to the end here, with a live display; with
    a Redis broker they are enqueued for `playlisteval worker` processes and the command returns.
    Before anything is created it checks every role's SDK, API key and price, and that the sim plays
    only on videos `synth` made.
    """
    from playlisteval.actors.build_run import build as run_build
    from playlisteval.actors.build_run import check

    settings = settings_of(ctx)
    check(settings)  # a configuration that cannot run is one message, before any display or item
    live, tick = _live_status(settings, as_json)
    with live:
        outcome = run_build(settings, budget=budget, on_tick=tick, max_items=max_items)
    sys.exit(_after_run(settings, outcome, f"created {outcome.created} item(s)", as_json, max_items))


@click.command(epilog=_EXIT_HELP)
@click.option("--budget", type=_BUDGET, default=None, help=_BUDGET_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print the outcome as JSON (README, \"--json\").")
@click.pass_context
def resume(ctx: click.Context, budget: float | None, as_json: bool) -> None:
    """Re-enqueue every unfinished item whose lease has expired (after a crash, a stop or a budget pause)."""
    from playlisteval.actors.build_run import check
    from playlisteval.actors.build_run import resume as run_resume

    settings = settings_of(ctx)
    check(settings)
    live, tick = _live_status(settings, as_json)
    with live:
        outcome = run_resume(settings, budget=budget, on_tick=tick)
    sys.exit(_after_run(settings, outcome, "resumed", as_json))


@click.command("retry-failed", epilog=_EXIT_HELP)
@click.option("--json", "as_json", is_flag=True, help='Print {"retried", "items", "states", "exit_code"} as JSON.')
@click.pass_context
def retry_failed(ctx: click.Context, as_json: bool) -> None:
    """Put failed items back in the state they failed in, and resume them."""
    from playlisteval.actors.broker import is_redis
    from playlisteval.actors.build_run import retry_failed as run_retry

    settings = settings_of(ctx)
    live, tick = _live_status(settings, as_json)
    with live:
        moved = run_retry(settings, on_tick=tick)
    code = _exit_code(settings, foreground=not is_redis(settings.broker.url)) if moved else exitcodes.DONE
    if as_json:
        from playlisteval.actors.build_run import status as read_status

        emit_json({"retried": len(moved), "items": sorted(moved), "states": read_status(settings).states,
                   "exit_code": code})
    else:
        console.print(f"retried {len(moved)} failed item(s)")
    sys.exit(code)


def _exit_code(settings: Any, foreground: bool = True) -> int:
    """After a run: paused by the budget, else failed items left, else — in this process's run — items
    still in a working state that no batch is holding (a step given back past its time limit: nothing
    in this process will send it again until `resume`), else done."""
    from playlisteval.actors.build_run import status as read_status
    from playlisteval.models.batch.run import live_requests
    from playlisteval.store import open_store
    from playlisteval.store.holders import held_elsewhere

    st = read_status(settings)
    if st.cancelled and foreground:
        return exitcodes.CANCELLED
    if st.paused:
        return exitcodes.PAUSED
    if st.states.get(State.FAILED.value, 0):
        return exitcodes.INCOMPLETE
    unfinished = sum(st.states.get(state.value, 0) for state in WORKING)
    if foreground and unfinished and held_elsewhere(open_store(settings)):
        return exitcodes.BUSY  # another build works on them: not this run's to resume
    if foreground and unfinished and not live_requests(open_store(settings)):
        return exitcodes.INCOMPLETE
    return exitcodes.DONE


def _after_run(settings: Any, outcome: Any, what: str, as_json: bool = False, max_items: int | None = None) -> int:
    """Say what happened (and why nothing did); the exit code (a build handed to Redis workers is done once
    enqueued)."""
    from playlisteval.actors.build_run import status as read_status
    from playlisteval.commands.build_hints import empty_build_hint
    from playlisteval.models.preflight import BUILD_ROLES, roles
    from playlisteval.models.simulated import is_simulated, uses_sim
    from playlisteval.store import open_store

    st = read_status(settings)
    code = _exit_code(settings) if outcome.foreground else exitcodes.DONE
    # simulated: the sim answered some of the build's calls, or the work just handed to the workers will be
    # answered by it (a build that only enqueued has no call in the store yet; issue 25)
    simulated = is_simulated(open_store(settings), "build") or bool(outcome.enqueued) and any(
        uses_sim(spec) for _, spec in roles(settings, BUILD_ROLES))
    failed = st.states.get(State.FAILED.value, 0)
    hint = None
    if not outcome.enqueued:
        hint = empty_build_hint(settings, outcome, max_items) if what != "resumed" else \
            "nothing to resume: no item is unfinished (`playlisteval status` shows them all)"
    if as_json:
        emit_json({"created": outcome.created, "processed": outcome.enqueued if outcome.foreground else 0,
                   "enqueued": 0 if outcome.foreground else outcome.enqueued, "states": st.states,
                   "failed": failed, "paused": st.paused, "spent_usd": st.spent_usd, "simulated": simulated,
                   "cancelled": st.cancelled, "cancellations": st.cancellations, "hint": hint, "exit_code": code})
        return code
    console.print()
    if outcome.foreground:
        console.print(f"{what}; {outcome.enqueued} item(s) processed")
    else:
        console.print(f"{what}; {outcome.enqueued} item(s) enqueued for `playlisteval worker` processes")
    if hint:
        console.print(f"  [cyan]hint[/] {hint}", highlight=False)
    if code == exitcodes.CANCELLED:
        unfinished = sum(st.states.get(state.value, 0) for state in WORKING)
        console.print(f"[yellow]cancelled:[/] the build was cancelled (`playlisteval cancel build`); "
                      f"{unfinished} item(s) left unfinished as they were, every committed step kept. "
                      "`playlisteval resume` continues them.", highlight=False)
    if st.paused:
        console.print(f"[yellow]paused:[/] {st.paused}\nRaise it with `playlisteval resume --budget USD`.")
    if failed:
        console.print(f"[red]{failed} item(s) failed[/]: `playlisteval status` shows why; "
                      "`playlisteval retry-failed` after fixing it")
    elif outcome.foreground and code == exitcodes.BUSY:
        from playlisteval.store.holders import held_elsewhere

        held = held_elsewhere(open_store(settings))
        who = ", ".join(f"{process}: {n} leased now" for process, n in sorted(held.items()))
        unfinished = sum(st.states.get(state.value, 0) for state in WORKING)
        console.print(f"[yellow]{unfinished} item(s) unfinished: another build holds them[/] ({who}) and finishes "
                      "them; `playlisteval status --watch` follows it (`resume` only if it stops)", highlight=False)
    elif outcome.foreground and code == exitcodes.INCOMPLETE:
        unfinished = sum(st.states.get(state.value, 0) for state in WORKING)
        console.print(f"[yellow]{unfinished} item(s) left unfinished[/] (a step given back, e.g. past its time "
                      "limit): `playlisteval resume` continues them")
    if simulated:
        console.print("[yellow]simulated:[/] the items were built by the sim world (synthetic playlists); "
                      "their spend is notional")
    return code


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
@click.option("--watch", is_flag=True,
              help="Keep the display live (e.g. while `playlisteval worker` processes build) until no item is "
                   "left in a working state; Ctrl-C leaves.")
@click.pass_context
def status(ctx: click.Context, as_json: bool, watch: bool) -> None:
    """Items per state, attempts, gate rejections, model calls and spend against the budget."""
    import time

    from playlisteval.build.spend import project_build, spend_by_purpose, spend_json
    from playlisteval.build.status import status as read_status  # counts: no engine, no broker
    from playlisteval.commands.build_hints import status_hint
    from playlisteval.store import open_store

    settings = settings_of(ctx)
    st = read_status(settings)
    if watch and not as_json:
        from playlisteval.models.call_rate import recent

        watched = open_store(settings)  # calls in flight, calls/s and 429s over the last seconds (issue 43)
        with Live(_status_table(st, calls=recent(watched)), console=console, refresh_per_second=2) as live:
            while any(st.states.get(s.value, 0) for s in WORKING) and not st.paused and not st.cancelled:
                time.sleep(1.0)
                st = read_status(settings)
                live.update(_status_table(st, calls=recent(watched)))
        return
    engine = open_store(settings)
    spends, projection = spend_by_purpose(settings, engine), project_build(settings, engine)
    if as_json:
        from playlisteval.analytics.provenance import provenance

        click.echo(json.dumps({**st.__dict__, "spend": spend_json(spends, projection),
                               "provenance": provenance(engine, settings, settings.select.benchmark)}, default=str))
        return
    console.print(_status_table(st, spends, projection))
    for item_id, error in st.failures[:10]:
        console.print(f"  [red]item {item_id} failed:[/] {error}", highlight=False)
    hint = status_hint(settings, st)
    if hint:
        console.print(f"  [cyan]hint[/] {hint}", highlight=False)


def _status_table(st: Any, spends: Any = None, projection: Any = None, calls: Any = None) -> Table:
    simulated = " — SIMULATED (sim world)" if st.simulated else ""
    table = Table(title=f"{st.items} item(s) from {st.seeds} seed(s){simulated}", show_header=True)
    table.add_column("state")
    table.add_column("items", justify="right")
    for state in State:
        n = st.states.get(state.value, 0)
        if n or state in (State.PENDING, State.ACCEPTED):
            table.add_row(state.value, str(n))
    table.add_section()
    table.add_row("attempts (Phase I / II)", f"{st.phase1_attempts} / {st.phase2_attempts}")
    if st.rejections:
        table.add_row("rejections", ", ".join(f"{g}: {n}" for g, n in sorted(st.rejections.items())))
    table.add_row("model calls (cache hits)", f"{st.calls} ({st.cache_hits})")
    budget = f" of {st.budget_usd:.2f}" if st.budget_usd else ""
    table.add_row("build spend (USD): paid + open reservations" + (", notional (sim)" if st.simulated else ""),
                  f"{st.paid_usd:.4f} + {st.reserved_usd:.4f} = {st.spent_usd:.4f}{budget}")
    if st.interrupted_usd:
        table.add_row("calls cut short (cost unknown, est.)", f"{st.interrupted_usd:.4f}")
    if calls is not None:  # `--watch`: every worker's calls, from the ledger (models/call_rate.py)
        table.add_row("calls open now (sent or waiting for a slot)", str(calls.open))
        table.add_row("calls in flight, last 10 s (mean, peak)", f"{calls.mean_in_flight:.1f}, {calls.peak}")
        table.add_row("calls/s, last 10 s", f"{calls.per_s:.1f}")
        table.add_row("429/503 refusals, last 10 s", f"{calls.refused} of {calls.tries}")
    if st.paused:
        table.add_row("[yellow]paused[/]", st.paused)
    if st.cancellations:  # recorded by `playlisteval cancel`, lifted by running the work again
        table.add_row("[yellow]cancellation pending[/]", ", ".join(st.cancellations))
    if spends is not None:
        _money_rows(table, spends, projection)
    for b in st.batches:  # open batches (issue 15): `playlisteval batches` shows them in full
        table.add_row(f"batch {b['id'] or '-'} ({b['state']})",
                      f"{b['spec']}: {b['answered']}/{b['requests']} answered, {b['age_s'] / 3600:.1f} h old, "
                      f"~{b['expected_usd']:.4f} USD")
    return table


def _money_rows(table: Table, spends: Any, projection: Any) -> None:
    """Spend per purpose against its budget (notional where the sim played), and the build's projection."""
    table.add_section()
    for p in spends:
        if p.purpose == "build" or not p.calls and p.purpose not in ("select", "eval"):
            continue  # the build's own row is above
        budget = f" of {p.budget_usd:.2f}" if p.budget_usd else ""
        table.add_row(f"{p.purpose} spend (USD)" + (", notional (sim)" if p.notional else ""),
                      f"{p.shown_usd:.4f}{budget} ({p.calls} call(s))")
    if projection is not None and projection.to_settle:
        usd = f"~{projection.usd:.4f}" if projection.usd is not None else "unknown"
        table.add_row("build to finish (USD, projected)",
                      f"{usd} for {projection.to_settle} item(s): {projection.basis}")


@click.command()
@click.option("--threads", type=int, default=None, help="Worker threads (default: [broker] threads).")
@click.pass_context
def worker(ctx: click.Context, threads: int | None) -> None:
    """Work the Redis queues (build items, index videos, the questions of `select`'s difficulty gate and of
    `eval judge` runs) until stopped; SIGTERM/SIGINT stop it cleanly.

    Start as many as you like, on as many machines as share the store (PostgreSQL across machines).
    Each also re-enqueues work whose lease expired or whose message was lost, so work a dead worker held
    is picked up. `dramatiq playlisteval.actors.tasks` (with PLAYLISTEVAL_PROJECT) serves the same queues.
    """
    from playlisteval.actors import App
    from playlisteval.actors.broker import is_redis
    from playlisteval.actors.workers import serve

    settings = settings_of(ctx)
    if not is_redis(settings.broker.url):
        raise click.UsageError("`worker` needs a Redis broker: set [broker] url = \"redis://…\" "
                               "(or PLAYLISTEVAL_BROKER__URL); with memory:// `build` runs the items itself")
    if threads:
        settings.broker.threads = threads
    import redis

    from playlisteval import logs

    redis.Redis.from_url(settings.broker.url, socket_connect_timeout=5).ping()  # down: one line (cli.py), not a loop
    # a line per unit of work (step.done, job.done) on stderr at the default verbosity: a server says what it does
    logs.configure(max(1, int(ctx.find_root().params.get("verbose") or 0)))
    serve(App(settings))


COMMANDS = [build, resume, retry_failed, status, worker]
