"""The sim's reward model (SPEC G7 stand-in): one answer scored on its own from the world's facts.

A classifier reward model never sees the other answer: it reads the question, the evidence it was given
(the frames' scenes) and one candidate, and returns one number. The sim's number counts what the frames
can check: each visual detail the candidate gets wrong costs a point, each sentence whose details the
frames confirm earns a little, and narration from another topic than the answer's own costs half a
point; a small draw keyed by the request (seed, model, prompt) stands for the model's own noise, so two
equally good answers are ordered by chance rather than tied. Replies are ``{"score": x}``, as the hf
provider's reward models reply; they are labelled simulated by the provider (``raw["sim"]``).
"""

from __future__ import annotations

from typing import Any

from playlisteval.world.sim.context import SimContext
from playlisteval.world.synth import facts, vocab

#: a sim model is a reward model when its name starts with this ("sim/reward", "sim/reward-weak")
PREFIX = "reward"


def is_reward_model(model: str) -> bool:
    return model.lower().startswith(PREFIX)


def _slips(text: str) -> int:
    """Narrated topic words from another topic than the one the answer mostly talks about."""
    topics = [vocab.TOPIC_OF_WORD[w] for w in facts.topic_words(text)]
    if not topics:
        return 0
    main = max(set(topics), key=topics.count)
    return sum(1 for t in topics if t != main)


def score(ctx: SimContext) -> dict[str, Any]:
    answer = ctx.section("candidate answer")
    if not answer:
        return {"score": None, "reason": "[sim] the prompt holds no 'Candidate answer:' section"}
    ev = ctx.evidence()
    wrong = supported = checked = 0
    for sentence in facts.sentences(facts.strip_citations(answer)):
        said = facts.claims(sentence)
        scene = ev.by_sign(said["sign"])
        if scene is None:
            continue
        checked += 1
        missed = facts.mismatches(said, scene.visual)
        wrong += missed
        supported += missed == 0
    slips = _slips(answer)
    noise = ctx.rng.gauss(0.0, 0.6 if ctx.weak else 0.25)
    value = round(-1.0 * wrong - 0.5 * slips + 0.1 * supported + noise, 4)
    return {"score": value, "reason": (f"[sim] {checked} sentence(s) checked against {len(ev.scenes)} scene(s): "
                                       f"{wrong} wrong detail(s), {supported} supported, {slips} off-topic word(s)")}
