"""The `playlisteval` command line: parse, call a service, print. Errors become one clear message."""

from __future__ import annotations

import atexit
import gc
import sys
from pathlib import Path
from typing import Any

import click

from playlisteval.commands.lazy import LazyGroup
from playlisteval.errors import Cancelled, PlaylistEvalError
from playlisteval.logs.redaction import wrap_std_streams


class _Group(LazyGroup):
    """Commands load when they run (commands/lazy.py); what reaches here as an error is one line."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        _quick_exit_collection()
        return super().main(*args, **kwargs)

    def invoke(self, ctx: click.Context) -> Any:
        from rich.markup import escape

        from playlisteval.commands.support import err_console  # the consoles load with a command, not at start

        try:
            return super().invoke(ctx)
        except Cancelled as exc:  # `playlisteval cancel` from another process: not an error, a stop asked for
            err_console.print(f"[yellow]cancelled:[/] {escape(str(exc))}", highlight=False)
            sys.exit(7)  # exitcodes.CANCELLED
        except PlaylistEvalError as exc:
            # escaped: a message naming "[prices]" or a model's text is not markup
            err_console.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False)
            sys.exit(1)
        except OSError as exc:  # a path that cannot be read or written: one line, no traceback
            where = f" {exc.filename}" if getattr(exc, "filename", None) else ""
            err_console.print(f"[bold red]error:[/]{where}: {exc.strerror or exc}", highlight=False)
            sys.exit(1)
        except KeyboardInterrupt:
            from playlisteval.commands.outcomes import interrupted_hint

            # every committed step is in the store; a step cut short is redone (and its calls are cached)
            err_console.print(escape(interrupted_hint(ctx.invoked_subcommand)), highlight=False)
            sys.exit(130)  # exitcodes.INTERRUPTED
        except Exception as exc:  # a Redis broker or a store that cannot be reached: one line, no traceback
            from playlisteval.commands.outcomes import unreachable

            line = unreachable(exc)
            if line is None:
                raise
            err_console.print(f"[bold red]error:[/] {escape(line)}", highlight=False)
            sys.exit(1)


_exit_hook = False


def _quick_exit_collection() -> None:
    """At the interpreter's exit, every object still alive is frozen out of the garbage collector's last
    passes over the whole heap (the ORM's and pydantic's classes, the loaded libraries): 0.18 s of every
    command (`playlisteval report` on an unchanged 1M store: 1.11 s -> 0.93 s, measured), for cycles whose
    memory the process gives back anyway. Nothing of ours waits on a collector to run a finalizer at exit:
    stores, DuckDB files and pages are closed and written before a command returns (Python does not
    promise ``__del__`` at exit either); atexit hooks and ``weakref.finalize`` still run."""
    global _exit_hook
    if not _exit_hook:
        atexit.register(gc.freeze)  # run after later-registered hooks, before the interpreter's finalization
        _exit_hook = True


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="playlisteval", prog_name="playlisteval")
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
    from playlisteval import logs  # structlog: loaded once a command runs, not for a bare --help

    wrap_std_streams()  # nothing printed shows an API key a provider quoted (issue 25)
    logs.configure(verbose)
    ctx.obj = {"project": project}


@main.command()
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path), default=".")
@click.option("--force", is_flag=True, help="Overwrite an existing playlisteval.toml.")
def init(directory: Path, force: bool) -> None:
    """Create a project in DIRECTORY: a commented playlisteval.toml whose defaults run offline."""
    from playlisteval.commands.support import console
    from playlisteval.config import write_project

    path = write_project(directory, force=force)
    console.print(f"wrote {path}")
    console.print("Every role runs on the offline [bold]sim[/] world; edit \\[models] to use real models.")


if __name__ == "__main__":
    main()
