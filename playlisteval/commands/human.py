"""The `playlisteval human` group: the human study of a benchmark (SPEC H; issue 12)."""

from __future__ import annotations

import ipaddress
import json
import sys
from pathlib import Path
from typing import Any

import click
from rich.table import Table
from rich.text import Text

from playlisteval.commands import exitcodes
from playlisteval.commands.support import console, err_console, settings_of

_STUDY = click.option("--study", "study_name", default=None,
                      help="The study's name (default: [human] study, \"human\").")


def _open(ctx: click.Context) -> tuple[Any, Any]:
    from playlisteval.store import open_store

    settings = settings_of(ctx)
    return settings, open_store(settings)


def _study(ctx: click.Context, name: str | None) -> tuple[Any, Any, Any]:
    from playlisteval.human.tasks import find_study

    settings, engine = _open(ctx)
    return settings, engine, find_study(engine, name or settings.human.study)


@click.group("human")
def human_group() -> None:
    """Check a benchmark's intended answers with people (SPEC H).

    \b
    A study, start to end:
      playlisteval human plan                 # pairs, slots, attention checks; evidence clips (model H)
      playlisteval human invite alice         # one link per annotator (shown once)
      playlisteval human serve                # the annotation app on http://127.0.0.1:8765
      playlisteval human export crowd/        # or: files for a crowd platform …
      playlisteval human import ratings.csv   # … and its ratings back
      playlisteval human report               # agreement, Krippendorff's alpha (paper Table 22)
    """


def _clips(ctx: click.Context, settings: Any, engine: Any, study: Any, as_json: bool) -> dict[str, Any]:
    from playlisteval.human.evidence import ground_study

    with err_console.status("grounding evidence clips (model H) …"):
        report = ground_study(settings, engine, study)
    out = {"ready": report.ready, "grounded_now": report.grounded_now, "faults": len(report.faults),
           "pending": report.pending, "paused": report.paused, "calls": report.calls}
    if not as_json:
        console.print(f"evidence clips: {report.ready} task(s) ready, {report.grounded_now} grounded now, "
                      f"{len(report.faults)} fault(s), {report.pending} pending")
        for task_id, reason in list(report.faults.items())[:10]:
            console.print(Text(f"  task {task_id}: {reason}", style="yellow"))
        if report.faults:
            console.print("Faults are retried (as a new request) by `playlisteval human clips`.")
        if report.paused:
            console.print(Text(f"paused: {report.paused}", style="yellow"))
    return out


def _exit_for(out: dict[str, Any]) -> None:
    if out.get("paused"):
        sys.exit(exitcodes.PAUSED)
    if out.get("faults"):
        sys.exit(exitcodes.INCOMPLETE)


@human_group.command("plan")
@_STUDY
@click.option("--pairs", type=click.IntRange(min=1), default=None, help="Pairs to sample (default: [human] pairs).")
@click.option("--annotators", type=click.IntRange(min=1), default=None,
              help="Ratings wanted per pair (default: [human] annotators_per_pair).")
@click.option("--no-clips", is_flag=True, help="Only plan; ground and cut the evidence clips later with `human clips`.")
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
@click.pass_context
def plan(ctx: click.Context, study_name: str | None, pairs: int | None, annotators: int | None, no_clips: bool,
         as_json: bool) -> None:
    """Plan a study: a seeded sample of the benchmark's pairs, stratified by domain and rating gap, the
    intended answer in a random slot per task, and about 10% attention checks (the gold answer against
    the worst one); then ground and cut every task's evidence clips (SPEC H1, H2).

    Planning a study that exists changes nothing (it only grounds what is missing). Exit code 3: some
    tasks' grounding failed (retry with `human clips`); 4: the budget stopped the grounding.
    """
    from playlisteval.human.design import plan_study

    settings, engine = _open(ctx)
    made = plan_study(settings, engine, study_name, pairs=pairs, annotators=annotators)
    out: dict[str, Any] = {"study": made.name, "benchmark": made.benchmark, "created": made.created,
                           "tasks": made.tasks, "attention_checks": made.attention, "strata": made.strata,
                           "warnings": made.warnings}
    if not as_json:
        verb = "planned" if made.created else "exists:"
        console.print(f"study {made.name!r} {verb} {made.tasks} pair(s) of benchmark {made.benchmark!r} "
                      f"and {made.attention} attention check(s)")
        table = Table("domain", "pairs by rating gap", title="strata")
        for domain, gaps in made.strata.items():
            table.add_row(Text(domain), ", ".join(f"gap {g}: {n}" for g, n in gaps.items()))
        console.print(table)
        for warning in made.warnings:
            console.print(Text(f"warning: {warning}", style="yellow"))
    if not no_clips:
        from playlisteval.human.tasks import find_study

        out["clips"] = _clips(ctx, settings, engine, find_study(engine, made.name), as_json)
    if as_json:
        click.echo(json.dumps(out))
    _exit_for(out.get("clips", {}))


@human_group.command("clips")
@_STUDY
@click.option("--json", "as_json", is_flag=True, help="Print the counts as JSON.")
@click.pass_context
def clips(ctx: click.Context, study_name: str | None, as_json: bool) -> None:
    """Ground and cut the evidence clips of every task that has none yet, retrying faults (SPEC H2).

    Model H (role H in [models]) gets each segment whole (480p, no audio, 2 fps) and its transcript
    relabelled to the segment's clock, and places the question's hops and each sentence of the gold
    answer; those ranges become 30-s clips (H.264/AAC). Calls go through the runner: cached, on the
    ledger (purpose "human"), within [human] budget_usd. Exit code 3: faults remain; 4: budget reached.
    """
    settings, engine, study = _study(ctx, study_name)
    out = _clips(ctx, settings, engine, study, as_json)
    if as_json:
        click.echo(json.dumps(out))
    _exit_for(out)


@human_group.command("invite")
@click.argument("name")
@_STUDY
@click.option("--reissue", is_flag=True, help="Make a new link for someone already invited (the old one stops).")
@click.option("--base-url", default=None, help="The app's address as annotators reach it "
                                                 "(default: http://[human] host:port).")
@click.option("--json", "as_json", is_flag=True, help='Print {"annotator", "token", "url"} as JSON.')
@click.pass_context
def invite(ctx: click.Context, name: str, study_name: str | None, reissue: bool, base_url: str | None,
           as_json: bool) -> None:
    """Invite annotator NAME: prints their personal link, once (only a hash of it is stored)."""
    from playlisteval.human.annotators import invite as make

    settings, engine, study = _study(ctx, study_name)
    token = make(engine, study, name, reissue=reissue)
    base = (base_url or f"http://{settings.human.host}:{settings.human.port}").rstrip("/")
    url = f"{base}/join/{token}"
    if as_json:
        click.echo(json.dumps({"annotator": " ".join(name.split()), "token": token, "url": url}))
    else:
        console.print(Text(f"{name}: {url}"))
        console.print("Send this link to them privately; anyone holding it can rate as them.")


@human_group.command("annotators")
@_STUDY
@click.option("--json", "as_json", is_flag=True, help='Print [{"annotator", "done", "open"}] as JSON.')
@click.pass_context
def list_annotators(ctx: click.Context, study_name: str | None, as_json: bool) -> None:
    """The invited annotators and their progress."""
    from playlisteval.human.annotators import annotators
    from playlisteval.human.assign import progress

    settings, engine, study = _study(ctx, study_name)
    table = Table("annotator", "done", "open to them", title=f"study {study.name!r}")
    listed = []
    for who in annotators(engine, int(study.id or 0)):
        p = progress(engine, study, who, settings.human.claim_ttl_s)
        table.add_row(Text(who.name), str(p.done), str(p.remaining))
        listed.append({"annotator": who.name, "done": p.done, "open": p.remaining})
    if as_json:
        click.echo(json.dumps({"study": study.name, "annotators": listed}))
        return
    console.print(table)


@human_group.command("serve")
@_STUDY
@click.option("--host", default=None, help="Address to bind (default: [human] host, 127.0.0.1: this machine only).")
@click.option("--port", type=click.IntRange(1, 65535), default=None, help="Port (default: [human] port, 8765).")
@click.pass_context
def serve(ctx: click.Context, study_name: str | None, host: str | None, port: int | None) -> None:
    """Run the annotation app until stopped (Ctrl-C). Annotators join with their `human invite` link."""
    from playlisteval.human.app import serve as run

    settings, _engine, study = _study(ctx, study_name)
    host = host or settings.human.host
    port = port or settings.human.port
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = host == "localhost"
    if not loopback:
        err_console.print(f"[yellow]warning:[/] serving on {host}, reachable from other machines; put HTTPS in "
                          "front of it (links carry each annotator's token).")
    _port_free(host, port)  # before the URL is printed: a URL that nothing of ours answers misleads
    console.print(f"study {study.name!r} on http://{host}:{port}/ (Ctrl-C stops)")
    run(settings, study.name, host, port)


def _port_free(host: str, port: int) -> None:
    """A usage error (exit 2) when ``host:port`` cannot be bound (another server holds it)."""
    import socket

    try:
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds: TIME_WAIT is free
            probe.bind((host, port))
    except OSError as exc:
        raise click.UsageError(f"cannot serve on {host}:{port}: {exc.strerror or exc} (another server holds it?); "
                               "pass --port N or set [human] port") from exc


@human_group.command("export")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@_STUDY
@click.option("--json", "as_json", is_flag=True, help='Print {"directory", "tasks", "clips", "skipped"} as JSON.')
@click.pass_context
def export(ctx: click.Context, directory: Path, study_name: str | None, as_json: bool) -> None:
    """Write the study for a crowd platform to DIRECTORY: tasks.csv, clips/, a ratings template, a README."""
    from playlisteval.human.crowd import export_study

    settings, engine, study = _study(ctx, study_name)
    report = export_study(settings, engine, study, directory)
    if as_json:
        click.echo(json.dumps({"study": study.name, "directory": str(directory), "tasks": report.tasks,
                               "clips": report.clips, "skipped": report.skipped}))
        return
    console.print(f"wrote {report.tasks} task(s) and {report.clips} clip(s) to {directory}")
    if report.skipped:
        console.print(Text(f"{report.skipped} task(s) left out: their clips are not ready (`human clips`)",
                           style="yellow"))


@human_group.command("import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@_STUDY
@click.option("--json", "as_json", is_flag=True, help='Print {"study", "file", "imported"} as JSON.')
@click.pass_context
def import_(ctx: click.Context, file: Path, study_name: str | None, as_json: bool) -> None:
    """Read ratings from FILE.csv (columns task_id, annotator, choice, reason; choice A or B).

    Every row is checked first; one bad row and nothing is imported (the error names each bad line).
    """
    from playlisteval.human.crowd import import_ratings

    _settings, engine, study = _study(ctx, study_name)
    n = import_ratings(engine, study, file)
    if as_json:
        click.echo(json.dumps({"study": study.name, "file": str(file), "imported": n}))
        return
    console.print(f"imported {n} rating(s) into study {study.name!r}")


@human_group.command("report")
@_STUDY
@click.option("--ppi-judge", "ppi_judge", default=None, metavar="JUDGE",
              help="Whose verdicts on all benchmark pairs the PPI++ interval uses: a judge's main run, or "
                   "'intended' (the pipeline's labels). Default: the best model judge's main run.")
@click.option("--json", "as_json", is_flag=True, help="Print every figure as JSON (rates as fractions).")
@click.pass_context
def report(ctx: click.Context, study_name: str | None, ppi_judge: str | None, as_json: bool) -> None:
    """Agreement with the intended answers and among annotators (paper Table 22), by domain and by gap;
    how often the intended answer is right, from the ratings alone and with PPI++ (issue 21).

    \b
    JSON keys: n_tasks, n_ratings, n_discarded, alpha, alpha_ci, agree_with_intended, unanimous,
    majority_agrees, majority_overturns, slot_a (and their intervals, by_domain, by_gap, …), ppi (the
    PPI++ interval, its classical (ratings-only) one, lambda, predictions used, pairs, method).
    """
    from playlisteval.human.report_section import GROUP_HEADERS, group_rows, ppi_rows, study_report, summary_rows

    settings, engine, study = _study(ctx, study_name)
    out = study_report(settings, engine, study, ppi_judge)
    if as_json:
        click.echo(json.dumps(out))
        return
    table = Table("statistic", "value", title=f"human study {study.name!r} of benchmark {out['benchmark']!r}")
    for label, value in summary_rows(out) + ppi_rows(out["ppi"]):
        table.add_row(label, Text(value))
    console.print(table)
    for key in ("domain", "gap"):
        rows = group_rows(out, key)
        if rows:
            t = Table(key, *GROUP_HEADERS, title=f"by {key}")
            for r in rows:
                t.add_row(*(Text(v) for v in r.values()))
            console.print(t)
    if out["evidence_simulated"]:
        console.print("The evidence clips were grounded by the sim (simulated), not by a model.")


COMMANDS: list[click.Command] = [human_group]
