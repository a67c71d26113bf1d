"""`playlisteval gates`: the share of questions each gate rejected, with its interval, labelled by who
decided it — real models or the simulated world — and, with ``--against DIR``, another project's shares
beside them (issue 24: a build whose text gates ran on real local models against the all-sim build)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from rich.table import Table

from playlisteval.commands.support import console, emit_json, settings_of
from playlisteval.config import Settings, load_settings


def _pct(share: Any) -> str:
    if share is None:
        return "–"
    if not share.has_interval:
        return f"{share.estimate * 100:.1f}% (no interval: one question)"
    return f"{share.estimate * 100:.1f}% [{share.low * 100:.1f}, {share.high * 100:.1f}]"


def _shares(settings: Settings) -> list[Any]:
    from playlisteval.analytics.gate_shares import gate_shares
    from playlisteval.store import open_store

    return gate_shares(open_store(settings), settings.project.seed)


@click.command("gates")
@click.option("--against", "against", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Another project (e.g. the same collection built with every role on the sim): its shares beside.")
@click.option("--json", "as_json", is_flag=True, help='Print {"gates": [...], "against": [...], "speeds": [...]}.')
@click.pass_context
def gates_cmd(ctx: click.Context, against: Path | None, as_json: bool) -> None:
    """Per gate: questions decided, the share rejected with its 95% interval (clustered by question),
    and the source of the decisions: "real" (no sim model among the gate's calls), "simulated" or "mixed".
    Checker faults decided nothing and are counted apart. Below: each local (llama) model's speed per role."""
    from playlisteval.analytics.gate_shares import role_speeds
    from playlisteval.store import open_store

    settings = settings_of(ctx)
    mine = _shares(settings)
    theirs = _shares(load_settings(against)) if against is not None else []
    speeds = role_speeds(open_store(settings))
    threads = settings.providers.llama_threads
    if as_json:
        emit_json({"gates": [g.as_dict() for g in mine], "against": [g.as_dict() for g in theirs],
                   "speeds": [s.as_dict(threads) for s in speeds]})
        return
    other = {g.gate: g for g in theirs}
    table = Table(title="Rejected share per gate (95% interval, by question)")
    extra = ("against: decided by", "rejected") if theirs else ()
    for column in ("gate", "decided by", "decided", "rejected", *extra):
        table.add_column(column, overflow="fold")
    for g in mine:
        row = [g.gate, g.source.upper() if g.source == "simulated" else g.source, str(g.decided), _pct(g.share)]
        if theirs:
            o = other.get(g.gate)
            row += [(o.source.upper() if o.source == "simulated" else o.source) if o else "–",
                    _pct(o.share) if o else "–"]
        table.add_row(*row)
    console.print(table)
    for g in mine:
        if g.faults:
            console.print(f"{g.gate}: {g.faults} checker fault(s) (unusable replies: decided nothing)",
                          highlight=False, markup=False)
        if g.source in ("real", "mixed"):
            console.print(f"{g.gate} decided by: {', '.join(g.models)}", highlight=False, markup=False,
                          soft_wrap=True)
    if any(g.source in ("simulated", "mixed") for g in [*mine, *theirs]):
        console.print("SIMULATED rows were decided by the offline `sim` world on synthetic playlists: they test "
                      "the machinery and say nothing about any real model.", highlight=False, markup=False)
    for s in speeds:
        console.print(f"{s.role} on llama/{s.model}: {s.calls} calls, {s.seconds_per_call:.1f} s each, "
                      f"{s.calls_per_minute_per_core(threads):.2f} calls/min/core; read {s.input_tokens} tokens "
                      f"({s.cached_input_tokens} from the kept prefix), wrote {s.output_tokens}",
                      highlight=False, markup=False, soft_wrap=True)


COMMANDS = [gates_cmd]
