"""What every stage receives and returns. Stages are plain functions: they read their inputs from the
store in short transactions, call models through the runner, and return the outputs to commit with
the transition (the actor commits them in one transaction, DESIGN 1)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import SQLModel

from playlisteval.build.gates import GateVerdict
from playlisteval.config import Settings
from playlisteval.models.request import ModelResponse
from playlisteval.models.runner import Runner
from playlisteval.prompts.render import prompts_dir_of
from playlisteval.store.direct import Inserts
from playlisteval.store.items import HeldItem, Writer
from playlisteval.store.states import Event, Progress
from playlisteval.store.tables import GateResult


@dataclass
class StepContext:
    settings: Settings
    engine: Engine
    runner: Runner
    item_id: int
    progress: Progress

    def rng(self, *salt: object) -> random.Random:
        """A seeded RNG for one draw of this item (DESIGN 9): the same build gives the same draws."""
        key = ":".join(str(s) for s in (self.settings.project.seed, self.item_id, *salt))
        return random.Random(key)

    @property
    def prompts_dir(self) -> str | None:
        """The user's template folder (``[build] prompts_dir``, relative to the project), or None."""
        return prompts_dir_of(self.settings)


@dataclass
class StepResult:
    event: Event
    write: Writer | None = None
    reason: str = ""
    details: dict[str, Any] = field(default_factory=dict)


def gate_rows(
    item_id: int, phase: int, attempt: int, verdicts: list[GateVerdict], rejected_output: dict[str, Any] | None
) -> list[GateResult]:
    """One row per gate that ran; the rejecting gate's row keeps the rejected output (SPEC E1)."""
    return [
        GateResult(
            item_id=item_id, phase=phase, attempt=attempt, gate=v.gate,
            verdict="pass" if v.passed else "reject", reason=v.reason, details=v.details,
            rejected_output=None if v.passed else rejected_output, call_ids=v.call_ids,
        )
        for v in verdicts
    ]


def unusable_output(
    item_id: int, phase: int, attempt: int, gate: str, response: ModelResponse, payload: dict[str, Any],
    candidate: SQLModel,
) -> StepResult:
    """A generator reply that stayed unreadable: store it as a rejected attempt filed under the phase's
    structural gate (C1 / D2), since nothing in it could pass that gate (SPEC E1, DESIGN 5)."""
    from playlisteval.build.stages.feedback import UNUSABLE

    verdict = GateVerdict.reject(gate, f"{UNUSABLE}: {response.malformed_reason}", malformed=True)
    verdict.call_ids = [response.call_id] if response.call_id else []
    rows = gate_rows(item_id, phase, attempt, [verdict], payload)

    def write(s: Inserts, item: HeldItem) -> None:
        s.add(candidate)
        s.add_all(rows)

    return StepResult(Event.MALFORMED, write, verdict.reason)
