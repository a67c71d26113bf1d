"""The build's stages, one per working state. Plain functions: StepContext → StepResult."""

from __future__ import annotations

from collections.abc import Callable

from playlisteval.stages import check_distractors, check_qa, generate_distractors, generate_qa
from playlisteval.stages.context import StepContext, StepResult
from playlisteval.state import State

STAGES: dict[State, Callable[[StepContext], StepResult]] = {
    State.PENDING: generate_qa.run,
    State.QA_GENERATED: check_qa.run,
    State.GATED: generate_distractors.run,
    State.DEGRADED: check_distractors.run,
}

__all__ = ["STAGES", "StepContext", "StepResult"]
