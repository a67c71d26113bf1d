"""Sim judges (F difficulty gate, G meta-evaluation) and the evidence grounder of the human study (H).

A sim judge sees only the scenes its frames or clips show. It prefers the answer that contradicts
fewer of the details it can see; where it sees nothing that separates the answers it guesses, with
the position bias and (for weak judges) the length bias real judges show.
"""

from __future__ import annotations

import difflib
import json
import math
import re

from playlisteval.models.sim_context import SimContext, mmss
from playlisteval.synth import facts, vocab
from playlisteval.synth.facts import Evidence


def _off_topic(texts: list[str]) -> list[int]:
    """Narrated words from another topic than the one both texts mostly talk about."""
    topics = [vocab.TOPIC_OF_WORD[w] for t in texts for w in facts.topic_words(t)]
    if not topics:
        return [0 for _ in texts]
    main = max(set(topics), key=topics.count)
    return [sum(1 for w in facts.topic_words(t) if vocab.TOPIC_OF_WORD[w] != main) for t in texts]


def _compare(ev: Evidence, a: str, b: str) -> tuple[int, int, int, int]:
    """(A's contradicted details, B's, differing sentences, differing sentences the evidence checks)."""
    sa = facts.sentences(facts.strip_citations(a))
    sb = facts.sentences(facts.strip_citations(b))
    wrong_a = wrong_b = differing = checked = 0
    matcher = difflib.SequenceMatcher(a=sa, b=sb, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        # pair changed sentences in order; a sentence with no partner is compared on its own
        xs, ys = sa[i1:i2], sb[j1:j2]
        for k in range(max(len(xs), len(ys))):
            x = xs[k] if k < len(xs) else ""
            y = ys[k] if k < len(ys) else ""
            differing += 1
            cx, cy = facts.claims(x), facts.claims(y)
            scene = ev.by_sign(cx["sign"] | cy["sign"])
            if scene is None:
                continue
            checked += 1
            wrong_a += facts.mismatches(cx, scene.visual) if x else 0
            wrong_b += facts.mismatches(cy, scene.visual) if y else 0
    return wrong_a, wrong_b, differing, checked


def judge(ctx: SimContext) -> str:
    a, b = ctx.section("model a"), ctx.section("model b")
    ev = ctx.evidence()
    wrong_a, wrong_b, differing, checked = _compare(ev, a, b)
    slips = _off_topic([a, b])
    wrong_a, wrong_b = wrong_a + slips[0], wrong_b + slips[1]
    seen = (f"[sim] Compared the answers against {ctx.frame_count()} frame(s) and {len(ctx.clips())} "
            f"clip(s) showing {len(ev.scenes)} scene(s): {differing} sentence(s) differ, {checked} of them "
            "show something the evidence can check. ")
    if wrong_a != wrong_b:
        better, worse = ("A", "B") if wrong_a < wrong_b else ("B", "A")
        # a larger gap between the answers is easier to see; weak judges need a larger one
        p = 1 - 0.5 * math.exp(-(0.5 if ctx.weak else 1.5) * abs(wrong_a - wrong_b))
        pick = better if ctx.chance(p) else worse
        why = (f"Model A contradicts {wrong_a} visible detail(s), Model B {wrong_b}; "
               f"Model {pick} is the more accurate account.")
    else:
        p_a = 0.5 + (0.15 if ctx.weak else 0.05)  # position bias: the first answer is favoured
        if ctx.weak and abs(len(a) - len(b)) > 0.02 * max(len(a), len(b), 1):
            p_a += 0.15 if len(a) > len(b) else -0.15  # length bias: the longer answer looks better
        pick = "A" if ctx.chance(p_a) else "B"
        why = f"Nothing visible separates the answers; Model {pick} reads as the more complete one."
    return f"{seen}{why}\n\n[[{pick}]]"


def ground_evidence(ctx: SimContext) -> str:
    """H2: time ranges (M:S on each clip's own clock) for the two hops and every answer sentence."""
    clips = {c.number: c for c in ctx.clips()}
    per_clip: dict[int, Evidence] = {}
    for number, clip in clips.items():
        ev = Evidence()
        for scene in (clip.world.scenes if clip.world else []):
            if scene.start < clip.part.end and scene.end > clip.part.start:
                ev.add(scene, number, clip.part.start)
        per_clip[number] = ev

    def ranges(text: str, hops: list[int]) -> list[dict[str, object]]:
        out = []
        for hop in hops:
            clip = clips.get(hop)
            scene = per_clip[hop].anchor(text) if clip else None
            if clip and scene:
                out.append({"hop": hop, "start_time": mmss(max(scene.start, clip.part.start) - clip.part.start),
                            "end_time": mmss(min(scene.end, clip.part.end) - clip.part.start),
                            "event": f'a {scene.visual.colour} {scene.visual.shape} under the sign '
                                     f'"{scene.visual.sign}"'})
        return out

    hop_groundings = []
    for hop in (1, 2):
        found = ranges(ctx.section(f"hop {hop}"), [hop])
        hop_groundings.append({"hop": hop, "ranges": [{k: v for k, v in r.items() if k != "hop"}
                                                      for r in found]})
    block = ctx.section("reference answer sentences") or ctx.section("reference answer")
    numbered = [(int(m[1]), m[2]) for m in re.finditer(r"^\s*\[?(\d+)[\].:)]\s*(.+)$", block, re.M)]
    if not numbered:
        numbered = list(enumerate(facts.sentences(block)))
    groundings = [{"sentence": i, "ranges": ranges(s, [1, 2])} for i, s in numbered]
    return json.dumps({"hop_groundings": hop_groundings, "groundings": groundings})
