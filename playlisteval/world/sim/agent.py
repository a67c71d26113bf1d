"""The sim's agentic judge (SPEC G6, issue 20): it plays a judge that finds its own evidence offline.

It works in three moves, like a careful real judge would: first it searches the collection for the
question and for the first sentence where the two answers differ; then it fetches frames of the best
ranges those searches found; then it answers as the sim judge does (world/sim/judge.py), from the
scenes the fetched frames show. Asked to answer early (the forced last turn), it answers from whatever
it has. Its calls are a function of the request alone, so a replay asks the same tools.
"""

from __future__ import annotations

import difflib
import re

from playlisteval.models.request import ImagePart, ToolCall, ToolCallsPart, ToolResultPart
from playlisteval.world.sim import judge as sim_judge
from playlisteval.world.sim.context import SimContext
from playlisteval.world.synth import facts

_HIT = re.compile(r"^Video (\d+) (\d+)-(\d+) s", re.M)
RANGES = 3  # search hits whose frames it fetches
FPS = 1.0


def _differing(a: str, b: str) -> str:
    """The first sentence of A that B does not share (where the answers part)."""
    sa, sb = facts.sentences(facts.strip_citations(a)), facts.sentences(facts.strip_citations(b))
    for tag, i1, i2, _, _ in difflib.SequenceMatcher(a=sa, b=sb, autojunk=False).get_opcodes():
        if tag != "equal" and i1 < i2:
            return sa[i1]
    return ""


def act(ctx: SimContext) -> tuple[str, list[ToolCall]]:
    """The next turn: (text, tool calls); no calls means the text is the verdict."""
    parts = ctx.request.parts
    turns = sum(1 for p in parts if isinstance(p, ToolCallsPart))
    results = [p for p in parts if isinstance(p, ToolResultPart)]
    looked = any(isinstance(p, ImagePart) for p in parts)
    if ctx.request.tool_choice == "none" or looked:
        return sim_judge.judge(ctx), []
    if not results:
        queries = [ctx.section("question")]
        differing = _differing(ctx.section("model a"), ctx.section("model b"))
        if differing:
            queries.append(differing)
        calls = [ToolCall(id=f"sim_{turns}_{k}", name="search", arguments={"query": q, "k": 6})
                 for k, q in enumerate(queries) if q]
        return "[sim] Searching the collection for the question and for where the answers differ.", calls
    ranges: list[tuple[int, int, int]] = []
    for result in results:
        if result.name != "search":
            continue
        for m in _HIT.finditer(result.content):
            hit = (int(m.group(1)), int(m.group(2)), int(m.group(3)))
            if hit not in ranges:
                ranges.append(hit)
    ranked = sorted(ranges[: 2 * RANGES], key=lambda r: ranges.index(r))[:RANGES]
    if not ranked:
        return sim_judge.judge(ctx), []
    calls = [ToolCall(id=f"sim_{turns}_{k}", name="fetch_frames",
                      arguments={"video": v, "start": s, "end": e, "fps": FPS, "width": 640, "height": 480})
             for k, (v, s, e) in enumerate(ranked)]
    return f"[sim] Looking at the {len(calls)} best range(s) the searches found.", calls
