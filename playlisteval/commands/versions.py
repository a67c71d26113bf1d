"""`playlisteval protocol show / set` and `playlisteval versions`: what a benchmark's main runs are, and
the versions it has had (issue 22).

The protocol (store/protocol.py) is fixed by `select` from the settings it ran with; `protocol set` changes
it explicitly — the only way to, since a shell's ``PLAYLISTEVAL_EVAL__*`` no longer decides which runs are
main. Setting it changes no run and no judgment: it changes which existing runs the leaderboard shows as
main, and what `eval judge` runs by default.
"""

from __future__ import annotations

from typing import Any

import click
from rich.table import Table
from rich.text import Text

from playlisteval.commands.support import console, emit_json, settings_of

_EVIDENCE = click.Choice(["retrieved", "uniform", "oracle"])
_MODALITY = click.Choice(["frames+transcript", "frames", "transcript", "frames+audio", "audio"])


def _bench(ctx: click.Context, name: str | None) -> tuple[Any, Any, Any]:
    from playlisteval.benchmark.pairs import find_benchmark
    from playlisteval.store import open_store

    settings = settings_of(ctx)
    engine = open_store(settings)
    return settings, engine, find_benchmark(engine, name or settings.select.benchmark)


def _document(settings: Any, engine: Any, bench: Any) -> dict[str, Any]:
    from playlisteval.analytics.provenance import provenance
    from playlisteval.store import protocol

    proto = protocol.stored(engine, int(bench.id or 0))
    return {"benchmark": bench.name, "stored": proto is not None,
            "protocol": proto if proto is not None else protocol.of_settings(settings),
            "digest": protocol.digest(proto) or None, "provenance": provenance(engine, settings, int(bench.id or 0))}


@click.group("protocol")
def protocol_group() -> None:
    """The protocol of a benchmark's main runs: the [eval] options (evidence, scope, frames, size,
    thinking, …) a judge's main run is made with, stored with the benchmark."""


@protocol_group.command("show")
@click.option("--benchmark", default=None, help="Benchmark name (default: [select] benchmark).")
@click.option("--json", "as_json", is_flag=True, help="Print the protocol as JSON.")
@click.pass_context
def protocol_show(ctx: click.Context, benchmark: str | None, as_json: bool) -> None:
    """Print the stored protocol of the benchmark's main runs (a benchmark drawn before protocols were
    stored has none: it is read with the configured [eval] options until `protocol set`)."""
    settings, engine, bench = _bench(ctx, benchmark)
    doc = _document(settings, engine, bench)
    if as_json:
        emit_json(doc)
        return
    table = Table(title=f"main-run protocol of {bench.name!r}" + ("" if doc["stored"] else
                                                                  " (none stored: the configured \\[eval])"))
    table.add_column("option")
    table.add_column("value")
    for key, value in doc["protocol"].items():
        table.add_row(key, Text(str(value)))
    console.print(table)


@protocol_group.command("set")
@click.option("--benchmark", default=None, help="Benchmark name (default: [select] benchmark).")
@click.option("--from-config", is_flag=True, help="Start from the configured [eval] options (playlisteval.toml "
                                                  "and PLAYLISTEVAL_EVAL__*), not the stored protocol.")
@click.option("--evidence", type=_EVIDENCE, default=None, help="Evidence of the default run (SPEC G1).")
@click.option("--scope", default=None, help="Corpus: domain, oracle, or a name in [eval] scopes.")
@click.option("--modality", type=_MODALITY, default=None, help="What the judge gets (SPEC G6).")
@click.option("--frames", type=click.IntRange(min=1), default=None, help="Frames per judgment.")
@click.option("--frames-per-chunk", type=click.IntRange(min=1), default=None, help="Frames per retrieved chunk.")
@click.option("--size", default=None, help="Frame size WxH the frames fit inside (e.g. 640x480).")
@click.option("--thinking", type=click.Choice(["", "minimal", "low", "medium", "high"]), default=None,
              help="Thinking level ('' = the provider's default).")
@click.option("--media-resolution", type=click.Choice(["", "low", "medium", "high"]), default=None,
              help="Media resolution (Gemini; '' = the provider's default).")
@click.option("--audio-mode", type=click.Choice(["track", "turns"]), default=None, help="Audio as one track or turns.")
@click.option("--audio-speed", type=float, default=None, help="Playback speed of the audio.")
@click.option("--audio-pause", "audio_pause_s", type=click.FloatRange(min=0), default=None,
              help="Seconds of silence between chunks in the merged track.")
@click.option("--retriever", default=None, help="Embedder that ranks chunks for retrieved evidence.")
@click.option("--json", "as_json", is_flag=True, help="Print the new protocol as JSON.")
@click.pass_context
def protocol_set(ctx: click.Context, benchmark: str | None, from_config: bool, as_json: bool,
                 **given: Any) -> None:
    """Set the protocol of the benchmark's main runs; options not given keep their stored value. Changes no
    run: which runs are main (the leaderboard's) and what `eval judge` runs by default."""
    from playlisteval.eval.options import JudgeOptions, parse_size
    from playlisteval.store import protocol

    settings, engine, bench = _bench(ctx, benchmark)
    old = protocol.stored(engine, int(bench.id or 0))
    start = protocol.of_settings(settings) if from_config or old is None else dict(old)
    changes = {k: v for k, v in given.items() if v is not None}
    if "size" in changes:
        changes["frame_size"] = list(parse_size(changes.pop("size")))
    new = start | changes
    JudgeOptions.from_settings(protocol.applied(settings, new))  # a protocol no run could be made with: refused
    for mode in ("retrieved", "uniform", "oracle"):
        JudgeOptions.from_settings(protocol.applied(settings, new), evidence=mode)
    protocol.store(engine, int(bench.id or 0), new, "protocol set")
    doc = _document(settings, engine, bench)
    if as_json:
        emit_json({**doc, "previous": old})
        return
    moved = [f"{k}: {(old or {}).get(k)!r} → {v!r}" for k, v in new.items() if (old or {}).get(k) != v]
    console.print(Text(f"protocol of {bench.name!r} set" + (": " + "; ".join(moved) if moved else " (unchanged)")))
    console.print("[dim]which runs are main follows it now: `playlisteval eval runs` shows them[/]")


@click.command("versions")
@click.option("--benchmark", default=None, help="Benchmark name (default: [select] benchmark).")
@click.option("--json", "as_json", is_flag=True, help="Print the versions as JSON.")
@click.pass_context
def versions_cmd(ctx: click.Context, benchmark: str | None, as_json: bool) -> None:
    """List a benchmark's versions: number, pairs, content hash (sha256 of its export's data/test.jsonl),
    what made it, and whether it is live or kept as a frozen copy."""
    from playlisteval.analytics.provenance import iso, provenance
    from playlisteval.select import versions
    from playlisteval.store import versions as stored

    settings, engine, bench = _bench(ctx, benchmark)
    versions.ensure(engine, bench)
    rows = stored.listing(engine, int(bench.id or 0))
    out: list[dict[str, Any]] = [
        {"version": r.version, "pairs": r.pairs, "content_hash": r.content_hash, "reason": r.reason,
         "created": iso(r.created_at), "live": r is rows[-1], "frozen": bool(r.snapshot)} for r in rows]
    if as_json:
        emit_json({"benchmark": bench.name, "versions": out,
                   "provenance": provenance(engine, settings, int(bench.id or 0))})
        return
    table = Table(title=f"versions of {bench.name!r}")
    for column in ("version", "pairs", "content hash", "made by", "created", "state"):
        table.add_column(column)
    for v in out:
        table.add_row(str(v["version"]), str(v["pairs"]), v["content_hash"][:16], v["reason"], str(v["created"]),
                      "live" if v["live"] else "frozen" if v["frozen"] else "no copy")
    console.print(table)


def print_frozen_leaderboard(ctx: click.Context, benchmark: str | None, version: int, *, as_json: bool) -> bool:
    """`leaderboard --version N` of an older version: its frozen copy, printed; False for the live one."""
    import json
    from types import SimpleNamespace

    from playlisteval.analytics.tabular import fmt
    from playlisteval.select import versions

    _settings, _engine, bench = _bench(ctx, benchmark)
    frozen = versions.frozen(_engine, bench, version)
    if frozen is None:
        return False
    doc = frozen["leaderboard"]
    if as_json:
        click.echo(json.dumps(doc, default=str))
        return True
    table = Table(title=f"Leaderboard — {bench.name} version {version} (frozen)"
                  + (" (SIMULATED)" if doc.get("simulated") else ""))
    table.add_column("Judge", no_wrap=True)
    for header in ("Retrieved % [CI]", "Uniform % [CI]", "Δ pts [CI]"):
        table.add_column(header, justify="right")

    def ci(value: Any, kind: str) -> str:
        return fmt(SimpleNamespace(**value) if isinstance(value, dict) else None, kind)

    for r in doc.get("rows", []):
        table.add_row(Text(str(r.get("judge_shown") or r.get("judge"))), ci(r.get("retrieved_ci"), "ci"),
                      ci(r.get("uniform_ci"), "ci"), ci(r.get("difference_ci"), "cipts"))
    console.print(table)
    return True


COMMANDS: list[click.Command] = [protocol_group, versions_cmd]
