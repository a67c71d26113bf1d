"""Reward-model judges (SPEC G7): each answer scored on its own, the higher score wins.

A classifier reward model cannot compare two answers: it is asked twice per pair — the question (and the
transcript when the modality sends one) with one answer, with the same frames or audio a generative judge
would get — and the answer with the higher score is its verdict. Equal scores are a *tie*: scored 0.5 like
a reply without a verdict, but counted as their own outcome (``tie``), never silently. A score that is not
a finite number, or a call that failed, makes the pair an error of the run (asked again by the next pass),
never a 0.5. Both calls go through the runner (cache, ledger, budget) with the run's id, as role G.
"""

from __future__ import annotations

import json
import math
from typing import Any

from playlisteval.errors import ModelError, PermanentModelError
from playlisteval.eval.judging import JudgeInput, Reply, stop_reason
from playlisteval.eval.verdicts import ERROR, TIE, VERDICT
from playlisteval.models.reasoning import answer_of
from playlisteval.models.registry import split_spec
from playlisteval.models.request import GenerationSettings, ModelRequest, TextPart
from playlisteval.models.runner import Runner
from playlisteval.prompts.citations import strip_citations
from playlisteval.prompts.render import prompts_dir_of, render
from playlisteval.prompts.reward import REWARD_TEMPLATE


def is_reward_judge(runner: Runner, spec: str) -> bool:
    """Whether ``spec`` names a reward model: its provider says so (``is_reward_model``, which for hf/ reads
    the model's ``[judges]`` declaration too); a provider without the notion has none. A declaration its
    provider contradicts — ``kind = "reward"`` for a model it can only prompt, ``"generative"`` for one it can
    only score — is a PermanentModelError, as is a model whose kind cannot be read: never a guessed kind."""
    provider_name, model = split_spec(spec)
    provider = runner.registry.get(provider_name)
    check = getattr(provider, "is_reward_model", None)
    reward = bool(check(model)) if callable(check) else False
    declared = runner.settings.judges.get(spec)
    if declared is not None and declared.kind == "reward" and not reward:
        raise PermanentModelError(f"{spec} is declared kind = \"reward\" in [judges] but provider "
                                  f"{provider_name} cannot score one answer with it: remove the declaration "
                                  "or serve the model through hf/")
    if declared is not None and declared.kind == "generative" and reward:
        raise PermanentModelError(f"{spec} is declared kind = \"generative\" in [judges] but it is a reward "
                                  "model: it cannot write a verdict; declare kind = \"reward\"")
    return reward


def score_of(text: str) -> float | None:
    """The reply's ``{"score": x}`` as a finite float, or None."""
    try:
        value = json.loads(answer_of(text)).get("score")  # never a score from the thinking (issue 42)
    except (ValueError, AttributeError):
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(float(value)):
        return None
    return float(value)


def _request(runner: Runner, role: str, question: str, answer: str, given: JudgeInput,
             generation: GenerationSettings, purpose: str, item_id: int, run_id: int | None,
             attempt: int) -> ModelRequest:
    prompt, digest = render(REWARD_TEMPLATE, prompts_dir_of(runner.settings), question=question,
                            transcript=given.transcript, answer=strip_citations(answer))
    return ModelRequest(role=role, parts=[*given.media, TextPart(text=prompt)], settings=generation,
                        template=REWARD_TEMPLATE, template_hash=digest, item_id=item_id, purpose=purpose,
                        run_id=run_id, attempt=attempt)


def ask_reward(runner: Runner, spec: str, role: str, question: str, answer_a: str, answer_b: str,
               given: JudgeInput, generation: GenerationSettings, *, purpose: str, item_id: int,
               run_id: int | None = None, attempt: int = 0) -> Reply:
    """Score Model A's and Model B's answers one at a time; the verdict is the higher one's letter."""
    scores: dict[str, float] = {}
    calls: dict[str, int] = {}
    for side, answer in (("A", answer_a), ("B", answer_b)):
        request = _request(runner, role, question, answer, given, generation, purpose, item_id, run_id, attempt)
        try:
            response = runner.call(request, model=spec)
        except ModelError as exc:
            return Reply(None, ERROR, "", 0, error=f"{type(exc).__name__}: {exc}", stop=stop_reason(exc))
        value = score_of(response.text)
        if value is None:
            return Reply(None, ERROR, response.text, response.call_id or 0,
                         error=f"reward model {spec} gave no score for Model {side}: {response.text[:200]!r}")
        scores[side], calls[side] = value, int(response.call_id or 0)
    raw: dict[str, Any] = {"reward": True, "score_a": scores["A"], "score_b": scores["B"],
                           "call_a": calls["A"], "call_b": calls["B"]}
    if scores["A"] == scores["B"]:
        return Reply(None, TIE, json.dumps(raw), calls["A"])
    verdict = "A" if scores["A"] > scores["B"] else "B"
    return Reply(verdict, VERDICT, json.dumps(raw), calls["A"])
