"""`playlisteval show ITEM`: one item's whole story (see playlisteval/build/story.py for what it holds)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import click
from rich.markup import escape
from rich.table import Table

from playlisteval.commands.support import console, settings_of
from playlisteval.commands.terminal_text import plain_all
from playlisteval.store import open_store


def _when(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M:%S")


def _print_attempt(attempt: dict[str, Any]) -> None:
    phase, number = attempt["phase"], attempt["attempt"]
    mark = " (current)" if attempt.get("current") else ""
    console.rule(f"Phase {'I' if phase == 1 else 'II'} · attempt {number}{mark}", align="left")
    if attempt.get("malformed"):
        console.print("[red]the generator's reply could not be read[/]")
    if phase == 1:
        console.print(f"[bold]question[/] ({escape(attempt['keyword'] or '-')}): {escape(attempt['question'])}")
        console.print(f"[bold]gold answer[/]: {escape(attempt['answer'])}")
    else:
        for answer in attempt["answers"]:
            console.print(f"[bold]rating {answer['rating']}[/]: {escape(answer['text'])}")
    console.print(f"[dim]template {attempt['template']} ({attempt['template_hash'][:12]})[/]")
    for gate in attempt["gates"]:
        colour = {"pass": "green", "reject": "red"}.get(gate["verdict"], "yellow")
        console.print(f"  [{colour}]{gate['gate']} {gate['verdict']}[/] {escape(gate['reason'])}")
        if gate.get("feedback"):
            console.print(f"    [dim]feedback to the next attempt: {escape(gate['feedback'])}[/]")


def _print_story(story: dict[str, Any]) -> None:
    seed = story["seed"]
    console.print(f"[bold]item {story['item']}[/] · state [bold]{story['state']}[/] · domain {seed['domain']} · "
                  f"Phase I attempts {story['phase1_attempts']} · Phase II attempts {story['phase2_attempts']}")
    if story["error"]:
        console.print(f"[red]error[/] (from {story['failed_from']}): {escape(story['error'])}")
    for n, seg in enumerate(seed["segments"], 1):
        console.print(f"  segment {n}: {escape(str(seg.get('video')))} [{seg.get('start', 0):.0f}s–"
                      f"{seg.get('end', 0):.0f}s] ({escape(str(seg.get('playlist')))})")
    for attempt in story["attempts"]:
        _print_attempt(attempt)
    if story["events"]:
        table = Table(title="transitions", title_justify="left")
        for column in ("v", "at", "from", "event", "to", "worker"):
            table.add_column(column)
        for e in story["events"]:
            table.add_row(str(e["version"]), _when(e["at"]), e["from"], e["event"], e["to"], e["worker"] or "")
        console.print(table)
    if story["calls"]:
        table = Table(title="model calls", title_justify="left")
        for column in ("id", "role", "model", "status", "tokens in/out", "latency s", "USD", "error", "fps"):
            table.add_column(column)
        for c in story["calls"]:
            table.add_row(str(c["id"]), c["role"], c["model"], c["status"] + (" (cache)" if c["cache_hit"] else ""),
                          f"{c['input_tokens']}/{c['output_tokens']}", f"{c['latency_s']:.2f}",
                          f"{c['usd']:.4f}", escape((c["error"] or "")[:80]),
                          c.get("fps") or "")  # issue 42: what a video call's clips got, of the fps asked
        console.print(table)
    spend = story["spend"]
    console.print(f"spend: {spend['usd']:.4f} USD over {spend['paid_calls']} paid call(s) "
                  f"({spend['cache_hits']} cache hit(s), {spend['errors']} error(s))")


def _print_tool_calls(judgments: list[dict[str, Any]]) -> None:
    """Each agentic judgment of the item's pairs: its turns, and every tool call with what it returned."""
    for j in judgments:
        console.rule(f"agentic judgment · run {j['run_id']} · {escape(j['judge'])} · pair {j['pair_id']}", align="left")
        console.print(f"{j['steps']} turn(s), {j['tokens']} token(s), {j['stopped']}; verdict "
                      f"{escape(str(j['verdict'] or '-'))} ({j['outcome']})")
        table = Table(title_justify="left")
        for column in ("turn", "tool", "arguments", "served", "result"):
            table.add_column(column, overflow="fold")
        for c in j["tool_calls"]:
            served = f"{len(c['chunks'])} chunk(s)" + (f", {c['frames']} frame(s)" if c["frames"] else "")
            table.add_row(str(c["step"]), c["tool"], escape(json.dumps(c["arguments"])[:120]),
                          "error" if c["error"] else served, escape(c["result"][:120]))
        console.print(table)


@click.command()
@click.argument("item", type=click.IntRange(min=1))
@click.option("--json", "as_json", is_flag=True, help="Print the story as one JSON object (prompts, replies too).")
@click.option("--prompts", is_flag=True, help="Print every call's prompt and reply under the calls table.")
@click.pass_context
def show(ctx: click.Context, item: int, as_json: bool, prompts: bool) -> None:
    """One item's whole story: seed, segments, every attempt with its output, gate verdicts and the
    feedback the next attempt received, transitions, model calls with tokens, latency and dollars."""
    settings = settings_of(ctx)
    # the stages (and with them the model stack) only when an item is shown: `playlisteval --help` stays quick
    from playlisteval.build.story import item_story
    from playlisteval.eval.agent_record import item_tool_calls
    from playlisteval.prompts.render import prompts_dir_of

    story = item_story(open_store(settings), item, prompts_dir_of(settings))
    story["agentic_judgments"] = item_tool_calls(open_store(settings), item)  # issue 20: the judge's tool calls
    if as_json:
        click.echo(json.dumps(story, indent=2, default=str))
    else:
        story = plain_all(story)  # model text carries no terminal escapes to the screen (issue 25)
        _print_story(story)
        _print_tool_calls(story["agentic_judgments"])
        if prompts:
            for c in story["calls"]:
                console.rule(f"call {c['id']} · {c['role']} · {c['status']}", align="left")
                console.print(escape(c["prompt"] or "(prompt not recorded: a call made before prompts were kept)"))
                console.print(f"[bold]reply[/]: {escape(c['reply'] or '-')}")


COMMANDS = [show]
