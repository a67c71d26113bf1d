"""Commands over the analytics views: sql, report, leaderboard."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path
from typing import Any

import click
from rich.table import Table
from rich.text import Text

from playlisteval.commands.support import console, emit_json, err_console, progress_bar, settings_of


def _open(ctx: click.Context, *, all_tables: bool = False, meanwhile: Any = None) -> Any:
    """The settings and the analytics; ``meanwhile``: run while the store is copied (runner.Analytics)."""
    from playlisteval.analytics import Analytics
    from playlisteval.store import open_store

    settings = settings_of(ctx)
    with err_console.status("loading the store into DuckDB …"):
        return settings, Analytics(open_store(settings), settings, all_tables=all_tables, meanwhile=meanwhile)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


@click.command("sql")
@click.argument("query", required=False)
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table", show_default=True,
              help="table: for reading; csv / json (one object a line): for other tools.")
@click.option("--list", "list_views", is_flag=True, help="List the views and what each holds, then exit.")
@click.pass_context
def sql(ctx: click.Context, query: str | None, fmt: str, list_views: bool) -> None:
    """Run a read-only SQL QUERY (DuckDB dialect) over the store's tables and the analytics views.

    \b
    The store's tables are copied into an in-memory DuckDB (vector blobs and the response cache left
    out), the views are created over them, and QUERY must be one SELECT that reads only those tables and
    views: no file, no other database, no system table, no table function but range/generate_series/unnest.
    Examples:
      playlisteval sql --list
      playlisteval sql "SELECT judge, retrieved, uniform FROM leaderboard WHERE domain = 'All'"
      playlisteval sql "SELECT * FROM cost_by_model" --format csv > cost.csv
    """
    if list_views:
        from playlisteval.analytics import views

        table = Table(title="views (playlisteval/analytics/*.sql)", show_lines=False)
        table.add_column("view", style="bold")
        table.add_column("what it holds")
        for view in views():
            table.add_row(view.name, Text(view.description))
        console.print(table)
        return
    if not query:
        raise click.UsageError("give a QUERY (or --list to see the views)")
    _settings, an = _open(ctx, all_tables=True)
    with an:
        result = an.user_query(query)
    rows = result.to_pylist()
    names = result.column_names
    if fmt == "csv":
        writer = csv.writer(sys.stdout)
        writer.writerow(names)
        writer.writerows([[_cell(r[n]) for n in names] for r in rows])
    elif fmt == "json":
        for r in rows:
            click.echo(json.dumps(r, default=str))
    elif len(names) * MIN_COLUMN_WIDTH > console.width:
        _print_records(rows, names)
    else:
        table = Table(*names, title=f"{len(rows)} row(s)")
        for r in rows:
            table.add_row(*(Text(_cell(r[n])) for n in names))  # Text: cell values are never markup
        console.print(table)


MIN_COLUMN_WIDTH = 9  # narrower, a table cell shows "…" and nothing else


def _print_records(rows: list[dict[str, Any]], names: list[str]) -> None:
    """Rows too wide for the terminal as records, a "column: value" line each (issue 44: the leaderboard
    view piped at 80 columns was rows of "…"); --format csv / json for scripts."""
    console.print(Text(f"{len(rows)} row(s), {len(names)} columns: one record each (wider terminal: a table; "
                       "--format csv or json for scripts)", style="dim"))
    width = max(len(n) for n in names)
    for i, r in enumerate(rows, start=1):
        console.print(Text(f"-[ row {i} ]" + "-" * max(0, min(console.width, 40) - 12), style="bold"))
        for n in names:
            console.print(Text(f"{n.ljust(width)} | {_cell(r[n])}"), overflow="fold")


def print_leaderboard(an: Any, settings: Any, bench: dict[str, Any] | None, *, as_json: bool = False) -> None:
    """The leaderboard with a 95 % interval on every rate (issue 9), as a table or as JSON."""
    from playlisteval.analytics.rate_sections import shown
    from playlisteval.analytics.rates import Bootstrap, is_simulated, leaderboard
    from playlisteval.analytics.tabular import fmt

    boot = Bootstrap.of(settings)
    if as_json:  # one document, with its provenance (analytics/board_json.py, issue 22)
        from playlisteval.analytics.board_json import leaderboard_document

        # the document holds issue 21's judge − judge with Holm's p-values ("paired") and the MDE per
        # clustering unit ("power"), for the benchmark protocol's evidence: a frozen version keeps them too
        click.echo(json.dumps(leaderboard_document(an, settings, bench), default=str))
        return
    rows = leaderboard(an, bench, boot)
    _imported_labels(an, bench, rows)
    simulated = is_simulated(an.engine)
    table_rows = [_terminal_row(r["judge_shown"] + (" (imported)" if r.get("imported") else ""),
                                fmt(r["retrieved_ci"], "ci"), fmt(r["uniform_ci"], "ci"),
                                fmt(r["difference_ci"], "cipts"), fmt(r["difference_ci"], "p"),
                                fmt(r.get("n_retrieved"), "int"), fmt(r.get("no_verdict_retrieved"), "int"),
                                fmt(r.get("errors_retrieved"), "int"), r.get("status"), r.get("health") or "")
                  for r in shown(rows)]
    _print_board(table_rows, bench["name"] if bench else None, simulated, boot.label,
                 [(str(r["judge"]), str(r["status"])) for r in rows if r.get("status")],
                 [(str(r["judge"]), str(r["health"])) for r in rows if r.get("health")])
    if table_rows:  # issue 21: every pair of judges, Holm-adjusted, each with its MDE
        from playlisteval.analytics.trust_sections import leaderboard_keys
        from playlisteval.commands.trust import print_paired

        print_paired(leaderboard_keys(an, bench, boot, settings.eval.evidence))


def _imported_labels(an: Any, bench: dict[str, Any] | None, rows: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """Issue 40 item 9: mark the rows whose judge's runs were imported (`eval import`: verdicts made
    elsewhere, no spend recorded); judge → its imported runs, for the JSON's ``imported`` key."""
    from playlisteval.eval.imported import label_board

    return label_board(an.engine, int(bench["id"]) if bench else None, rows)


def _terminal_row(judge: str, retrieved: str, uniform: str, diff: str, p: str, pairs: str, no_verdict: str,
                  errors: str, status: Any, health: str = "") -> list[str]:
    """One judge's line: five columns, so that an 80-column terminal keeps the judge's name whole; marked
    * when a run is not finished and ! when one is flagged unhealthy (issue 40), each with a note below."""
    return [judge + (" *" if status else "") + (" !" if health else ""), retrieved, uniform,
            diff + (f" p={p}" if diff != "—" else ""), f"{pairs} ({no_verdict}, {errors})"]


def _print_board(table_rows: list[list[str]], benchmark: str | None, simulated: bool, label: str,
                 notes: list[tuple[str, str]], unhealthy: list[tuple[str, str]] | None = None) -> None:
    if not table_rows:
        console.print("[dim]no judge has judged this benchmark at the full-domain scope yet: `playlisteval eval "
                      "judge` with the configured \\[eval] options makes a judge's main run[/]")
        return
    title = f"Leaderboard — {benchmark}" if benchmark else "Leaderboard"
    table = Table(title=title + (" (SIMULATED)" if simulated else ""), caption=label)
    table.add_column("Judge", no_wrap=True)
    for header in ("Retrieved % [CI]", "Uniform % [CI]", "Δ pts [CI], p", "Pairs (no verdict, errors)"):
        table.add_column(header, justify="right")
    for cells in table_rows:
        table.add_row(*(Text(cell) for cell in cells))
    console.print(table)
    for judge, status in notes:
        console.print(Text(f"* {judge}: {status}"))  # not a finished result: say so
    for judge, health in unhealthy or []:  # a judge that (mostly) gave no verdict is not a 50 % judge (issue 40)
        console.print(Text(f"! {judge}: {health} — its accuracy is not a measurement of judging", style="bold red"))


def print_report_leaderboard(page: Any, settings: Any) -> bool:
    """The leaderboard as the report just computed it (its section's overall table, the same cells), so
    that a report reused from the cache computes nothing again; False when the page has no such table."""
    from playlisteval.analytics.tabular import LEADERBOARD_COLS, settings_interval_label

    section = next((sec for sec in page.sections if sec.id == "leaderboard"), None)
    overall = next((t for caption, t in section.tables if caption == "Overall"), None) if section else None
    if overall is None or overall.headers != [c.header for c in LEADERBOARD_COLS]:
        return False
    keys = [c.key + ("_p" if c.kind == "p" else "") for c in LEADERBOARD_COLS]
    cells = [dict(zip(keys, row, strict=True)) for row in overall.rows]
    status = [None if c["status"] in ("", "—") else c["status"] for c in cells]  # "—": no status (tabular.fmt)
    health = ["" if c["health"] in ("", "—") else c["health"] for c in cells]
    table_rows = [_terminal_row(c["judge_shown"], c["retrieved_ci"], c["uniform_ci"], c["difference_ci"],
                                c["difference_ci_p"], c["n_retrieved"], c["no_verdict_retrieved"],
                                c["errors_retrieved"], st, h) for c, st, h in zip(cells, status, health, strict=True)]
    _print_board(table_rows, page.benchmark, bool(page.simulated), settings_interval_label(settings),
                 [(c["judge_shown"], st) for c, st in zip(cells, status, strict=True) if st],
                 [(c["judge_shown"], h) for c, h in zip(cells, health, strict=True) if h])
    return True


@click.command("report")
@click.argument("out", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--benchmark", default=None, help="Benchmark name. Default: the one judged most recently.")
@click.option("--quiet", "-q", is_flag=True, help="Do not print the leaderboard to the terminal.")
@click.option("--json", "as_json", is_flag=True, help="Print what was written as JSON (README, \"--json\").")
@click.pass_context
def report(ctx: click.Context, out: Path, benchmark: str | None, quiet: bool, as_json: bool) -> None:
    """Write the analytics as one self-contained HTML page OUT, and print the leaderboard.

    The page holds the judge leaderboard (retrieved vs uniform evidence, per domain, judge − judge),
    accuracy by rating gap (weak judges and every judge run) and by corpus scope, position bias, the
    shortcut audit, retriever Hit@k and nDCG@k with chance floors, benchmark statistics, build and
    evaluation cost, and the hardest pairs. Every rate carries a 95 % interval (clustered by
    question, on K − 1 df) and error bars; numbers the sim made are marked SIMULATED. All model text is escaped.
    A Provenance block under the title names the tool version, when the page was generated, the store
    (no password), the benchmark's version and content hash, the settings and protocol digests and the
    models of each role (also `provenance` in --json).
    """
    from playlisteval.analytics.report import choose_benchmark, write_page
    from playlisteval.analytics.section_threads import import_sections
    from playlisteval.human.report_section import html_section

    blocking = next((p for p in out.parents if p.exists() and not p.is_dir()), None)
    if blocking is not None:  # else mkdir says only "File exists"
        raise click.BadParameter(f"{out}: {blocking} is a file, not a folder", param_hint="OUT")
    settings, an = _open(ctx, meanwhile=import_sections)
    with an:
        with progress_bar("report", "sections") as update:
            page = write_page(an, settings, out, benchmark, progress=update, extra=[html_section])
        if as_json:
            emit_json({"out": str(out), "benchmark": page.benchmark,
                       "sections": [{"id": sec.id, "title": sec.title} for sec in page.sections],
                       "simulated": bool(page.simulated), "provenance": page.provenance})
            return
        # printed from the page's own leaderboard: nothing computed again (a report reused whole from the
        # section cache stays as cheap as that, issue 13)
        if not quiet and not print_report_leaderboard(page, settings):
            print_leaderboard(an, settings, choose_benchmark(an, benchmark))
    if not quiet and page.simulated:  # the page's own banner (models/simulated.py NOTE): no second look
        console.print(f"[yellow]{page.simulated}[/]", highlight=False)
    console.print(f"wrote {out}")


@click.command("leaderboard")
@click.option("--benchmark", default=None, help="Benchmark name. Default: the one judged most recently.")
@click.option("--version", "version", type=click.IntRange(min=1), default=None,
              help="A version of the benchmark (`playlisteval protocol show` lists them); an older one is "
                   "printed as it stood when it was superseded. Default: the live version.")
@click.option("--json", "as_json", is_flag=True,
              help="Print one JSON object: every rate as {estimate, low, high, n, clusters, level}, the "
                   "difference with its p_value, whether the numbers are simulated, and the provenance.")
@click.pass_context
def leaderboard(ctx: click.Context, benchmark: str | None, version: int | None, as_json: bool) -> None:
    """Print the judge leaderboard: accuracy with retrieved and uniform evidence, and the difference.

    Every rate carries a 95 % interval clustered by question ([analytics] bootstrap_unit: question, video
    or playlist; confidence): the beta-binomial profile-likelihood interval (t on Satterthwaite's df, K − 1
    below 10 clusters) so that it holds with few clusters and near 100 %. The difference (retrieved −
    uniform, over the pairs judged both ways) carries a cluster-robust t interval and its p-value (an exact
    sign-flip p beside it in --json); judge − judge p-values are Holm-adjusted over every pair of judges.
    """
    if version is not None:
        from playlisteval.commands.versions import print_frozen_leaderboard

        if print_frozen_leaderboard(ctx, benchmark, version, as_json=as_json):
            return  # an older version: its frozen copy (issue 22)
    _ensure_versions(ctx)
    settings, an = _open(ctx)
    with an:  # an unchanged store prints the board it printed last (commands/board_output.py, issue 26)
        from playlisteval.commands.board_output import print_kept

        def board() -> None:  # the report's module (every section's imports) only when computed
            from playlisteval.analytics.report import choose_benchmark

            print_leaderboard(an, settings, choose_benchmark(an, benchmark), as_json=as_json)

        print_kept(an, settings, [benchmark, as_json], board, kind="json" if as_json else "table")
    if not as_json:
        _label_simulated(settings)


def _ensure_versions(ctx: click.Context) -> None:
    """Version 1 recorded for benchmarks drawn before versions were kept (issue 22): the leaderboard's
    provenance names a version and its content hash."""
    from sqlalchemy import text

    from playlisteval.store import open_store

    engine = open_store(settings_of(ctx))
    with engine.connect() as conn:  # one query first: the select package (the actors' imports) only when needed
        missing = conn.execute(text("SELECT count(*) FROM benchmark AS b WHERE NOT EXISTS "
                                    "(SELECT 1 FROM benchmark_version AS v WHERE v.benchmark_id = b.id)")).scalar()
    if missing:
        from playlisteval.select import versions

        versions.ensure_every(engine)


def _label_simulated(settings: Any) -> None:
    from playlisteval.models.simulated import NOTE, is_simulated
    from playlisteval.store import open_store

    if is_simulated(open_store(settings)):
        console.print(f"[yellow]{NOTE}[/]", highlight=False)


COMMANDS: list[click.Command] = [sql, report, leaderboard]
