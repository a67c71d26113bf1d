"""Commands that collect and index playlists: synth, add, index, search."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from rich.table import Table

from playlisteval.cli_support import console, err_console, settings_of
from playlisteval.errors import MediaError


@click.command()
@click.argument("out", type=click.Path(file_okay=False, path_type=Path))
@click.option("--domains", default=2, show_default=True, help="Number of domains.")
@click.option("--playlists", default=1, show_default=True, help="Playlists per domain.")
@click.option("--videos", default=3, show_default=True, help="Videos per playlist.")
@click.option("--minutes", default=3.0, show_default=True, help="Minutes per video.")
@click.option("--seed", default=0, show_default=True, help="Random seed (same seed, same videos).")
@click.option("--vp9", default=1, show_default=True,
              help="How many videos (the last ones) to write as VP9/Opus WebM instead of H.264/AAC MP4.")
def synth(out: Path, domains: int, playlists: int, videos: int, minutes: float, seed: int, vp9: int) -> None:
    """Write synthetic playlists for the offline sim world.

    Each video (MP4, or WebM for the last --vp9 ones) gets WebVTT captions of its narration and a
    .world.json with every scene's facts. OUT/manifest.csv lists them all for `add --manifest`.
    """
    from rich.progress import Progress

    from playlisteval.synth.make import make_collection

    total = domains * playlists * videos
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("rendering synthetic videos", total=total)
        paths = make_collection(out, domains=domains, playlists=playlists, videos=videos, minutes=minutes,
                                seed=seed, vp9=vp9, progress=lambda msg: progress.advance(task))
    console.print(f"wrote {len(paths)} videos under {out}; manifest: {out / 'manifest.csv'}")


@click.command()
@click.argument("domain", required=False)
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--manifest", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="CSV or JSON manifest: domain, playlist, title, path[, url, position].")
@click.pass_context
def add(ctx: click.Context, domain: str | None, paths: tuple[Path, ...], manifest: Path | None) -> None:
    """Add videos to DOMAIN: each folder is a playlist; a file joins the playlist of its folder.

    A PATH (or a manifest row's file) that does not exist is an error, and nothing is added. Corrupt,
    zero-length or non-video entries are reported and skipped. Adding again changes nothing; new
    videos are the only ones indexed next.
    """
    from playlisteval.index.collection import add_manifest, add_paths
    from playlisteval.index.manifest import read_manifest
    from playlisteval.store import open_store

    listed = list(paths) if manifest is None else [e.path for e in read_manifest(manifest) if e.path is not None]
    missing = [str(p) for p in listed if not p.expanduser().exists()]
    if missing:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        where = f" (listed in {manifest})" if manifest is not None else ""
        raise MediaError(shown, f"no such file or folder{where}; nothing was added")
    engine = open_store(settings_of(ctx))
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


@click.command()
@click.option("--threads", type=int, help="Worker threads in this process (default: [index] threads).")
@click.option("--embedder", help="Embedder for the chunk vectors (default: [index] embedder).")
@click.pass_context
def index(ctx: click.Context, threads: int | None, embedder: str | None) -> None:
    """Index what is new: 30-s chunks, transcripts, on-screen text, vectors, then segments,
    near-duplicates and seeds.

    Each video is one message on the "index" queue. By default worker threads in this process do the
    work; with a Redis broker, `playlisteval worker` processes on other machines share it. Videos
    already indexed are not touched again, and vectors whose content did not change are kept.
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from playlisteval.index.pipeline import index_collection
    from playlisteval.store import open_store

    settings = settings_of(ctx)
    if threads is not None:
        settings.index.threads = threads
    if embedder:
        settings.index.embedder = embedder
    engine = open_store(settings)
    columns = (TextColumn("{task.description:<9}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as progress:
        tasks: dict[str, Any] = {}

        def tick(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                tasks[stage] = progress.add_task(stage, total=total)
            progress.update(tasks[stage], completed=done, total=total)

        report = index_collection(settings, engine, progress=tick)
    _print_index_report(report)


def _print_index_report(report: Any) -> None:
    sources = ", ".join(f"{n} from {src}" for src, n in sorted(report.transcript_sources.items())) or "none"
    if report.no_text:  # still chunks (a visual embedder finds them), but no words to search by
        sources += f"; {report.no_text} with no text"
    rtf = f", {report.video_seconds / report.seconds:.1f}x real time" if report.video_seconds and report.seconds else ""
    console.print(
        f"indexed {report.videos_indexed} video(s) in {report.seconds:.1f}s{rtf}: {report.chunks} chunks "
        f"(transcripts: {sources}); on-screen text: {report.ocr_read} frame(s) read, {report.ocr_reused} "
        f"unchanged; vectors {report.embedded} computed, {report.reused} reused; "
        f"{report.segments.segments} segment(s); seeds {report.seeds.inserted} new of {report.seeds.candidates}",
        highlight=False,
    )
    for model, n in sorted(report.transcript_models.items()):
        console.print(f"  speech recognised by {model}: {n} chunk(s)", highlight=False)
    for dup in report.segments.duplicates:
        console.print(f"  [yellow]near-duplicate[/] {dup}", highlight=False)
    for skipped in report.skipped:
        console.print(f"  [yellow]skipped[/] {skipped.path}: {skipped.reason}", highlight=False)
    for failed in report.failed:
        console.print(f"  [red]failed[/] {failed.path}: {failed.reason}", highlight=False)
    if report.unfinished:
        console.print(f"  [yellow]not finished[/] {len(report.unfinished)} video(s) still queued or failing; "
                      "run `playlisteval index` again (or look at the workers' logs)", highlight=False)
    for warning in report.warnings:
        console.print(f"  [yellow]warning[/] {warning}", highlight=False)


@click.command()
@click.argument("query")
@click.option("--domain", help="Search only this domain (an unknown one is an error that lists the known ones).")
@click.option("--k", default=10, show_default=True, type=click.IntRange(min=1), help="How many chunks to return.")
@click.option("--embedder", help="Embedder name (default: [index] embedder).")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list of {path, start, end, score}.")
@click.pass_context
def search(ctx: click.Context, query: str, domain: str | None, k: int, embedder: str | None, as_json: bool) -> None:
    """The top chunks for a text QUERY, with their video, start and end seconds and score (cosine).

    Warns when even the best score is below [index] search_no_match: then nothing indexed is likely
    about the query, whatever comes first.
    """
    # only what a query needs is imported: no OCR, no video decoding, no torch (tests/test_search_cli.py)
    from playlisteval.index.embedders import get_embedder
    from playlisteval.index.search import UnknownDomain, check_searchable
    from playlisteval.index.search import search as run_search
    from playlisteval.store import open_store

    if not query.strip():
        raise click.BadParameter("the query is empty", param_hint="QUERY")
    settings = settings_of(ctx)
    engine = open_store(settings)
    model = get_embedder(embedder or settings.index.embedder, settings.index.embedding_dims, settings.index)
    try:
        check_searchable(engine, model.name, domain)
    except UnknownDomain as exc:
        raise click.BadParameter(str(exc), param_hint="--domain") from None
    hits = run_search(settings, engine, query, domain=domain, k=k, embedder=model)
    floor = settings.index.search_no_match
    if hits and hits[0].score < floor:
        err_console.print(f"[yellow]warning:[/] the best score, {hits[0].score:.3f}, is below the no-match floor "
                          f"{floor:g} (\\[index] search_no_match): nothing indexed is likely about this query",
                          highlight=False)
    if as_json:
        click.echo(json.dumps([{"path": h.path, "start": h.start, "end": h.end, "score": h.score} for h in hits]))
        return
    table = Table("score", "video", "start", "end")
    for h in hits:
        table.add_row(f"{h.score:.3f}", h.path, f"{h.start:.0f}", f"{h.end:.0f}")
    console.print(table)


COMMANDS = [synth, add, index, search]
