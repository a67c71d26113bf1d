"""What a gate gets from the step that runs it: a narrow view (settings, store, runner, the item, a seeded
draw, the template folder), not the engine. ``stages.context.StepContext`` is one."""

from __future__ import annotations

import random
from typing import Protocol

from sqlalchemy.engine import Engine

from playlisteval.config import Settings
from playlisteval.models.runner import Runner


class GateContext(Protocol):
    @property
    def settings(self) -> Settings: ...

    @property
    def engine(self) -> Engine: ...

    @property
    def runner(self) -> Runner: ...

    @property
    def item_id(self) -> int: ...

    @property
    def prompts_dir(self) -> str | None: ...

    def rng(self, *salt: object) -> random.Random: ...
