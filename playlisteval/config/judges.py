"""How a model judges, declared rather than guessed (SPEC G7, issue 42): ``[judges."provider/model"]``.

A model's kind is usually read from its config (a ``*ForSequenceClassification`` head is a reward model),
but a remote-code reward model such as InternLM-XComposer-2.5-Reward looks like a causal LM there and scores
through a method of its own (``get_score``). A declaration says which it is, so such a model is scored per
answer and never asked the pair prompt by mistake. The same keys may be written in a ``[models]`` role
table; they are moved here, keyed by the role's model, so one model has one declaration.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, model_validator

#: keys of a [models] role table that declare the model's kind, not the role's generation settings
DECLARATION_KEYS = ("kind", "score_method", "trust_remote_code")


class JudgeDeclaration(BaseModel):
    """``kind = "reward"``: scored one answer at a time (eval/reward.py); ``"generative"``: asked the pair
    prompt. ``score_method`` (hf only): the model's own scoring method, called with the conversation and
    the frames; ``trust_remote_code`` (hf only): load the model's own modeling code from its folder/repo."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["reward", "generative"] | None = None
    score_method: str = ""
    trust_remote_code: bool = False

    @model_validator(mode="after")
    def _coherent(self) -> JudgeDeclaration:
        if self.score_method and self.kind != "reward":
            raise ValueError(f"score_method = {self.score_method!r} needs kind = \"reward\"")
        if self.score_method and not self.score_method.isidentifier():
            raise ValueError(f"score_method = {self.score_method!r} is not a method name")
        return self


def check_judges(judges: dict[str, JudgeDeclaration]) -> dict[str, JudgeDeclaration]:
    """Keys are models as written; the hf-only keys on another provider are refused, not ignored."""
    for spec, declaration in judges.items():
        provider, sep, model = spec.partition("/")
        if not sep or not model.strip():
            raise ValueError(f"key {spec!r} must be a model as written, 'provider/model'")
        if provider != "hf" and (declaration.score_method or declaration.trust_remote_code):
            raise ValueError(f"[judges.{spec!r}]: score_method and trust_remote_code are for hf/ models only "
                             "(a model loaded here through transformers)")
    return judges


def move_role_declarations(role: str, model: str, table: dict[str, Any],
                           judges: dict[str, Any]) -> None:
    """Move the declaration keys of role ``role``'s table (its model ``model``) into ``judges``; a model
    declared twice, differently, is an error naming both places."""
    declared = {k: table.pop(k) for k in DECLARATION_KEYS if k in table}
    if not declared:
        return
    if not model:
        raise ValueError(f"[models] {role}: kind, score_method and trust_remote_code need the role's model")
    before = dict(judges.get(model) or {})
    clash = {k: (before[k], v) for k, v in declared.items() if k in before and before[k] != v}
    if clash:
        raise ValueError(f"[models] {role} and [judges.{model!r}] declare {model} differently: "
                         + ", ".join(f"{k} = {a!r} vs {b!r}" for k, (a, b) in clash.items()))
    judges[model] = {**before, **declared}
