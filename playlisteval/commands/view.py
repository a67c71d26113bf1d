"""`playlisteval view`: the local web viewer over the store (issue 22; playlisteval/view)."""

from __future__ import annotations

import ipaddress
import json
import sys

import click

from playlisteval.commands import exitcodes
from playlisteval.commands.support import console, err_console, settings_of

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
              help='Print {"url", "link", "token", "host", "port"} as one JSON line once the port is bound.')
@click.pass_context
def view(ctx: click.Context, host: str, port: int, as_json: bool) -> None:
    """Browse the store in a web browser until stopped (Ctrl-C): the leaderboard with intervals, runs and
    sweeps, the gate funnel with its reasons, every item's story, and a card per benchmark pair (the
    question, the gold with its citations linked into the clips, the graded answers with their
    differences and causal records, the frames each judge was served, every verdict), with filters.

    The printed link (/join/TOKEN) carries a fresh token and sets a cookie; any page also takes the token as
    its `token` query parameter. A request without it is refused (403). A busy port is an
    error (exit 2) before anything is served.
    """
    from playlisteval.commands.funnel import funnel
    from playlisteval.commands.glossary import GATES
    from playlisteval.view.access import new_token
    from playlisteval.view.app import Sources, make_app
    from playlisteval.view.serve import PortBusy, bind, run, url_of

    settings = settings_of(ctx)
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


COMMANDS = [view]
