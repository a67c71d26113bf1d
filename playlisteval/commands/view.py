"""`playlisteval view`: the local web viewer over the store (issue 22; playlisteval/view)."""

from __future__ import annotations

import ipaddress
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.text import Text

from playlisteval.commands import exitcodes
from playlisteval.commands.support import console, emit_json, err_console, progress_bar, settings_of

if TYPE_CHECKING:
    from playlisteval.config import Settings
    from playlisteval.view.app import Sources

DEFAULT_PORT = 8766  # beside `human serve`'s 8765


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


@click.command("view")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to bind: this machine only by default.")
@click.option("--port", type=click.IntRange(0, 65535), default=DEFAULT_PORT, show_default=True,
              help="Port (0: any free one).")
@click.option("--json", "as_json", is_flag=True,
              help='Print {"url", "link", "token", "host", "port"} as one JSON line once the port is bound '
                   '(with --bundle: what was written).')
@click.option("--bundle", "bundle_out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Write the pages of one benchmark as a static site into this folder (no store, no token "
                   "needed to browse it) instead of serving.")
@click.option("--benchmark", default=None, help="With --bundle: the benchmark to write (default: the viewer's).")
@click.option("--force", is_flag=True, help="With --bundle: replace a folder that is not empty.")
@click.pass_context
def view(ctx: click.Context, host: str, port: int, as_json: bool, bundle_out: Path | None, benchmark: str | None,
         force: bool) -> None:
    """Browse the store in a web browser until stopped (Ctrl-C): the leaderboard with intervals, runs and
    sweeps, the gate funnel with its reasons, every item's story, and a card per benchmark pair (the
    question, the gold with its citations linked into the clips, the graded answers with their
    differences and causal records, the frames each judge was served, every verdict), with filters.

    The printed link (/join/TOKEN) carries a fresh token and sets a cookie; any page also takes the token as
    its `token` query parameter. A request without it is refused (403). A busy port is an
    error (exit 2) before anything is served.

    With --bundle OUT, nothing is served: the benchmark's pages — leaderboard, runs, funnel, pairs, every
    pair card with its frames and replies, judge against judge — are written into OUT with relative links,
    for any static file server (`python -m http.server -d OUT`). No API key and no folder of this machine
    is written; a non-empty OUT is refused unless --force.
    """
    from playlisteval.commands.funnel import funnel
    from playlisteval.commands.glossary import GATES
    from playlisteval.view.access import new_token
    from playlisteval.view.app import Sources, make_app
    from playlisteval.view.serve import PortBusy, bind, run, url_of

    settings = settings_of(ctx)
    if bundle_out is not None:
        _bundle(settings, Sources(funnel=lambda: funnel(settings, top=50), gates=GATES), bundle_out, benchmark,
                force, as_json)
        return
    try:
        sock = bind(host, port)
    except PortBusy as exc:
        err_console.print(f"[red]error:[/] {exc}", highlight=False, soft_wrap=True)
        sys.exit(exitcodes.USAGE)
    token = new_token()
    app = make_app(settings, token, Sources(funnel=lambda: funnel(settings, top=50), gates=GATES))
    url = url_of(sock, host)
    link = f"{url}join/{token}"  # not ?token=: the CLI's output masks token= queries (playlisteval/logs/redaction.py)
    if as_json:
        click.echo(json.dumps({"url": url, "link": link, "token": token, "host": host,
                               "port": sock.getsockname()[1]}))
        sys.stdout.flush()
    else:
        if not _loopback(host):
            err_console.print(f"[yellow]warning:[/] serving on {host}, reachable from other machines; put HTTPS in "
                              "front of it (the link carries the viewer's token).")
        console.print(f"viewer of {settings.project.name!r} on {link} (Ctrl-C stops)", highlight=False, soft_wrap=True)
    run(app, sock)


def _bundle(settings: Settings, sources: Sources, out: Path, benchmark: str | None, force: bool, as_json: bool) -> None:
    """`view --bundle OUT`: the static site; exit 3 (INCOMPLETE) when a card or frame could not be written."""
    from dataclasses import asdict

    from playlisteval.view.bundle import BundleRefused, write_bundle

    try:
        with progress_bar("bundle", "", enabled=not as_json) as tick:
            report = write_bundle(settings, sources, out, benchmark=benchmark, force=force, tick=tick)
    except BundleRefused as exc:
        err_console.print(Text(f"error: {exc}", style="red"), soft_wrap=True)
        sys.exit(exitcodes.USAGE)
    if as_json:
        emit_json({**asdict(report), "out": str(out)})
    else:
        console.print(Text(f"bundle of {report.benchmark!r} in {out}: {report.pages} page(s), {report.frames} "
                           f"frame(s); serve it with `python -m http.server -d {out}`"), soft_wrap=True)
        for error in report.errors[:20]:
            err_console.print(Text(f"  not written: {error}", style="yellow"), soft_wrap=True)
        if len(report.errors) > 20:
            err_console.print(Text(f"  … and {len(report.errors) - 20} more"))
    if report.errors:
        sys.exit(exitcodes.INCOMPLETE)


COMMANDS = [view]
