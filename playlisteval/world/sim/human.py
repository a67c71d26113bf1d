"""Sim role H: the evidence grounder of the human study (SPEC H2).

It reads the request like the grounding model would: the two hops and the numbered sentences of the
reference answer from the prompt, and what each video shows from the world beside it. A hop or a
sentence is placed on the scene it talks about (by its on-screen sign, else the scene whose visual facts
it fits best), as an M:S range on that video's own clock. What the sim cannot place it leaves without
ranges, as a model would for a summary sentence; a hop left without a range makes the reply unusable
for the study, which the checker in playlisteval.human.grounding reports as a fault.
"""

from __future__ import annotations

import re
from typing import Any

from playlisteval.world.sim.context import Clip, SimContext, mmss
from playlisteval.world.synth import facts
from playlisteval.world.synth.facts import Evidence
from playlisteval.world.synth.world import Scene

_NUMBERED = re.compile(r"^\s*\[?(\d+)[\].:)]\s*(.+)$", re.M)


def _evidence(clip: Clip) -> Evidence:
    """The scenes one video part shows (only those inside its range: the model sees nothing else)."""
    ev = Evidence()
    for scene in (clip.world.scenes if clip.world else []):
        if scene.start < clip.part.end and scene.end > clip.part.start:
            ev.add(scene, clip.number, clip.part.start)
    return ev


def _event(scene: Scene) -> str:
    v = scene.visual
    article = "an" if v.colour[:1] in "aeiou" else "a"
    return f'{article} {v.colour} {v.shape} at the {v.position} of the frame, under the sign "{v.sign}"'


def _range(clip: Clip, scene: Scene) -> dict[str, str]:
    """The scene's stretch inside the part, on the part's clock (its start is 0:00)."""
    start = max(scene.start, clip.part.start) - clip.part.start
    end = min(scene.end, clip.part.end) - clip.part.start
    return {"start_time": mmss(start), "end_time": mmss(end), "event": _event(scene)}


def ground_evidence(ctx: SimContext) -> dict[str, Any]:
    clips = {c.number: c for c in ctx.clips() if c.number in (1, 2)}
    seen = {n: _evidence(c) for n, c in clips.items()}

    def place(text: str, hop: int, best_match: bool) -> dict[str, str] | None:
        clip = clips.get(hop)
        if clip is None or not text.strip():
            return None
        scene = seen[hop].anchor(text, best_match=best_match)
        return _range(clip, scene) if scene is not None else None

    hop_groundings = []
    for hop in (1, 2):
        found = place(ctx.section(f"hop {hop}"), hop, best_match=True)
        hop_groundings.append({"hop": hop, "ranges": [found] if found else []})

    block = ctx.section("reference answer sentences") or ctx.section("reference answer")
    numbered = [(int(m[1]), m[2]) for m in _NUMBERED.finditer(block)]
    if not numbered:
        numbered = list(enumerate(facts.sentences(block)))
    groundings = []
    for number, sentence in numbered:
        ranges = []
        for hop in (1, 2):  # a sentence names the sign of the scene it describes: only that video has it
            found = place(sentence, hop, best_match=False)
            if found:
                ranges.append({"hop": hop, **found})
        groundings.append({"sentence": number, "ranges": ranges})
    # a dict, not text: the sim's malformed-JSON fault then cuts the JSON, as it does for every JSON role
    return {"hop_groundings": hop_groundings, "groundings": groundings}
