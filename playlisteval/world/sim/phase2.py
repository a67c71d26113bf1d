"""Sim roles of Phase II: graded wrong answers (D1) and the two rankings that gate them (D3, D4).

D1 swaps the gold's visual words for wrong ones (rating 4: one word, 3: two, 2: most, 1: all plus an
invented frame), nested so that each lower rating carries every error of the one above: the intended
order is then exactly the order of "how many things the frames contradict", which D4 counts. Each
wrong answer is then reworded to a length of its own (sim_wording), shorter or longer than the gold,
so that word counts say nothing about the rating.
"""

from __future__ import annotations

import math
import re
from typing import Any

from playlisteval.prompts.schemas import DistractorGeneration, Ranking
from playlisteval.world.sim import wording as sim_wording
from playlisteval.world.sim.context import SimContext
from playlisteval.world.sim.phase1 import an
from playlisteval.world.synth import facts, vocab

ATTRIBUTES: dict[str, tuple[str, float, str]] = {  # slot -> (attribute, importance, description)
    "shape": ("Shape identity", 0.25, "Which shape stands in each cited frame."),
    "colour": ("Colour accuracy", 0.25, "The colour of the shape in each cited frame."),
    "position": ("Spatial layout", 0.2, "Where in the frame the shape stands: left, centre or right."),
    "sign": ("Signage text", 0.15, "The words of the on-screen sign that anchors each moment."),
    "background": ("Scene context", 0.15, "The backdrop of each frame and the setting it accompanies."),
}
_POOLS = {"shape": sorted(vocab.SHAPES), "colour": sorted(vocab.COLOURS),
          "background": sorted(vocab.BACKGROUNDS), "position": list(vocab.POSITIONS)}
_WORD = re.compile(r"[A-Za-z]+")
_ARTICLE = re.compile(r"\b([Aa]n?) ([A-Za-z]+)\b")


def _replace(text: str, mapping: dict[str, str]) -> str:
    """Swap whole words by their canonical form, keeping the case of the first letter."""
    def swap(m: re.Match[str]) -> str:
        word = m.group(0)
        new = mapping.get(facts.normalise(word)) if facts.slot_of(word) else mapping.get(word.lower())
        if new is None:
            return word
        return new[:1].upper() + new[1:] if word[:1].isupper() and facts.slot_of(new) != "sign" else new

    def article(m: re.Match[str]) -> str:  # "an orange" -> "a red": a wrong article is a textual tell
        if not facts.slot_of(m.group(2)):
            return m.group(0)
        fixed = "an" if m.group(2)[0].lower() in "aeiou" else "a"
        return (fixed.capitalize() if m.group(1)[0].isupper() else fixed) + " " + m.group(2)
    return _ARTICLE.sub(article, _WORD.sub(swap, text))


def _wrong_word(ctx: SimContext, slot: str, word: str, seen: dict[str, set[str]], taken: set[str],
                used: set[str]) -> str:
    if slot == "sign":
        return vocab.make_sign(ctx.rng, taken)
    pool = [w for w in _POOLS[slot] if w != word]
    unseen = [w for w in pool if w not in seen[slot]]  # a word no visible frame shows is plainly wrong
    # a word the answer does not use yet: two details merging into one would shrink its vocabulary
    # with every error, and make "fewer distinct words" a tell of the worse answers
    fresh = [w for w in unseen or pool if w not in used]
    pick = ctx.rng.choice(fresh or unseen or pool)
    used.add(pick)
    return pick


def _invented_frame(ctx: SimContext, taken: set[str]) -> tuple[str, str]:
    """A frame that never appears, told in the gold's own phrasing (so its words alone do not stand
    out, and the rewording can lengthen or shorten it like any other sentence)."""
    p = {slot: ctx.rng.choice(pool) for slot, pool in _POOLS.items()}
    sign = vocab.make_sign(ctx.rng, taken)
    return (f'When the sign "{sign}" is on screen, {an(p["colour"])} {p["shape"]} rests at the '
            f'{p["position"]} of {an(p["background"])} backdrop.',
            f'invented frame: {p["colour"]} {p["shape"]} under "{sign}"')


def _kept(gold: str, degraded: set[str]) -> list[dict[str, Any]]:
    """The attributes a wrong answer leaves as in the gold, each with the gold's own words that carry it
    (read from the gold, no draw: the rest of the reply is what it was before this record was complete)."""
    said = facts.claims(gold)
    out = []
    for slot, (attribute, _, _) in ATTRIBUTES.items():
        if attribute in degraded:
            continue
        words = sorted(said.get(slot, set()))
        element = ", ".join(words) if words else f"the gold's {attribute.lower()}"
        out.append({"attribute_name": attribute, "stability_by_elements": [
            {"element": element, "impact": "carried over from the gold unchanged, so this attribute stays as strong"}]})
    return out


def distractors(ctx: SimContext) -> dict[str, Any]:
    gold = ctx.section("gold answer")
    ev = ctx.evidence()
    seen: dict[str, set[str]] = {slot: set() for slot in facts.SLOTS}
    for scene in ev.scenes:
        for slot, word in scene.visual.words().items():
            seen[slot].add(word)
    taken = set(seen["sign"]) | set(vocab.find_signs(gold))
    types = facts.visual_words(gold)
    ctx.rng.shuffle(types)
    used = set(types)
    wrong = {w: _wrong_word(ctx, facts.slot_of(w) or "colour", w, seen, taken, used) for w in types}
    n = len(types)
    counts = {4: min(1, n), 3: min(2, n), 2: min(n, max(3, math.ceil(0.75 * n))), 1: n}
    # Narrated slips (text_verifiable): topic nouns swapped for another topic's, 5 - rating of them.
    narrated = ctx.chance(ctx.settings.narrated_degradation)
    occurrences = [m for m in _WORD.finditer(gold) if m.group(0).lower() in vocab.TOPIC_OF_WORD]
    ctx.rng.shuffle(occurrences)
    own = {vocab.TOPIC_OF_WORD[m.group(0).lower()] for m in occurrences}
    foreign = sorted(w for w, t in vocab.TOPIC_OF_WORD.items() if t not in own)
    # each wrong answer is then reworded to a length of its own, drawn independently of its rating
    ratings: dict[int, dict[str, Any]] = {}
    for rating in (4, 3, 2, 1):
        changed = types[: counts[rating]]
        text = _replace(gold, {w: wrong[w] for w in changed})
        by_attr: dict[str, list[dict[str, str]]] = {}
        for w in changed:
            attr = ATTRIBUTES[facts.slot_of(w) or "colour"][0]
            by_attr.setdefault(attr, []).append({
                "element": f"{w} -> {wrong[w]}",
                "impact": "the answer now describes what the frame does not show", "modality": "visual_only"})
        if rating == 1 or n == 0:
            invented: list[str] = []
            for _ in range(1 if n else 5 - rating):
                sentence, element = _invented_frame(ctx, taken)
                invented.append(sentence)
                by_attr.setdefault("Scene context", []).append({
                    "element": element, "impact": "a fluent account of a frame that never appears",
                    "modality": "visual_only"})
            text = _append_to_evidence(text, " ".join(invented))
        if narrated and foreign:
            for m in occurrences[: 5 - rating]:
                new = ctx.rng.choice(foreign)
                text = _replace_at(text, m.group(0), new)
                by_attr.setdefault("Scene context", []).append({
                    "element": f"narrated {m.group(0)} -> {new}",
                    "impact": "contradicts what the narration says", "modality": "text_verifiable"})
        ratings[rating] = {
            "response": sim_wording.reword(text, gold, ctx.rng),
            "attribute_degradations": [{"attribute_name": a, "degradation_by_elements": e}
                                       for a, e in by_attr.items()],
            "constant_attributes": _kept(gold, set(by_attr)),
            "upgraded_attributes": [],
        }
    if ctx.chance(ctx.settings.wrong_severity):  # two ratings trade texts: the severities lie
        hi = ctx.rng.choice([4, 3, 2])
        ratings[hi]["response"], ratings[hi - 1]["response"] = \
            ratings[hi - 1]["response"], ratings[hi]["response"]
    analysis = []
    gold_words = facts.claims(gold)
    for slot, (attr, _, _) in ATTRIBUTES.items():
        elements = [{"element": w, "impact": "matches the cited frame"} for w in sorted(gold_words[slot])]
        analysis.append({"attribute_name": attr, "quality_by_elements": elements or [
            {"element": "not mentioned", "impact": "the gold makes no claim here"}]})
    return DistractorGeneration.model_validate({
        "causal_attributes": [{"attribute_name": a, "importance_score": w, "description": d}
                              for a, w, d in ATTRIBUTES.values()],
        "gold_standard_analysis": {"attribute_analysis": analysis},
        **{f"rating_{r}": ratings[r] for r in (4, 3, 2, 1)},
    }).model_dump()


def _append_to_evidence(text: str, extra: str) -> str:
    """Invented sentences go at the end of the second paragraph (the evidence), keeping the shape."""
    paras = re.split(r"(\n\s*\n)", text)
    idx = 2 if len(paras) >= 3 else 0
    paras[idx] = paras[idx].rstrip() + " " + extra
    return "".join(paras)


def _replace_at(text: str, old: str, new: str) -> str:
    """Replace one occurrence of a word (the first not yet replaced): a slip, not a consistent swap."""
    return re.sub(rf"\b{re.escape(old)}\b", new, text, count=1)


def _candidates(ctx: SimContext) -> dict[int, str]:
    """Candidates by the number the prompt gave them (0- or 1-based, as the stage chose)."""
    return ctx.numbered("candidate")


def _ranking(ctx: SimContext, scores: dict[int, float], notes: dict[int, str], summary: str) -> dict:
    order = sorted(scores, key=lambda i: (scores[i], ctx.rng.random()))
    return Ranking.model_validate({
        "rankings": [{"rank": r, "candidate_index": i, "reasoning": notes[i]} for r, i in enumerate(order, 1)],
        "overall_summary": summary,
    }).model_dump()


def text_ranking(ctx: SimContext) -> dict[str, Any]:
    """D3: without video only narrated slips (another topic's words) give the order away."""
    cands = _candidates(ctx)
    topics = [vocab.TOPIC_OF_WORD[w] for t in cands.values() for w in facts.topic_words(t)]
    main = max(set(topics), key=topics.count) if topics else None
    off = {i: sum(1 for w in facts.topic_words(t) if vocab.TOPIC_OF_WORD[w] != main) for i, t in cands.items()}
    if any(off.values()):
        notes = {i: f"[sim] {n} narrated word(s) off the topic of the set" for i, n in off.items()}
        return _ranking(ctx, {i: float(n) for i, n in off.items()}, notes,
                        "[sim] candidates differ in what they say was narrated")
    notes = {i: "[sim] nothing in the text separates it from the others" for i in cands}
    return _ranking(ctx, {i: ctx.rng.random() for i in cands}, notes,
                    "[sim] the candidates read alike without the video; order is a guess")


def video_ranking(ctx: SimContext) -> dict[str, Any]:
    """D4: rank by how many visual details the clips contradict (fewest first, ties at random)."""
    ev = ctx.evidence()
    scores, notes = {}, {}
    for i, text in _candidates(ctx).items():
        wrong, checked = ev.contradictions(text, best_match=True)
        scores[i] = float(wrong)
        notes[i] = f"[sim] {wrong} visual detail(s) contradicted in {checked} checked sentence(s)"
    return _ranking(ctx, scores, notes, "[sim] ranked by details the clips contradict")
