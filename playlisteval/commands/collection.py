"""Commands that collect and index playlists: synth, add, index (search: commands/search.py; remove:
commands/remove.py)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

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
    import gc
    import time

    from playlisteval.index import phases

    startup, t0, startup_cpu = phases.since_process_start(), time.perf_counter(), time.process_time()
    phases.reset()
    # the work's own modules (the actors, the store's tables, the index; ~0.75 s on one core, before any video
    # starts) as a phase of their own in --profile, with the store's opening
    with phases.timed("imports"):
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
    with phases.timed("imports"):
        engine = open_store(settings)
    changed, frozen = _changed_files(settings, engine)
    made: list[tuple[str, int, str]] = []
    # what start-up made (modules, classes, settings) lives as long as the process: the cyclic collector no
    # longer walks it at every full collection while the videos are read (issue 43: 3 such collections took
    # 0.15 s of a 5-minute camera-like index, under the GIL every index thread needs; 0.09 s frozen)
    gc.freeze()
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

        timing = {"profile": by_phase(time.perf_counter() - t0, startup, report.video_seconds, startup_cpu)}
        print_profile(timing["profile"])
    if not as_json:
        print_index_report(report, engine, settings)
        print_unreachable(engine, settings)
        print_versions(made)
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


def print_versions(made: list[tuple[str, int, str]]) -> None:
    for name, version, digest in made:
        console.print(f"benchmark {name!r} changed: version {version} ({digest[:12]}); version {version - 1} stays "
                      f"readable (`playlisteval leaderboard --version {version - 1}`)", highlight=False)


COMMANDS = [synth, add, index]
