"""Sim judges (F difficulty gate, G meta-evaluation); the human study's grounder (H) is sim_human.py.

A sim judge sees only the scenes its frames or clips show. It prefers the answer that contradicts
fewer of the details it can see; where it sees nothing that separates the answers it guesses, with
the position bias and (for weak judges) the length bias real judges show.

Sampled at a temperature (``eval judge --temperature T``, issue 21) its choice is tempered as a model's
next-token draw is: the probability p of an answer becomes p^(1/T) / (p^(1/T) + (1 − p)^(1/T)) — T = 1
leaves it, T → 0 always picks the likelier answer (one verdict however often it is asked), T > 1 flattens
it toward a coin. The draw itself is keyed by the whole request (seed, temperature, the sample's attempt),
so each sample is its own deterministic draw. Without a temperature nothing changes.
"""

from __future__ import annotations

import difflib
import math

from playlisteval.world.sim.context import SimContext
from playlisteval.world.synth import facts, vocab
from playlisteval.world.synth.facts import Evidence


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


def tempered(p: float, temperature: float | None) -> float:
    """The probability of the likelier-or-not answer after sampling at ``temperature`` (None: as it is)."""
    if temperature is None or p in (0.0, 1.0):
        return p
    if temperature <= 0:
        return 1.0 if p > 0.5 else 0.0 if p < 0.5 else 0.5
    a, b = p ** (1 / temperature), (1 - p) ** (1 / temperature)
    return a / (a + b) if a + b > 0 else (1.0 if p > 0.5 else 0.0)


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
        pick = better if ctx.chance(tempered(p, ctx.request.settings.temperature)) else worse
        why = (f"Model A contradicts {wrong_a} visible detail(s), Model B {wrong_b}; "
               f"Model {pick} is the more accurate account.")
    else:
        p_a = 0.5 + (0.15 if ctx.weak else 0.05)  # position bias: the first answer is favoured
        if ctx.weak and abs(len(a) - len(b)) > 0.02 * max(len(a), len(b), 1):
            p_a += 0.15 if len(a) > len(b) else -0.15  # length bias: the longer answer looks better
        pick = "A" if ctx.chance(tempered(p_a, ctx.request.settings.temperature)) else "B"
        why = f"Nothing visible separates the answers; Model {pick} reads as the more complete one."
    return f"{seen}{why}\n\n[[{pick}]]"

