"""`playlisteval funnel`: what each gate saw, passed and rejected, and why (SPEC C–E); and its checker
faults, replies of the gate's own model that stayed unusable and so decided nothing (issue 9).

The per-gate counts come from ``analytics/funnel.sql``, run on the store itself. Reasons are counted by
their kind, the text before the first ": " (gates word their reasons "kind: specifics"); a fault's kind
names the role whose reply was unusable.
"""

from __future__ import annotations

import json
from collections import Counter
from importlib import resources
from typing import Any

import click
from rich.table import Table
from rich.text import Text
from sqlalchemy import text

from playlisteval.commands.support import console, settings_of
from playlisteval.config import Settings
from playlisteval.store import counts, open_store
from playlisteval.store.engine import read_core
from playlisteval.store.states import GATE_ORDER, State
from playlisteval.store.video_fps import gate_fps

#: The gates of the build in the order they run (SPEC C1–C3, D2–D4), from the state table.
GATES = GATE_ORDER
#: a gate result that is a checker fault (stages/faults.py's FAULT; not imported: that would load every
#: stage and the model stack at each CLI start, tests/test_funnel.py checks they agree)
FAULT = "fault"


def reason_kind(reason: str) -> str:
    return reason.split(": ", 1)[0].strip() or "(no reason)"


def fault_kind(reason: str) -> str:
    """"checker reply unusable: D3_first: ValueError: …" → "D3_first reply unusable"."""
    parts = reason.split(": ", 2)
    return f"{parts[1].strip()} reply unusable" if len(parts) >= 2 and parts[1].strip() else reason_kind(reason)


def _empty() -> dict[str, Any]:
    return {"seen": 0, "passed": 0, "rejected": 0, "checker_faults": 0, "reasons": {}, "fault_reasons": {}}


def funnel_sql() -> str:
    return resources.files("playlisteval").joinpath("analytics/funnel.sql").read_text(encoding="utf-8")


def funnel(settings: Settings, top: int = 5) -> dict[str, Any]:
    """{"gates": {GATE: {seen, passed, rejected, checker_faults, reasons, fault_reasons}}, "items": {STATE: n},
    "max_attempts": {"phase1": n, "phase2": n}, "fps": {GATE: …}}, with the ``top`` most frequent reason kinds
    per gate. ``seen`` = passed + rejected: a checker fault decided nothing and is counted on its own. ``fps``:
    what the video gates' latest calls got beside the SPEC's (store/video_fps.py, issue 42)."""
    engine = open_store(settings)
    gates: dict[str, dict[str, Any]] = {g: _empty() for g in GATES}
    # the counts kept by triggers (store/counts.py): verdicts and reason kinds per gate, items per state —
    # what analytics/funnel.sql and a read of every rejection's text gave, at the same cost at any size
    with read_core(engine) as s:  # SQL text, not the ORM's table classes (a third of the start-up, issue 26)
        verdicts: dict[str, Counter[str]] = {}
        for key, n in counts.by_key(s, "gate_verdict").items():
            gate, _, verdict = key.partition(" ")
            verdicts.setdefault(gate, Counter())[verdict] += n
        for gate, v in verdicts.items():
            gates.setdefault(gate, _empty()).update(seen=v["pass"] + v["reject"], passed=v["pass"],
                                                    rejected=v["reject"], checker_faults=v[FAULT])
        reasons: dict[str, Counter[str]] = {}
        fault_reasons: dict[str, Counter[str]] = {}
        for kind, found in (("gate_reject_kind", reasons), ("gate_fault_kind", fault_reasons)):
            for key, n in counts.by_key(s, kind).items():
                gate, _, why = key.partition(" ")
                found.setdefault(gate, Counter())[why] += n
        states = counts.by_key(s, "item_state")
        # one MAX a statement: each read from its index (2601, 2602), not a scan of the items
        p1, p2 = (s.execute(text(f"SELECT COALESCE(MAX({column}), 0) FROM item")).scalar() or 0
                  for column in ("phase1_attempts", "phase2_attempts"))
    for gate, counter in reasons.items():
        gates[gate]["reasons"] = dict(counter.most_common(top))
    for gate, counter in fault_reasons.items():
        gates[gate]["fault_reasons"] = dict(counter.most_common(top))
    return {
        "gates": gates,
        "items": {st.value: int(states.get(st.value, 0)) for st in State},
        "max_attempts": {"phase1": int(p1), "phase2": int(p2)},
        "fps": gate_fps(engine),
    }


def per_accepted(settings: Settings) -> dict[str, float | None]:
    """Generation attempts and spend per accepted question (None while nothing is accepted)."""
    engine = open_store(settings)
    with read_core(engine) as s:
        attempts, states = counts.by_key(s, "item_attempts"), counts.by_key(s, "item_state")
    p1, p2 = attempts.get("phase1", 0), attempts.get("phase2", 0)
    accepted = sum(states.get(st.value, 0) for st in (State.ACCEPTED, State.SELECTED, State.TOO_EASY))
    from playlisteval.models.budget import spent_usd  # the money read alone, not the runner (start-up)

    spent = spent_usd(engine)
    if not accepted:
        return {"accepted": 0, "phase1_attempts": None, "phase2_attempts": None, "usd": None}
    return {"accepted": int(accepted), "phase1_attempts": int(p1) / accepted, "phase2_attempts": int(p2) / accepted,
            "usd": spent / accepted}


def _table(data: dict[str, Any], extra: dict[str, float | None]) -> Table:
    table = Table(title="Gate funnel (cheapest gate first)")
    for name, justify in (("gate", "left"), ("seen", "right"), ("passed", "right"), ("rejected", "right"),
                          ("rejected %", "right"), ("checker faults", "right"), ("top reasons", "left")):
        # the row labels ("per accepted") stay whole; the reasons column takes the squeeze
        table.add_column(name, justify=justify, no_wrap=name == "gate")  # type: ignore[arg-type]
    for gate, g in data["gates"].items():
        rate = f"{100 * g['rejected'] / g['seen']:.1f}" if g["seen"] else "–"
        reasons = [f"{n} × {kind}" for kind, n in g["reasons"].items()]
        reasons += [f"{n} × fault: {kind}" for kind, n in g["fault_reasons"].items()]
        table.add_row(gate, str(g["seen"]), str(g["passed"]), str(g["rejected"]), rate, str(g["checker_faults"]),
                      "\n".join(reasons))
    table.add_section()
    items = ", ".join(f"{st}: {n}" for st, n in data["items"].items() if n)
    table.add_row("items", "", "", "", "", "", items or "none")
    table.add_row("max attempts", "", "", "", "", "",
                  f"Phase I {data['max_attempts']['phase1']}, Phase II {data['max_attempts']['phase2']}")
    table.add_row("video fps", "", "", "", "", "", "\n".join(g["text"] for g in data.get("fps", {}).values()))
    if extra["accepted"]:
        table.add_row("per accepted", "", "", "", "", "",
                      f"{extra['phase1_attempts']:.2f} Phase I + {extra['phase2_attempts']:.2f} Phase II attempts, "
                      f"{extra['usd']:.4f} USD ({extra['accepted']} accepted)")
    return table


@click.command("funnel")
@click.option("--json", "as_json", is_flag=True,
              help='Print {"gates": {GATE: {"seen", "passed", "rejected", "checker_faults", "reasons", '
                   '"fault_reasons"}}, "items": {STATE: n}, "max_attempts": {"phase1", "phase2"}, "fps": {GATE: '
                   '{"spec", "asked", "sent_min", "sent_max", "sent_as", "calls", "thinned", "text"}}} as JSON.')
@click.option("--top", type=click.IntRange(min=1), default=5, show_default=True,
              help="How many of the most frequent rejection reasons to list per gate.")
@click.pass_context
def funnel_command(ctx: click.Context, as_json: bool, top: int) -> None:
    """Per gate (C1, C2.1, C2.2, C3, D2, D3, D4): attempts seen (decided), passed and rejected, the top
    reasons for rejecting, and checker faults (the gate's own model gave no usable reply: nothing was
    decided and the step was tried again); items per state; the most attempts any seed used per phase;
    the fps the video gates' clips got beside the SPEC's (frames sent per second covered, or the rate a
    video file was sampled at); attempts and cost per accepted question. An unreadable generator reply
    counts against its phase's structural gate (C1, D2)."""
    settings = settings_of(ctx)
    data = funnel(settings, top)
    if as_json:
        click.echo(json.dumps(data, ensure_ascii=False))
        return
    console.print(_table(data, per_accepted(settings)))
    from playlisteval.commands.glossary import legend  # what C1 … D4 check (README "Glossary")

    console.print(Text(legend(list(data["gates"])), style="dim"))
    if not any(g["seen"] or g["checker_faults"] for g in data["gates"].values()):
        console.print("  hint: no gate has seen a candidate yet: `playlisteval build` runs the items through them",
                      highlight=False)


COMMANDS = [funnel_command]
