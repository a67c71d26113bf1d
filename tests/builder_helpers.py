"""Helpers for the builder's tests (issue 5): a sim that records every request and lets a test plant
one role's reply, an App wired to it, and the store-wide limit checks."""

from __future__ import annotations

import json
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from sqlalchemy import func
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from playlisteval.actors import App
from playlisteval.build.stages.context import StepContext
from playlisteval.config import Settings
from playlisteval.models.registry import Registry
from playlisteval.models.request import ModelRequest, ProviderReply, Usage
from playlisteval.models.runner import Runner
from playlisteval.store import items, open_store
from playlisteval.store.tables import QA, DistractorSet, GateResult, Item, ModelCall
from playlisteval.world.sim.provider import SimProvider


def fixed_worlds(name: str) -> Path:
    """A world folder at a path that is the same on every run. The sim draws from a hash of each
    request, video paths included, so sim builds over worlds here turn out the same every time
    (``seeded_store`` rewrites the files with the same bytes)."""
    folder = Path(tempfile.gettempdir()) / f"playlisteval-tests-{name}"
    folder.mkdir(exist_ok=True)
    return folder


Planted = Callable[[ModelRequest], dict[str, Any] | str]


@dataclass
class Seen:
    role: str
    attempt: int
    item_id: int | None
    text: str


@dataclass
class RecordingSim:
    """The real sim, with every request kept, and a reply of the test's own for some roles."""

    sim: SimProvider
    planted: dict[str, Planted] = field(default_factory=dict)
    seen: list[Seen] = field(default_factory=list)
    name: str = "sim"

    def complete(self, model: str, request: ModelRequest, schema: type[BaseModel] | None,
                 timeout: float) -> ProviderReply:
        self.seen.append(Seen(request.role, request.attempt, request.item_id, request.text()))
        plant = self.planted.get(request.role)
        if plant is None:
            return self.sim.complete(model, request, schema, timeout)
        out = plant(request)
        text = out if isinstance(out, str) else json.dumps(out)
        return ProviderReply(text=text, usage=Usage(input_tokens=1, output_tokens=1), raw={"planted": True})

    def prompts(self, role: str, item_id: int | None = None) -> list[Seen]:
        return [s for s in self.seen if s.role == role and (item_id is None or s.item_id == item_id)]


def app_with(settings: Settings, planted: dict[str, Planted] | None = None) -> tuple[App, RecordingSim]:
    engine = open_store(settings)
    recorder = RecordingSim(SimProvider(settings.sim, settings.project.seed), dict(planted or {}))
    registry = Registry(settings)
    registry.register("sim", recorder)
    runner = Runner(settings, engine, registry=registry, sleep=lambda _s: None)
    app = App(settings, engine=engine, runner=runner)
    for actor in app.actors.values():  # a step retried by the broker (a checker fault) waits ms, not seconds
        actor.options.update(min_backoff=1, max_backoff=20)
    return app, recorder


def context(app: App, item_id: int) -> StepContext:
    with Session(app.engine) as s:
        item = s.get(Item, item_id)
        assert item is not None
        progress = items.progress_of(item)
    return StepContext(app.settings, app.engine, app.runner, item_id, progress)


def calls_by_role(engine: Engine, item_id: int | None = None) -> Counter[str]:
    with Session(engine) as s:
        query = select(ModelCall.role, func.count()).group_by(ModelCall.role)
        if item_id is not None:
            query = query.where(ModelCall.item_id == item_id)
        return Counter({role: int(n) for role, n in s.exec(query).all()})


def check_limits(engine: Engine, settings: Settings) -> int:
    """SPEC E2/E3 over the whole store: no item has more than T attempts per phase, nor more than
    ``phase2_per_question`` sets for one question; a discarded item used up T in one phase. Returns
    the number of items checked."""
    t, per_question = settings.build.attempts_per_phase, settings.build.phase2_per_question
    with Session(engine) as s:
        all_items = s.exec(select(Item)).all()
        qa_counts = Counter(s.exec(select(QA.item_id)).all())
        set_counts = Counter(s.exec(select(DistractorSet.item_id)).all())
        per_qa = Counter(s.exec(select(DistractorSet.qa_id)).all())
        max_gate_attempt = dict(s.exec(select(GateResult.item_id, func.max(GateResult.attempt))
                                       .group_by(col(GateResult.item_id))).all())
    for item in all_items:
        assert item.id is not None
        assert item.phase1_attempts <= t and item.phase2_attempts <= t, item
        assert qa_counts[item.id] == item.phase1_attempts, item
        assert set_counts[item.id] == item.phase2_attempts, item
        assert max_gate_attempt.get(item.id, 0) <= t, item
        assert item.phase2_on_question <= per_question, item
        if item.state == "discarded":
            assert t in (item.phase1_attempts, item.phase2_attempts), item
    assert all(n <= per_question for n in per_qa.values()), per_qa
    return len(all_items)
