"""`playlisteval search`: the top chunks of the index for a text query."""

from __future__ import annotations

import json

import click
from rich.markup import escape
from rich.table import Table

from playlisteval.commands.support import console, err_console, settings_of


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


COMMANDS = [search]
