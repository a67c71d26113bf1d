"""The difficulty gate's verdicts keyed by the weak judge that gave them (issue 25, deliverable 4).

A weak judge's verdict on a pair (``pair.difficulty[role]``) is evidence about *that* judge: its model,
its generation settings (``[models]`` tables, applied by the runner), the G4 prompt it was shown and the
evidence the gate gave it (``[select] difficulty_*`` with the frame and audio settings of ``[eval]``).
Each verdict records the key of all that; one whose key is not the configured judge's now is stale, and
the pair is judged again by the judge configured now (``pending_pairs``), never decided on the old
verdict. Other verdicts of the pair stay when their own judge did not change.

Verdicts written before keys were recorded carry only their model: they are matched on it (what was
checked before), so an upgrade does not pay for the whole gate again; a changed model still re-runs.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from playlisteval.config import Settings
from playlisteval.eval.judging import TEMPLATE
from playlisteval.prompts.render import prompts_dir_of, template_source

KEY = "judge_key"  # in each role's verdict record


def judge_settings(settings: Settings, role: str) -> dict[str, Any]:
    """Everything that decides what weak judge ``role`` says about a pair, as plain values."""
    generation = settings.generation.get(role)
    source = template_source(TEMPLATE, prompts_dir_of(settings))
    ev = settings.eval
    return {
        "model": settings.model_for(role),
        "generation": generation.model_dump(exclude_defaults=True) if generation is not None else {},
        "prompt": hashlib.sha256(source.encode()).hexdigest()[:16],
        "evidence": {"kind": settings.select.difficulty_evidence, "scope": settings.select.difficulty_scope,
                     "frames": ev.frames, "frames_per_chunk": ev.frames_per_chunk, "modality": ev.modality,
                     "frame_size": ev.frame_size, "audio": [ev.audio_mode, ev.audio_speed, ev.audio_pause_s]},
    }


def judge_key(settings: Settings, role: str) -> str:
    text = json.dumps(judge_settings(settings, role), sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def current(record: Mapping[str, Any] | None, role: str, key: str, model: str) -> bool:
    """Was this role's verdict in ``record`` given by the judge configured now?"""
    prior = (record or {}).get(role)
    if not isinstance(prior, dict):
        return False
    if KEY in prior:
        return bool(prior[KEY] == key)
    return bool(prior.get("model") == model)  # recorded before keys: its model is what it says
