"""The `playlisteval` command line: parse, call a service, print. Errors become one clear message."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.live import Live
from rich.table import Table

from playlisteval import logs
from playlisteval.config import load_settings, write_project
from playlisteval.errors import PlaylistEvalError
from playlisteval.state import State

console = Console()
err_console = Console(stderr=True)


class _Group(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except PlaylistEvalError as exc:
            err_console.print(f"[bold red]error:[/] {exc}", highlight=False)
            sys.exit(1)


def _settings(ctx: click.Context) -> Any:
    return load_settings(ctx.obj["project"])


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--project", "-p", type=click.Path(file_okay=False, path_type=Path), default=None,
              envvar="PLAYLISTEVAL_PROJECT",
              help="Project directory (holds playlisteval.toml). Default: the current directory or a parent.")
@click.option("-v", "--verbose", count=True, help="More log output (-v info, -vv debug).")
@click.pass_context
def main(ctx: click.Context, project: Path | None, verbose: int) -> None:
    """Build video-language judge benchmarks from video playlists, then evaluate judges and retrievers.

    \b
    A first run, offline:
      playlisteval init demo && cd demo
      playlisteval synth videos            # synthetic playlists with known facts
      playlisteval add Education videos/Education/*
      playlisteval index                   # chunks, transcripts, vectors, segments, seeds
      playlisteval build                   # questions, gold answers, graded wrong answers
      playlisteval status
    """
    logs.configure(verbose)
    ctx.obj = {"project": project}


@main.command()
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path), default=".")
@click.option("--force", is_flag=True, help="Overwrite an existing playlisteval.toml.")
def init(directory: Path, force: bool) -> None:
    """Create a project in DIRECTORY: a commented playlisteval.toml whose defaults run offline."""
    path = write_project(directory, force=force)
    console.print(f"wrote {path}\nEvery role runs on the offline [bold]sim[/] world; edit \\[models] to use real models.")


@main.command()
@click.argument("out", type=click.Path(file_okay=False, path_type=Path))
@click.option("--domains", default=2, show_default=True, help="Number of domains.")
@click.option("--playlists", default=1, show_default=True, help="Playlists per domain.")
@click.option("--videos", default=3, show_default=True, help="Videos per playlist.")
@click.option("--minutes", default=3.0, show_default=True, help="Minutes per video.")
@click.option("--seed", default=0, show_default=True, help="Random seed (same seed, same videos).")
def synth(out: Path, domains: int, playlists: int, videos: int, minutes: float, seed: int) -> None:
    """Write synthetic playlists (video, captions, .world.json facts) for the offline sim world."""
    from playlisteval.synth.make import make_collection

    with console.status("rendering synthetic videos…") as status:
        paths = make_collection(out, domains=domains, playlists=playlists, videos=videos, minutes=minutes,
                                seed=seed, progress=lambda msg: status.update(msg))
    console.print(f"wrote {len(paths)} videos under {out}")


@main.command()
@click.argument("domain", required=False)
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--manifest", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="CSV or JSON manifest: domain, playlist, title, path[, url, position].")
@click.pass_context
def add(ctx: click.Context, domain: str | None, paths: tuple[Path, ...], manifest: Path | None) -> None:
    """Add videos to DOMAIN: each folder is a playlist; a file joins the playlist of its folder.

    Missing, corrupt, zero-length or non-video entries are reported and skipped. Adding again changes
    nothing; new videos are the only ones indexed next.
    """
    from playlisteval.index.collection import add_manifest, add_paths
    from playlisteval.store import open_store

    engine = open_store(_settings(ctx))
    if manifest is not None:
        report = add_manifest(engine, manifest)
    elif domain and paths:
        report = add_paths(engine, domain, list(paths))
    else:
        raise click.UsageError("give DOMAIN and PATH…, or --manifest FILE")
    _print_add_report(report)


def _print_add_report(report: Any) -> None:
    console.print(report.summary())
    for skipped in report.skipped:
        console.print(f"  [yellow]skipped[/] {skipped.path}: {skipped.reason}", highlight=False)


@main.command()
@click.pass_context
def index(ctx: click.Context) -> None:
    """Index new videos: 30-s chunks, transcripts, vectors, segments, near-duplicates, seeds."""
    from rich.progress import Progress

    from playlisteval.index.pipeline import index_collection
    from playlisteval.store import open_store

    settings = _settings(ctx)
    engine = open_store(settings)
    with Progress(console=console, transient=True) as progress:
        tasks: dict[str, Any] = {}

        def tick(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                tasks[stage] = progress.add_task(stage, total=total)
            progress.update(tasks[stage], completed=done, total=total)

        report = index_collection(settings, engine, progress=tick)
    _print_index_report(report)


def _print_index_report(report: Any) -> None:
    sources = ", ".join(f"{n} from {src}" for src, n in sorted(report.transcript_sources.items())) or "none"
    console.print(
        f"indexed {report.videos_indexed} video(s) in {report.seconds:.1f}s: {report.chunks} chunks "
        f"(transcripts: {sources}); vectors {report.embedded} computed, {report.reused} reused; "
        f"{report.segments.segments} segment(s); seeds {report.seeds.inserted} new of {report.seeds.candidates}"
    )
    for dup in report.segments.duplicates:
        console.print(f"  [yellow]near-duplicate[/] {dup}", highlight=False)
    for skipped in report.skipped:
        console.print(f"  [yellow]skipped[/] {skipped.path}: {skipped.reason}", highlight=False)
    for warning in report.warnings:
        console.print(f"  [yellow]warning[/] {warning}", highlight=False)


@main.command()
@click.argument("query")
@click.option("--domain", help="Search only this domain.")
@click.option("--k", default=10, show_default=True, help="How many chunks to return.")
@click.option("--embedder", help="Embedder name (default: [index] embedder).")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list of {path, start, end, score}.")
@click.pass_context
def search(ctx: click.Context, query: str, domain: str | None, k: int, embedder: str | None, as_json: bool) -> None:
    """The top chunks for a text QUERY, with their video, start and end seconds and score."""
    from playlisteval.index.pipeline import search as run_search
    from playlisteval.store import open_store

    settings = _settings(ctx)
    hits = run_search(settings, open_store(settings), query, domain=domain, k=k, embedder=embedder)
    if as_json:
        click.echo(json.dumps([{"path": h.path, "start": h.start, "end": h.end, "score": h.score} for h in hits]))
        return
    table = Table("score", "video", "start", "end")
    for h in hits:
        table.add_row(f"{h.score:.3f}", h.path, f"{h.start:.0f}", f"{h.end:.0f}")
    console.print(table)


def _live_status(settings: Any) -> tuple[Live, Any]:
    from playlisteval.build import status as read_status

    live = Live(_status_table(read_status(settings)), console=console, refresh_per_second=4, transient=False)

    def tick() -> None:
        live.update(_status_table(read_status(settings)))

    return live, tick


_BUDGET_HELP = "Budget in USD for this build's model calls (0 = none). The build pauses when it is reached."


@main.command()
@click.option("--budget", type=float, default=None, help=_BUDGET_HELP)
@click.pass_context
def build(ctx: click.Context, budget: float | None) -> None:
    """Create an item for every seed that has none and run the items through the state machine.

    With the in-process broker (the default) the items run to the end here, with a live display; with
    a Redis broker they are enqueued for `playlisteval worker` processes and the command returns.
    """
    from playlisteval.build import build as run_build

    settings = _settings(ctx)
    live, tick = _live_status(settings)
    with live:
        outcome = run_build(settings, budget=budget, on_tick=tick)
    _after_run(settings, outcome, f"created {outcome.created} item(s)")


@main.command()
@click.option("--budget", type=float, default=None, help=_BUDGET_HELP)
@click.pass_context
def resume(ctx: click.Context, budget: float | None) -> None:
    """Re-enqueue every unfinished item whose lease has expired (after a crash, a stop or a budget pause)."""
    from playlisteval.build import resume as run_resume

    settings = _settings(ctx)
    live, tick = _live_status(settings)
    with live:
        outcome = run_resume(settings, budget=budget, on_tick=tick)
    _after_run(settings, outcome, "resumed")


@main.command("retry-failed")
@click.pass_context
def retry_failed(ctx: click.Context) -> None:
    """Put failed items back in the state they failed in, and resume them."""
    from playlisteval.build import retry_failed as run_retry

    settings = _settings(ctx)
    live, tick = _live_status(settings)
    with live:
        moved = run_retry(settings, on_tick=tick)
    console.print(f"retried {len(moved)} failed item(s)")


def _after_run(settings: Any, outcome: Any, what: str) -> None:
    from playlisteval.build import status as read_status

    console.print()
    if outcome.foreground:
        console.print(f"{what}; {outcome.enqueued} item(s) processed")
    else:
        console.print(f"{what}; {outcome.enqueued} item(s) enqueued for `playlisteval worker` processes")
    st = read_status(settings)
    if st.paused:
        console.print(f"[yellow]paused:[/] {st.paused}\nRaise it with `playlisteval resume --budget USD`.")


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """Items per state, attempts, gate rejections, model calls and spend against the budget."""
    from playlisteval.build import status as read_status

    st = read_status(_settings(ctx))
    if as_json:
        click.echo(json.dumps(st.__dict__, default=str))
        return
    console.print(_status_table(st))
    for item_id, error in st.failures[:10]:
        console.print(f"  [red]item {item_id} failed:[/] {error}", highlight=False)


def _status_table(st: Any) -> Table:
    table = Table(title=f"{st.items} item(s) from {st.seeds} seed(s)", show_header=True)
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
    table.add_row("spend (USD)", f"{st.spent_usd:.4f}{budget}")
    if st.paused:
        table.add_row("[yellow]paused[/]", st.paused)
    return table


@main.command()
@click.option("--threads", type=int, default=None, help="Worker threads (default: [broker] threads).")
@click.pass_context
def worker(ctx: click.Context, threads: int | None) -> None:
    """Run build actors from the Redis queue until stopped (SIGTERM/SIGINT stop it cleanly)."""
    from playlisteval.actors import App
    from playlisteval.broker import is_redis
    from playlisteval.workers import serve

    settings = _settings(ctx)
    if not is_redis(settings.broker.url):
        raise click.UsageError("`worker` needs a Redis broker: set [broker] url = \"redis://…\" "
                               "(or PLAYLISTEVAL_BROKER__URL); with memory:// `build` runs the items itself")
    if threads:
        settings.broker.threads = threads
    serve(App(settings))


if __name__ == "__main__":
    main()
