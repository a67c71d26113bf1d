"""The judge's verdict (SPEC G4): ``[[A]]`` or ``[[B]]``, the last one in the reply wins.

Only those two exact tokens count — ``[[a]]``, ``[[ A ]]``, ``[A]``, ``Model A`` do not — so a reply is
read the same way for every judge. A reply without one, or a refusal, is *no verdict*: it scores 0.5
and is counted on its own (``outcome``). A call that failed (``error``) is no reply at all: it is
stored as an error of its run (``judge_error``), never as a judgment, and asked again (issue 9).
"""

from __future__ import annotations

import re

from playlisteval.eval.metrics import pair_score
from playlisteval.models.reasoning import answer_of

VERDICT_RE = re.compile(r"\[\[([AB])\]\]")

VERDICT, NO_VERDICT, REFUSAL, ERROR = "verdict", "no_verdict", "refusal", "error"
TIE = "tie"  # a reward model (SPEC G7) scored both answers the same: no verdict, counted on its own
OUTCOMES = (VERDICT, NO_VERDICT, REFUSAL, TIE, ERROR)


def parse_verdict(text: str | None) -> str | None:
    """"A", "B", or None when the reply's answer holds neither token. Only the answer counts: a token inside
    the reply's thinking (``<think>…</think>``, models/reasoning.py) is no verdict (issue 42)."""
    found = VERDICT_RE.findall(answer_of(text))
    return found[-1] if found else None


def outcome_of(verdict: str | None, finish_reason: str = "stop") -> str:
    if verdict is not None:
        return VERDICT
    refused = finish_reason in ("refusal", "content_filter", "safety") or finish_reason.startswith("blocked")
    return REFUSAL if refused else NO_VERDICT


def score(verdict: str | None, a_is_better: bool) -> float:
    """1 for the intended answer, 0 for the other, 0.5 for no verdict."""
    return pair_score(verdict, a_is_better)
