"""A reply's thinking apart from its answer (issue 42 item 2): the one place every provider's reply is split.

A reasoning model's reply can carry its thinking two ways:

- in the text, as ``<think>…</think>`` (or ``<thinking>…</thinking>``) blocks — vLLM without a reasoning
  parser, llama.cpp, transformers leave them there. A ``<think>`` that is never closed makes the rest of
  the reply thinking (the model ran out of tokens while thinking: it gave no answer); a ``</think>`` with
  no opening tag before it closes a block the chat template opened in the prompt (Qwen3, DeepSeek-R1), so
  what comes before it is thinking;
- in a field of its own, never in the text: OpenAI-compatible servers' ``reasoning_content`` / ``reasoning``
  (vLLM with a reasoning parser, DashScope, DeepSeek), Gemini's thought parts. Providers put it in
  ``ProviderReply.thinking`` (``message_thinking`` reads the OpenAI-compatible message).

The raw reply is kept whole (the cache, the judgment's ``raw``); what a parser reads — a verdict
(eval/verdicts.py), a JSON object (models/request_keys.py ``extract_json``), a reward score — is ``answer_of`` the
text: the part outside the thinking. A verdict or an object found only in the thinking is none at all.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

_OPEN = re.compile(r"<(think|thinking)\s*>", re.I)
_CLOSE = re.compile(r"</(think|thinking)\s*>", re.I)
#: the message fields OpenAI-compatible servers put reasoning in (vLLM, DashScope, DeepSeek; OpenRouter)
REASONING_FIELDS = ("reasoning_content", "reasoning")


@dataclass(frozen=True)
class Split:
    thinking: str  # the thinking blocks' text, joined ("" when there is none)
    answer: str  # the rest: what parsers read


def split(text: str | None) -> Split:
    """``text`` as (thinking, answer); see the module docstring for the forms of thinking."""
    text = text or ""
    if "<" not in text:  # no tag at all: the common case, answered without a regex
        return Split("", text)
    thinking: list[str] = []
    answer: list[str] = []
    pos = 0
    first_open, first_close = _OPEN.search(text), _CLOSE.search(text)
    if first_close is not None and (first_open is None or first_close.start() < first_open.start()):
        thinking.append(text[: first_close.start()])  # the block was opened by the prompt's template
        pos = first_close.end()
    while True:
        opened = _OPEN.search(text, pos)
        if opened is None:
            answer.append(text[pos:])
            break
        answer.append(text[pos : opened.start()])
        close = re.compile(rf"</{opened.group(1)}\s*>", re.I).search(text, opened.end())
        if close is None:  # never closed: the rest is thinking
            thinking.append(text[opened.end():])
            break
        thinking.append(text[opened.end() : close.start()])
        pos = close.end()
    return Split("\n".join(t.strip() for t in thinking if t.strip()), "".join(answer).strip())


def answer_of(text: str | None) -> str:
    """The part of a reply that is its answer: the text outside its thinking blocks."""
    return split(text).answer


def thinking_of(text: str | None, given: str = "") -> str:
    """All of a reply's thinking: a provider's reasoning field (``given``), then the blocks in its text."""
    return "\n".join(t for t in (given.strip(), split(text).thinking) if t)


def message_thinking(message: Any) -> str:
    """The reasoning an OpenAI-compatible chat message carries in a field of its own ("" when none): the SDK
    keeps fields it does not know (``reasoning_content``) as extra attributes."""
    if message is None:
        return ""
    extra = getattr(message, "model_extra", None) or {}
    for name in REASONING_FIELDS:
        value = extra.get(name) if name in extra else getattr(message, name, None)
        if isinstance(value, str) and value.strip():
            return value
    return ""
