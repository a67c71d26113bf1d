"""The build's stages, one per working state. Plain functions: StepContext → StepResult."""

from __future__ import annotations

import importlib
from collections.abc import Callable

from playlisteval.build.stages.context import StepContext, StepResult
from playlisteval.store.states import STEPS, State

#: each working state's stage: ``run`` of the module the state table names (state.STEPS)
STAGES: dict[State, Callable[[StepContext], StepResult]] = {
    state: importlib.import_module(f"playlisteval.build.stages.{step.stage}").run for state, step in STEPS.items()
}

__all__ = ["STAGES", "StepContext", "StepResult"]
