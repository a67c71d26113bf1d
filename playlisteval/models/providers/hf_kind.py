"""What a transformers model is — reward, vision or text — from its declaration and its config (SPEC G7).

A kind is never guessed: a config whose architecture is neither a known generative head nor a
``*ForSequenceClassification`` head, or a config that cannot be read, is an error that names the fix
(a ``[judges."hf/…"]`` declaration), never a pair prompt sent to a model that may be a scorer. A
declaration that contradicts the config is an error too. A remote-code reward model (InternLM-XComposer-2.5-
Reward) is scored through its own method, called as ``method(conversation, images)``: the conversation is the
user's turn and the answer as the assistant's turn, the images are the frames' file paths; it returns a number.
"""

from __future__ import annotations

import math
from typing import Any

from playlisteval.config import Settings
from playlisteval.config.judges import JudgeDeclaration
from playlisteval.errors import PermanentModelError

#: architecture suffixes of the generative heads transformers loads as causal LMs or image-text-to-text
GENERATIVE = ("ForCausalLM", "LMHeadModel", "ForConditionalGeneration", "ForImageTextToText", "ForVision2Seq")
CLASSIFIER = "ForSequenceClassification"


def declaration_of(settings: Settings, model: str) -> JudgeDeclaration:
    """The model's ``[judges."hf/<model>"]`` entry (or its role table's), an empty one when undeclared."""
    return settings.judges.get(f"hf/{model}") or JudgeDeclaration()


def _fix(model: str) -> str:
    return (f'declare it in playlisteval.toml: [judges."hf/{model}"] kind = "reward" (with score_method = '
            '"get_score" and trust_remote_code = true for a remote-code scorer) or kind = "generative"')


def read_config(tf: Any, model: str, declared: JudgeDeclaration) -> Any:
    """The model's config, with its own code when declared; unreadable is a permanent error, naming the
    declaration that fixes it when the model is there but ships its own code."""
    try:
        return tf.AutoConfig.from_pretrained(model, trust_remote_code=declared.trust_remote_code)
    except (OSError, ValueError, KeyError) as exc:
        hint = "" if declared.trust_remote_code else (
            f'; if the model is there and ships its own modeling code, declare it: [judges."hf/{model}"] '
            'trust_remote_code = true, with kind = "reward" (and its score_method) or kind = "generative"')
        raise PermanentModelError(f"hf: cannot load {model}: cannot read its config, so its kind is unknown: "
                                  f"{' '.join(str(exc).split())[:300]}{hint}") from exc


def kind_of(config: Any, model: str = "", declared: JudgeDeclaration | None = None) -> str:
    """"reward", "vision" or "text": the declaration first, checked against the config; an undeclared
    architecture must be a known head."""
    declared = declared or JudgeDeclaration()
    architectures = [str(a) for a in (getattr(config, "architectures", None) or [])]
    named = ", ".join(architectures) or "no architecture"
    classifier = any(a.endswith(CLASSIFIER) for a in architectures)
    generative = any(a.endswith(GENERATIVE) for a in architectures)
    vision = getattr(config, "vision_config", None) is not None  # Qwen-VL, InternVL, LLaVA, Gemma 3 …
    if declared.kind == "reward":
        if not classifier and not declared.score_method:
            raise PermanentModelError(
                f"hf/{model} is declared kind = \"reward\" but its config ({named}) has no {CLASSIFIER} head "
                "and no score_method is declared: name the model's scoring method (score_method = \"get_score\") "
                "or declare it kind = \"generative\"")
        return "reward"
    if declared.kind == "generative":
        if classifier:
            raise PermanentModelError(f"hf/{model} is declared kind = \"generative\" but its config is a "
                                      f"{CLASSIFIER} reward model ({named}): it cannot "
                                      "write a verdict; remove the declaration or declare kind = \"reward\"")
        return "vision" if vision else "text"
    if classifier:
        return "reward"
    if generative:
        return "vision" if vision else "text"
    raise PermanentModelError(f"hf/{model}: cannot tell whether it is a reward or a generative model from its "
                              f"architecture ({named}); {_fix(model)}")


def method_of(model_obj: Any, model: str, declared: JudgeDeclaration) -> Any:
    """The declared scoring method of a loaded model; a model without it contradicts its declaration."""
    method = getattr(model_obj, declared.score_method, None)
    if not callable(method):
        raise PermanentModelError(f"hf/{model} is declared score_method = {declared.score_method!r} but "
                                  f"{type(model_obj).__name__} has no such method: fix score_method, or set "
                                  "trust_remote_code = true so the model's own class is loaded")
    return method


def score_with(method: Any, model: str, user: str, answer: str, images: list[str]) -> float:
    """Call the model's own scoring method; its result must be one finite number (a float or a one-element
    tensor), anything else is an error naming the model — never a score made up here."""
    conversation = [{"role": "user", "content": user}, {"role": "assistant", "content": answer}]
    try:
        value = method(conversation, images)
    except (RuntimeError, ValueError, TypeError, IndexError) as exc:
        raise PermanentModelError(f"hf/{model}: its scoring method failed: {type(exc).__name__}: "
                                  f"{str(exc)[:300]}") from exc
    if hasattr(value, "numel"):
        if value.numel() != 1:
            raise PermanentModelError(f"hf/{model}: its scoring method returned {value.numel()} numbers, not one")
        value = value.float().item()
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(float(value)):
        raise PermanentModelError(f"hf/{model}: its scoring method returned {value!r}, not a finite number")
    return float(value)
