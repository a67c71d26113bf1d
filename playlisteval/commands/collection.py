"""Commands that collect and index playlists: synth, add, index, search."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click
from rich.markup import escape
from rich.table import Table

from playlisteval.commands import exitcodes
from playlisteval.commands.support import console, emit_json, err_console, progress_bar, settings_of
from playlisteval.commands.variant_index import MODALITY_HELP, VARIANT_HELP
from playlisteval.errors import MediaError


@click.command()
@click.argument("out", type=click.Path(file_okay=False, path_type=Path))
@click.option("--domains", type=click.IntRange(min=1), default=2, show_default=True, help="Number of domains.")
@click.option("--playlists", type=click.IntRange(min=1), default=1, show_default=True, help="Playlists per domain.")
@click.option("--videos", type=click.IntRange(min=1), default=3, show_default=True, help="Videos per playlist.")
@click.option("--minutes", type=click.FloatRange(min=0, min_open=True), default=3.0, show_default=True,
              help="Minutes per video.")
@click.option("--seed", default=0, show_default=True, help="Random seed (same seed, same videos).")
@click.option("--vp9", type=click.IntRange(min=0), default=1, show_default=True,
              help="How many videos (the last ones) to write as VP9/Opus WebM instead of H.264/AAC MP4.")
@click.option("--force", is_flag=True, help="Write over a collection already in OUT (its videos change in place: "
                                            "`playlisteval index` then re-indexes them).")
def synth(out: Path, domains: int, playlists: int, videos: int, minutes: float, seed: int, vp9: int,
          force: bool) -> None:
    """Write synthetic playlists for the offline sim world.

    Each video (MP4, or WebM for the last --vp9 ones) gets WebVTT captions of its narration and a
    .world.json with every scene's facts. OUT/manifest.csv lists them all for `add --manifest`. A folder
    that already holds a collection (a manifest.csv) is left alone unless --force (issue 22).
    """
    from rich.progress import Progress

    from playlisteval.errors import ConfigError
    from playlisteval.world.synth.make import make_collection

    if (out / "manifest.csv").exists() and not force:
        raise ConfigError(f"{out / 'manifest.csv'}: {out} already holds a collection; nothing was written. Pass "
                          "--force to write over it, or give another folder")

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
@click.option("--allow-duplicate", is_flag=True,
              help="Add files whose content is already in the collection under another domain or playlist.")
@click.option("--json", "as_json", is_flag=True, help="Print what was added as JSON (README, \"--json\").")
@click.pass_context
def add(ctx: click.Context, domain: str | None, paths: tuple[Path, ...], manifest: Path | None,
        allow_duplicate: bool, as_json: bool) -> None:
    """Add videos to DOMAIN: each folder is a playlist; a file joins the playlist of its folder.

    A PATH (or a manifest row's file) that does not exist is an error, and nothing is added. Corrupt,
    zero-length or non-video entries are reported and skipped (add them again once repaired). A file
    whose content is already in the collection under another domain or playlist is reported and not
    added, unless --allow-duplicate. Adding the same files again changes nothing; only new videos are
    indexed next. `playlisteval remove` undoes an add.

    A manifest with bad rows (a missing column or file, a control character, a title over 1,000
    characters, the same file twice with different titles) is refused whole, every bad row named;
    a row that repeats another exactly is merged and said. A file or folder whose name is not UTF-8
    is skipped with its name escaped (each such byte as \\xNN): rename it to UTF-8 and add again.
    """
    from playlisteval.index.collection import add_manifest, add_paths
    from playlisteval.index.fsnames import shown
    from playlisteval.index.manifest import read_manifest
    from playlisteval.store import open_store
    from playlisteval.store.media_paths import outside_every_root

    if manifest is not None:  # every bad row, a missing file's included, named at once (issue 44)
        read_manifest(manifest, require_files=True)
    missing = [shown(p) for p in paths if not p.expanduser().exists()]
    if missing:
        listed = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        raise MediaError(listed, "no such file or folder; nothing was added")
    if manifest is None and not (domain and paths):
        raise click.UsageError("give DOMAIN and PATH…, or --manifest FILE")
    if manifest is None and domain is not None:
        from playlisteval.index.names import name_problem

        problem = name_problem("domain", domain)
        if problem:
            raise click.BadParameter(f"{problem}; nothing was added", param_hint="DOMAIN")
    engine = open_store(settings_of(ctx))
    if manifest is not None:
        report = add_manifest(engine, manifest, allow_duplicate=allow_duplicate)
    else:
        assert domain is not None
        report = add_paths(engine, domain, list(paths), allow_duplicate=allow_duplicate)
    found = report.added or report.unchanged or report.duplicates or report.changed  # skipped ones are not in it
    outside = outside_every_root(engine, report.added)
    if outside:  # stored absolute: a copy or a move of the project would still read them here (issue 41)
        report.warnings.append(f"{len(outside)} video(s) lie outside the project folder and every media root "
                               f"(e.g. {outside[0]}): stored by absolute path; `playlisteval media-root set NAME "
                               "FOLDER` stores them under a name that one command re-points")
    if as_json:
        emit_json(report.as_dict())
    else:
        _print_add_report(report)
    if not found:  # an empty folder or manifest: said, and not exit 0 (a script would go on to `index`)
        where = str(manifest) if manifest is not None else ", ".join(shown(p) for p in paths[:5])
        err_console.print(f"[yellow]note:[/] no video in {where} was added or is in the collection "
                          "(an empty folder or manifest, or every file skipped)", highlight=False)
        sys.exit(exitcodes.INCOMPLETE)


def _print_add_report(report: Any) -> None:
    console.print(report.summary())
    for skipped in report.skipped:
        console.print(f"  [yellow]skipped[/] {skipped.path}: {skipped.reason}", highlight=False)
    for merged in report.merged:
        console.print(f"  [yellow]repeated row[/] {merged}", highlight=False)
    for warning in report.warnings:
        console.print(f"  [yellow]warning[/] {warning}", highlight=False)
    for path in report.changed:
        console.print(f"  [yellow]changed on disk[/] {path}: its content is not what was indexed; the next "
                      "`playlisteval index` indexes it again (and drops what the old content made)", highlight=False)
    refused = [d for d in report.duplicates if not d.added]
    for dup in report.duplicates:
        what = "added although" if dup.added else "not added:"
        console.print(f"  [yellow]{what} already in the collection[/] {dup.path} is {dup.existing} "
                      "(same content)", highlight=False)
    if refused:
        console.print("  `playlisteval add --allow-duplicate …` adds such files anyway; "
                      "`playlisteval remove` takes back an add", highlight=False)
    if report.added or report.changed:
        console.print("next: `playlisteval index`", highlight=False)


@click.command()
@click.option("--threads", type=int, help="Worker threads in this process (default: [index] threads).")
@click.option("--embedder", help="Embedder for the chunk vectors (default: [index] embedder).")
@click.option("--json", "as_json", is_flag=True, help="Print what was done as JSON (README, \"--json\").")
@click.option("--profile", is_flag=True,
              help="Print the time by phase (start-up, model load, probe, decode, OCR, ASR, embedding, store), "
                   "each with its CPU seconds and the process's CPU, on stderr; with --json also under \"profile\".")
@click.option("--variant", metavar="NAME", help=VARIANT_HELP)
@click.option("--modality", help=MODALITY_HELP)
@click.option("--frames-per-chunk", type=click.IntRange(min=0), default=0,
              help="Frames per chunk a visual variant reads (paper Fig. 8: 4, 8, 16; at most [index] vl_max_frames).")
@click.option("--dims", type=click.IntRange(min=0), default=0,
              help="Width of the variant's vectors: the embedder truncated to DIMS (Matryoshka, paper Fig. 8).")
@click.pass_context
def index(ctx: click.Context, threads: int | None, embedder: str | None, as_json: bool, profile: bool,
          variant: str | None = None, modality: str | None = None, frames_per_chunk: int = 0,
          dims: int = 0) -> None:
    """Index what is new: 30-s chunks, transcripts, on-screen text, vectors, then segments,
    near-duplicates and seeds.

    Each video is one message on the "index" queue. By default worker threads in this process do the
    work; with a Redis broker, `playlisteval worker` processes on other machines share it. Videos
    already indexed are not touched again unless their file changed in place (a new SHA-256): then
    what the old content made goes (as with `remove`; a selected benchmark gets its next version,
    the old one stays readable) and the video is indexed again. Vectors whose content did not change are kept. Videos
    skipped for a reason other than their file (a setting, a crash) are tried again once the [index]
    settings changed. Exit status 3 when videos failed or were left unfinished.
    """
    import time

    from playlisteval.index import phases

    startup, t0 = phases.since_process_start(), time.perf_counter()
    phases.reset()
    from playlisteval.actors.indexing import index_collection
    from playlisteval.commands.index_output import index_exit, index_json, print_index_report, print_unreachable
    from playlisteval.store import open_store

    settings = settings_of(ctx)
    if threads is not None:
        settings.index.threads = threads
    if (modality or frames_per_chunk or dims) and not variant:
        raise click.UsageError("--modality, --frames-per-chunk and --dims describe a variant: give --variant NAME")
    variant_embedder, embedder = (embedder, None) if variant else (None, embedder)  # a variant's, not the index's
    if embedder:
        settings.index.embedder = embedder
    engine = open_store(settings)
    changed, frozen = _changed_files(settings, engine)
    made: list[tuple[str, int, str]] = []
    try:
        with progress_bar("index", "") as tick:  # videos, chunks, then segments and seeds
            report = index_collection(settings, engine, progress=tick, changed=changed)
    finally:
        if frozen:
            from playlisteval.select import versions

            made = versions.advance(engine, "index")
    timing: dict[str, Any] = {}
    if profile:
        from playlisteval.commands.index_profile import print_profile
        from playlisteval.commands.index_profile import profile as by_phase

        timing = {"profile": by_phase(time.perf_counter() - t0, startup, report.video_seconds)}
        print_profile(timing["profile"])
    if not as_json:
        print_index_report(report, engine, settings)
        print_unreachable(engine, settings)
        _print_versions(made)
    made_variant, variant_exit = {}, exitcodes.DONE
    if variant:  # issue 20: a retriever variant's vectors beside the default ones
        from playlisteval.commands.variant_index import make_variant

        vjson, variant_exit = make_variant(settings, engine, variant, variant_embedder, modality, frames_per_chunk,
                                           dims, as_json)
        made_variant = {"variant": vjson}
    if as_json:
        emit_json({**index_json(report, engine, settings), **timing, **made_variant, "benchmark_versions": [
            {"benchmark": n, "version": v, "content_hash": h} for n, v, h in made]})
    ctx.exit(index_exit(report) or variant_exit)


def _changed_files(settings: Any, engine: Any) -> tuple[Any, bool]:
    """The videos changed in place (index/changes.py), and whether benchmarks were frozen first: when the
    old content holds finished items, each benchmark's live version keeps its export and leaderboard, as
    before a `remove --force` (issue 22)."""
    from playlisteval.index import changes

    found = changes.detect(engine)
    if not changes.finished_items(engine, found):
        return found, False
    from playlisteval.select import versions

    versions.freeze_all(settings, engine)
    return found, True


def _print_versions(made: list[tuple[str, int, str]]) -> None:
    for name, version, digest in made:
        console.print(f"benchmark {name!r} changed: version {version} ({digest[:12]}); version {version - 1} stays "
                      f"readable (`playlisteval leaderboard --version {version - 1}`)", highlight=False)


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
    from playlisteval.index.search import UnknownDomain, check_searchable, unreachable_videos
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
    unreachable = unreachable_videos(engine, model, domain)
    if unreachable:  # issue 44: the answer below cannot come from them, however well they would match
        where = f"domain {domain!r}" if domain else "the collection"
        err_console.print(f"[yellow]warning:[/] {len(unreachable)} indexed video(s) of {where} have no vector "
                          "(no speech, captions or on-screen text) and can never be found: "
                          f"{escape(', '.join(u.path for u in unreachable[:3]))}{' …' if len(unreachable) > 3 else ''}",
                          highlight=False, soft_wrap=True)
    if not hits:  # the collection has vectors, but none in this domain (its videos skipped or duplicates)
        err_console.print(f"no chunk of domain {domain!r} is indexed with {model.name}: `playlisteval index` "
                          "indexes new videos (`playlisteval status` and `index` say which were skipped)",
                          highlight=False)
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


@click.command()
@click.argument("videos", nargs=-1, type=click.Path(path_type=Path))
@click.option("--playlist", "playlists", multiple=True, metavar="DOMAIN/PLAYLIST", help="A playlist to remove.")
@click.option("--domain", "domains", multiple=True, help="A domain to remove, with all its playlists.")
@click.option("--force", is_flag=True,
              help="Also remove accepted, selected and too-easy items built on them (with their pairs, "
                   "benchmark entries and judgments).")
@click.option("--dry-run", is_flag=True, help="Say what would be removed, and remove nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print what was (or would be) removed as JSON.")
@click.pass_context
def remove(ctx: click.Context, videos: tuple[Path, ...], playlists: tuple[str, ...], domains: tuple[str, ...],
           force: bool, dry_run: bool, as_json: bool) -> None:
    """Take videos out of the collection: VIDEOS (files, or folders: every video under them), --playlist
    DOMAIN/PLAYLIST or --domain DOMAIN.

    Their chunks, vectors, segments and seeds go, and so do the items built on those seeds with their
    history (the model calls stay on the ledger: money spent stays spent). Removing accepted, selected or
    too-easy items needs --force. Media files are never touched. Run `playlisteval index` afterwards: it
    re-checks videos that were near-duplicates of removed ones and builds their seeds.
    """
    from playlisteval.index.removal import remove as run_remove
    from playlisteval.store import open_store

    if not (videos or playlists or domains):
        raise click.UsageError("name what to remove: VIDEO files or folders, --playlist DOMAIN/PLAYLIST or --domain")
    settings = settings_of(ctx)
    engine = open_store(settings)
    made: list[tuple[str, int, str]] = []
    if dry_run:
        removal = run_remove(engine, videos=list(videos), playlists=list(playlists), domains=list(domains),
                             force=force, dry_run=True)
    else:
        made, removal = _remove_versioned(settings, engine, videos=list(videos), playlists=list(playlists),
                                          domains=list(domains), force=force)
    if as_json:
        emit_json({**removal.as_dict(), "benchmark_versions": [
            {"benchmark": n, "version": v, "content_hash": h} for n, v, h in made]})
        return
    _print_versions(made)
    verb = "would remove" if dry_run else "removed"
    items = len(removal.items_not_started) + len(removal.items_started) + (
        len(removal.items_protected) if force or dry_run else 0)
    console.print(f"{verb} {len(removal.videos)} video(s): {removal.chunks} chunk(s), {removal.vectors} vector(s), "
                  f"{removal.segments} segment(s), {removal.seeds} seed(s), {items} item(s)", highlight=False)
    if removal.items_started:
        console.print(f"  {len(removal.items_started)} of the items had been worked on: their history goes, their "
                      "model calls stay on the ledger", highlight=False)
    if removal.items_protected:
        shown = ", ".join(f"{i} ({s})" for i, s in removal.items_protected[:10])
        console.print(f"  [yellow]finished items[/] {shown}" + ("" if force else ": need --force"), highlight=False)
    for name in removal.playlists:
        console.print(f"  playlist {name} {'would be' if dry_run else 'is'} empty: removed", highlight=False)
    for name in removal.domains:
        console.print(f"  domain {name} {'would have' if dry_run else 'has'} no playlist left: removed",
                      highlight=False)
    if removal.rechecked:
        console.print(f"  {len(removal.rechecked)} video(s) were near-duplicates of removed ones: the next "
                      "`playlisteval index` checks them again", highlight=False)
    if not dry_run:
        console.print("media files were not touched; next: `playlisteval index` (segments, near-duplicates, "
                      "seeds)", highlight=False)


def _remove_versioned(settings: Any, engine: Any, **targets: Any) -> tuple[list[tuple[str, int, str]], Any]:
    """Run a removal that may change selected benchmarks (issue 22): when it takes finished items (the only
    ones a benchmark holds), each benchmark's live version is frozen first (its export and leaderboard
    kept), and one whose pairs changed gets its next version after."""
    from playlisteval.index.removal import remove as run_remove
    from playlisteval.select import versions

    plan = run_remove(engine, **targets, dry_run=True)
    if not (plan.items_protected and targets.get("force")):
        return [], run_remove(engine, **targets)
    versions.freeze_all(settings, engine)
    try:
        removal = run_remove(engine, **targets)
    finally:
        made = versions.advance(engine, "remove")  # a refused removal changed nothing: the copies are dropped
    return made, removal


COMMANDS = [synth, add, index, search, remove]
