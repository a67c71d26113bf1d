"""`playlisteval remove`: videos, playlists or domains taken out of the collection (media files untouched)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from playlisteval.commands.collection import print_versions
from playlisteval.commands.support import console, emit_json, settings_of


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
    print_versions(made)
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


COMMANDS = [remove]
