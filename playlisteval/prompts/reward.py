"""The reward-model prompt (SPEC G7): one answer at a time, never the pair.

A classifier reward model reads a conversation — the user's turn (the question, and the transcript when the
modality sends one) and the assistant's turn (one answer) — and returns one number. The template renders both
turns in one text so the prompt is hashed and cached like every other role's; ``split_turns`` cuts it back at
the fixed label so a provider can build the model's own chat format (the hf provider does; the sim reads the
labelled sections directly).
"""

from __future__ import annotations

REWARD_TEMPLATE = "g7_reward.j2"
ANSWER_LABEL = "Candidate answer:"


def split_turns(text: str) -> tuple[str, str]:
    """(user turn, assistant turn) of a rendered reward prompt; ValueError when it holds no answer label."""
    head, sep, answer = text.rpartition(f"\n{ANSWER_LABEL}\n")
    if not sep:
        raise ValueError(f"a reward prompt must hold a line {ANSWER_LABEL!r} before the answer")
    return head.strip(), answer.strip()
