"""`media-root`: name the folders outside the project that videos live in, and re-point them (issue 41)."""

from __future__ import annotations

import click
from rich.table import Table
from rich.text import Text

from playlisteval.commands import exitcodes
from playlisteval.commands.support import console, emit_json, err_console, settings_of


@click.group("media-root")
def media_root_group() -> None:
    """Folders outside the project that videos are stored under by name, so that moving the media (or
    opening a copy of the project where they are mounted elsewhere) is one command.

    \b
    Videos inside the project folder are stored relative to it and need nothing: a copy of the
    project (`cp -a`) reads its own files. Videos elsewhere are stored by absolute path until a root
    holds them:
      playlisteval media-root set shared /mnt/videos   # name the folder; its videos are stored as @shared/…
      playlisteval media-root set shared /media/usb    # moved: re-point it
      playlisteval media-root list
    Then `playlisteval check` re-reads the files at their new place.
    """


@media_root_group.command("set")
@click.argument("name")
@click.argument("folder", type=click.Path(file_okay=False, exists=False))
@click.option("--json", "as_json", is_flag=True, help="Print the root, its videos and those missing as JSON.")
@click.pass_context
def set_cmd(ctx: click.Context, name: str, folder: str, as_json: bool) -> None:
    """Create media root NAME at FOLDER, or re-point it there. Videos stored by absolute path under FOLDER
    are stored under NAME from now on. Exits 3 when some of the root's videos are not in FOLDER.

    A running worker keeps the folder it started with: restart it after re-pointing.
    """
    from playlisteval.index.media_roots import set_root
    from playlisteval.store import open_store

    state = set_root(open_store(settings_of(ctx)), name, folder)
    if as_json:
        emit_json(state.as_dict())
    else:
        was = f" (was {state.previous})" if state.previous and state.previous != state.folder else ""
        console.print(Text(f"media root {state.name} → {state.folder}{was}: {state.videos} video(s), "
                           f"{len(state.missing)} missing there; {state.adopted} path(s) newly stored under it"))
        for path in state.missing[:10]:
            err_console.print(Text(f"  missing: {path}"))
    if state.missing:
        ctx.exit(exitcodes.INCOMPLETE)


@media_root_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print the roots as a JSON list.")
@click.pass_context
def list_cmd(ctx: click.Context, as_json: bool) -> None:
    """Each media root: its folder, its videos and how many of them are not there."""
    from playlisteval.index.media_roots import list_roots
    from playlisteval.store import open_store

    states = list_roots(open_store(settings_of(ctx)))
    if as_json:
        emit_json([s.as_dict() for s in states])
        return
    table = Table(title="media roots (videos inside the project folder are stored relative to it)")
    for header in ("root", "folder", "videos", "missing"):
        table.add_column(header, justify="right" if header in ("videos", "missing") else "left")
    for s in states:
        table.add_row(Text(s.name), Text(s.folder), str(s.videos), str(len(s.missing)))
    console.print(table)


COMMANDS: list[click.Command] = [media_root_group]
