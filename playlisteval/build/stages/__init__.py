"""The build's stages, one per working state. Plain functions: StepContext → StepResult.

The names below load on first use (PEP 562): a reader of one stage's helpers (`show`'s story reads the
feedback module) does not import every stage, the model runner and its providers with it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from playlisteval.build.stages.context import StepContext, StepResult
    from playlisteval.store.states import State

    #: each working state's stage: ``run`` of the module the state table names (state.STEPS)
    STAGES: dict[State, Callable[[StepContext], StepResult]]

__all__ = ["STAGES", "StepContext", "StepResult"]


def __getattr__(name: str) -> Any:
    if name in ("StepContext", "StepResult"):
        from playlisteval.build.stages import context

        return getattr(context, name)
    if name == "STAGES":
        from playlisteval.store.states import STEPS

        stages = {state: importlib.import_module(f"playlisteval.build.stages.{step.stage}").run
                  for state, step in STEPS.items()}
        globals()["STAGES"] = stages  # computed once
        return stages
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
