"""`describe`: what a domain covers (paper Table 13), kept in the store and released with the benchmark."""

from __future__ import annotations

import click
from rich.table import Table
from rich.text import Text

from playlisteval.commands.support import console, emit_json, settings_of


@click.command("describe")
@click.argument("domain", required=False)
@click.argument("description", required=False)
@click.option("--json", "as_json", is_flag=True, help='Print {"domain": description, …} as JSON.')
@click.pass_context
def describe_cmd(ctx: click.Context, domain: str | None, description: str | None, as_json: bool) -> None:
    """Set DOMAIN's DESCRIPTION (what its playlists cover), or list every domain's when none is given."""
    from sqlmodel import col, select

    from playlisteval.select import sealed
    from playlisteval.store import open_store, transaction
    from playlisteval.store.tables import Domain

    engine = open_store(settings_of(ctx))
    with transaction(engine) as s:
        if domain is not None:
            row = s.exec(select(Domain).where(Domain.name == domain)).first()
            if row is None:
                known = ", ".join(s.exec(select(Domain.name).order_by(col(Domain.name))).all()) or "none yet"
                raise click.ClickException(f"no domain named {domain!r} (domains: {known})")
            if description is not None:
                row.description = " ".join(description.split())
                s.add(row)
        rows = {d.name: d.description for d in s.exec(select(Domain).order_by(col(Domain.name))).all()
                if domain is None or d.name == domain}
    released = sealed.describe(engine, domain, rows[domain]) if domain is not None and description is not None else []
    if as_json:
        emit_json(rows)
        return
    table = Table(title="domains")
    table.add_column("domain")
    table.add_column("description", overflow="fold")
    for name, text in rows.items():
        table.add_row(Text(name), Text(text or "—"))
    console.print(table)
    if released:  # issue 41: the live versions' sealed annotations carry it; older versions keep theirs
        console.print(f"released with the live version of {', '.join(map(repr, released))}; older versions keep "
                      "the description they were recorded with", highlight=False)


COMMANDS: list[click.Command] = [describe_cmd]
