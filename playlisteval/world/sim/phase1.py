"""Sim roles of Phase I: the question generator (B), the text-only tests (C2), grounding (C3).

Every answer is built from world facts the request actually exposes (its clips), so the gates see
real structure: citations that map onto 30-s chunks, visual words the transcript never says.
"""

from __future__ import annotations

import math
from typing import Any

from playlisteval.prompts.schemas import Grounding, QAGeneration, TextAnswer, Verdict
from playlisteval.world.sim.context import Clip, SimContext, mmss
from playlisteval.world.synth import facts
from playlisteval.world.synth.world import Scene, scenes_in

CHUNK_S = 30.0
GENERIC_ANSWER = (
    "The transcripts describe the theme of both moments, but they never say what the frames look like, "
    "so the specific details the question asks about cannot be determined from the text; the most "
    "likely reading is that both moments illustrate the same idea from the narration."
)


def an(word: str) -> str:
    return ("an " if word[:1].lower() in "aeiou" else "a ") + word


def _chunks(clip: Clip, cited: list[tuple[int, int]]) -> set[int]:
    """30-s chunks of the video that clip-relative second ranges cover (as gate C1 maps them)."""
    out: set[int] = set()
    for a, b in cited:
        first = int((clip.part.start + a) // CHUNK_S)
        last = int(math.ceil((clip.part.start + b) / CHUNK_S)) - 1
        out.update(range(first, max(first, last) + 1))
    return out


def _cite_range(clip: Clip, scene: Scene) -> tuple[int, int]:
    """The scene's stretch inside the clip, in whole seconds rounded inwards (never past the scene)."""
    a = math.ceil(max(scene.start, clip.part.start) - clip.part.start)
    b = math.floor(min(scene.end, clip.part.end) - clip.part.start)
    return a, max(a + 1, b)


def _pick_scenes(ctx: SimContext, clip: Clip) -> tuple[Scene, list[Scene]]:
    """A hop scene well inside the clip, plus neighbours until the cited ranges cover two chunks."""
    assert clip.world is not None
    inside = [s for s in scenes_in(clip.world, clip.part.start, clip.part.end)
              if min(s.end, clip.part.end) - max(s.start, clip.part.start) >= 10]
    inside = inside or scenes_in(clip.world, clip.part.start, clip.part.end)
    if not inside:  # the index's segment lies past this file's story: the file changed since it was indexed
        raise ValueError(f"no scene of {clip.world.title!r} lies in {clip.part.start:g}–{clip.part.end:g} s (the "
                         "video is shorter now): its file changed since it was indexed; run `playlisteval index`")
    hop = ctx.rng.choice(inside)
    cited = [hop]
    pos = inside.index(hop)
    for step in (1, -1, 2, -2, 3, -3):
        if len(_chunks(clip, [_cite_range(clip, s) for s in cited])) >= 2:
            break
        if 0 <= pos + step < len(inside):
            cited.append(inside[pos + step])
    return hop, sorted(cited, key=lambda s: s.start)


def generate_qa(ctx: SimContext) -> dict[str, Any]:
    clips = [c for c in ctx.clips() if c.world][:2]
    keyword = ctx.section("keyword").split("\n")[0].strip() or "examine"
    row = ctx.section("row").split("\n")[0].strip() or "Conceptual"
    column = ctx.section("column").split("\n")[0].strip() or "Analyze"
    if len(clips) < 2:
        return _generic_qa(keyword, row, column)
    picks = [_pick_scenes(ctx, c) for c in clips]
    ranges = {(c.number, s.index): _cite_range(c, s) for c, (_, cited) in zip(clips, picks, strict=True)
              for s in cited}
    mode = ctx.rng.choice(["one_chunk", "span_clips", "two_paragraphs"]) \
        if ctx.chance(ctx.settings.bad_citation) else None
    if mode == "one_chunk":  # every clip-2 claim cites one stretch inside a single 30-s chunk
        clip2, hop2 = clips[1], picks[1][0]
        lo, hi = max(hop2.start, clip2.part.start), min(hop2.end, clip2.part.end)
        chunk = math.floor((lo + hi) / 2 / CHUNK_S) * CHUNK_S
        a = math.ceil(max(lo, chunk) - clip2.part.start)
        b = math.floor(min(hi, chunk + CHUNK_S) - clip2.part.start)
        for key in ranges:
            if key[0] == clip2.number:
                ranges[key] = (a, max(a + 1, min(b, a + 8)))

    def cite(clip: Clip, scene: Scene) -> str:
        a, b = ranges[(clip.number, scene.index)]
        return f"(clip{clip.number} @ {mmss(a)} - {mmss(b)})"

    nouns = []
    for (hop, _), clip in zip(picks, clips, strict=True):
        topic = clip.world.topic.lower() if clip.world else "topic"
        nouns.append(ctx.rng.choice(hop.topic_words or [topic]))
    h1, h2 = picks[0][0], picks[1][0]
    v1, v2 = h1.visual, h2.visual
    kw = keyword[:1].upper() + keyword[1:]
    question = (
        f'{kw} how the shape standing at the {v1.position} of the frame beneath the sign reading '
        f'"{v1.sign}", shown while the narrator talks about {nouns[0]}, relates to the shape standing '
        f'at the {v2.position} of the frame beneath the sign reading "{v2.sign}", shown while the '
        f'narrator talks about {nouns[1]}, in light of what their forms suggest about this theme?'
    )
    intro = " ".join(
        f'In the {nth} moment, the shape beneath the sign "{h.visual.sign}" stands at the '
        f"{h.visual.position} of the frame {cite(c, h)}."
        for nth, c, (h, _) in zip(("first", "second"), clips, picks, strict=True)
    )
    evidence = []
    for clip, (_, cited) in zip(clips, picks, strict=True):
        for s in cited:
            v = s.visual
            noun = s.topic_words[0] if s.topic_words else nouns[0]
            evidence.append(
                f'When the sign "{v.sign}" is on screen, {an(v.colour)} {v.shape} rests at the {v.position} '
                f"of {an(v.background)} backdrop while the narrator speaks of {noun} {cite(clip, s)}."
            )
    ending = (
        f"Taken together, the {v1.colour} {v1.shape} of the first moment anchors the discussion of "
        f"{nouns[0]} {cite(clips[0], h1)}. The {v2.colour} {v2.shape} of the second moment carries "
        f"the same theme into {nouns[1]} {cite(clips[1], h2)}. Both moments therefore tie what is "
        "said to what the frames show."
    )
    paragraphs = [intro, " ".join(evidence), ending]
    if mode == "span_clips":  # a range that runs from one clip into the other (SPEC B4 forbids it)
        a1, _ = ranges[(clips[0].number, h1.index)]
        _, b2 = ranges[(clips[1].number, h2.index)]
        paragraphs[0] += f" The two moments belong together (clip1 @ {mmss(a1)} - clip2 @ {mmss(b2)})."
    if mode == "two_paragraphs":  # evidence and conclusion run together: fewer than 3 paragraphs
        paragraphs = [paragraphs[0], " ".join(paragraphs[1:])]
    answer = "\n\n".join(paragraphs)

    def hop_text(nth: str, v: Any) -> str:
        return (f'In the {nth} clip, beneath the sign "{v.sign}", {an(v.colour)} {v.shape} stands at the '
                f"{v.position} of {an(v.background)} frame.")

    clip_ranges = [
        {"clip_id": c.number, "start_time": c.part.start + ranges[(c.number, s.index)][0],
         "end_time": c.part.start + ranges[(c.number, s.index)][1],
         "qa_reference": "hop 1" if s is h1 else "hop 2" if s is h2 else "supporting evidence"}
        for c, (_, cited) in zip(clips, picks, strict=True) for s in cited
    ]
    return QAGeneration.model_validate({
        "question": question, "answer": answer,
        "question_type": {"row": row, "column": column},
        "bridge": f"Both moments accompany narration about {nouns[0]} or {nouns[1]}, so the two shapes "
                  "are compared as illustrations of one theme.",
        "hop_1": hop_text("first", v1), "hop_2": hop_text("second", v2),
        "scene_references": [
            {"scene_description": f'the shape at the {v.position} of the frame beneath the sign "{v.sign}"',
             "actual_entity_name": f"{v.colour} {v.shape}"} for v in (v1, v2)],
        "clip_ranges": clip_ranges,
    }).model_dump()


def _generic_qa(keyword: str, row: str, column: str) -> dict[str, Any]:
    """No world behind the clips: a well-formed but contentless item (it should fail grounding)."""
    kw = keyword[:1].upper() + keyword[1:]
    cites = ["(clip1 @ 0:00 - 0:59)", "(clip2 @ 0:00 - 0:59)"]
    answer = "\n\n".join([
        f"The first moment introduces the theme {cites[0]}. The second moment returns to it {cites[1]}.",
        f"The first clip develops the idea at length {cites[0]}. The second clip echoes it {cites[1]}.",
        f"Both moments illustrate one theme {cites[0]}. The comparison rests on that link {cites[1]}.",
    ])
    return QAGeneration.model_validate({
        "question": f"{kw} how the first moment relates to the second moment of the narration?",
        "answer": answer, "question_type": {"row": row, "column": column},
        "bridge": "Both moments share one theme.", "hop_1": "The first moment.", "hop_2": "The second moment.",
        "scene_references": [], "clip_ranges": [
            {"clip_id": 1, "start_time": 0, "end_time": 59, "qa_reference": "hop 1"},
            {"clip_id": 2, "start_time": 0, "end_time": 59, "qa_reference": "hop 2"}],
    }).model_dump()


def text_answer(ctx: SimContext, answerable: float) -> dict[str, Any]:
    """C2 answerers: with probability ``answerable`` the text gives the facts away, else it cannot."""
    question = ctx.section("question") or ctx.text
    words = facts.visual_words(question + "\n" + ctx.section("transcript") + ctx.section("transcripts"))
    if words and ctx.chance(answerable):
        said = ", ".join(f'"{w}"' if facts.slot_of(w) == "sign" else w for w in words)
        answer = f"The text points straight at the details: {said}. Those details settle the comparison."
        why = "[sim] the request text names the visual details the question asks about"
    else:
        answer, why = GENERIC_ANSWER, "[sim] the request text does not reveal the visual details"
    return TextAnswer(explanation=why, answer=answer).model_dump()


def verify(ctx: SimContext) -> dict[str, Any]:
    """C2 verifiers: "Yes" iff the candidate repeats most key visual words of the gold's opening."""
    gold, candidate = ctx.section("gold answer"), ctx.section("candidate answer")
    paragraphs = facts.paragraphs(gold)
    key = facts.visual_words(paragraphs[0] if paragraphs else gold) or facts.visual_words(gold)
    have = set(facts.visual_words(candidate))
    if key:
        hit = [w for w in key if w in have]
        yes = len(hit) >= 0.6 * len(key)
        why = f"[sim] the candidate repeats {len(hit)} of {len(key)} key visual details of the gold"
    else:  # no visual words at all: fall back to plain word overlap
        g, c = set(gold.lower().split()), set(candidate.lower().split())
        yes = bool(g) and len(g & c) >= 0.5 * len(g)
        why = "[sim] no visual details in the gold; compared by word overlap"
    return Verdict(explanation=why, judgement="Yes" if yes else "No").model_dump()


def grounding(ctx: SimContext) -> dict[str, Any]:
    """C3: are the hops (and the bridge / gold, when given) what the clips actually show?"""
    ev = ctx.evidence()
    worlds = any(c.world for c in ctx.clips())
    hop_notes, query_ok = [], True
    for label in ("hop 1", "hop 2"):
        hop = ctx.section(label)
        scene = ev.anchor(hop)
        wrong = facts.mismatches(facts.claims(hop), scene.visual) if scene else None
        ok = (scene is not None and wrong == 0) or not worlds
        query_ok &= ok
        hop_notes.append(f"{label}: " + ("matches the frames" if ok else
                                         "not found in the clips" if scene is None else
                                         f"{wrong} detail(s) differ from the frames"))
    answer_text = "\n".join([ctx.section("bridge"), ctx.section("gold answer")])
    wrong, checked = ev.contradictions(answer_text)
    answer_ok = wrong == 0 or not worlds
    if ctx.chance(ctx.settings.ungrounded):
        if ctx.rng.random() < 0.5:
            query_ok, hop_notes = False, [*hop_notes, "(sim fault: ungrounded)"]
        else:
            answer_ok = False
    return Grounding(
        query_grounding_explanation="[sim] " + "; ".join(hop_notes),
        query_grounded="Yes" if query_ok else "No",
        answer_grounding_explanation=f"[sim] {checked} sentence(s) checked against the clips, "
                                     f"{wrong} visual detail(s) contradicted",
        answer_grounded="Yes" if answer_ok else "No",
    ).model_dump()
