from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from sqlmodel import select

from playlisteval.config import Price
from playlisteval.errors import BudgetExceeded, PermanentModelError, TransientModelError
from playlisteval.models.budget import BUDGET_KEY
from playlisteval.models.registry import Registry
from playlisteval.models.request import ModelRequest, ProviderReply, TextPart, Usage
from playlisteval.models.request_keys import request_hash
from playlisteval.models.runner import Runner
from playlisteval.store import open_store, transaction
from playlisteval.store.tables import KeyValue, ModelCall
from tests.helpers import project

GOOD = json.dumps({"explanation": "because", "answer": "42"})


class Scripted:
    """A provider that replays a script of replies and exceptions, and records what it was sent."""

    name = "sim"

    def __init__(self, script: list[Any]) -> None:
        self.script = list(script)
        self.requests: list[ModelRequest] = []

    def complete(self, model: str, request: ModelRequest, schema: type[BaseModel] | None,
                 timeout: float) -> ProviderReply:
        self.requests.append(request)
        step = self.script.pop(0)
        if isinstance(step, Exception):
            raise step
        return ProviderReply(text=step, usage=Usage(input_tokens=1000, output_tokens=200))


def make(tmp_path: Path, script: list[Any]) -> tuple[Runner, Scripted, list[float]]:
    settings = project(tmp_path)
    settings.prices["sim/*"] = Price(input=1.0, output=10.0)
    engine = open_store(settings)
    registry = Registry(settings)
    provider = Scripted(script)
    registry.register("sim", provider)
    sleeps: list[float] = []
    return Runner(settings, engine, registry=registry, sleep=sleeps.append), provider, sleeps


def req(attempt: int = 1) -> ModelRequest:
    return ModelRequest(role="C2_transcript_answer", parts=[TextPart(text="q?")], response_schema="TextAnswer",
                        attempt=attempt)


def ledger(runner: Runner) -> list[ModelCall]:
    with transaction(runner.engine) as s:
        return list(s.exec(select(ModelCall).order_by(ModelCall.id)).all())  # type: ignore[arg-type]


def test_a_repeated_request_is_served_from_the_cache(tmp_path: Path) -> None:
    runner, provider, _ = make(tmp_path, [GOOD])
    first = runner.call(req())
    second = runner.call(req())
    assert first.parsed == second.parsed == {"explanation": "because", "answer": "42"}
    assert len(provider.requests) == 1 and second.cached and second.usd == 0
    rows = ledger(runner)
    assert [(r.status, r.cache_hit) for r in rows] == [("ok", False), ("cached", True)]
    assert rows[0].usd == pytest.approx((1000 * 1.0 + 200 * 10.0) / 1e6)
    assert rows[1].usd == 0


def test_a_new_attempt_is_a_new_request(tmp_path: Path) -> None:
    assert request_hash("sim/x", req(1)) != request_hash("sim/x", req(2))


def test_transient_errors_are_retried_honouring_retry_after(tmp_path: Path) -> None:
    runner, provider, sleeps = make(tmp_path, [TransientModelError("429", retry_after=7.0),
                                               TransientModelError("503"), GOOD])
    assert runner.call(req()).parsed is not None
    assert sleeps[0] >= 7.0 and 0 < sleeps[1] <= runner.settings.runner.backoff_max_s
    assert [r.status for r in ledger(runner)] == ["error", "error", "ok"]


def test_transient_errors_give_up_after_max_attempts(tmp_path: Path) -> None:
    runner, _, sleeps = make(tmp_path, [TransientModelError("503")] * 10)
    runner.settings.runner.max_attempts = 3
    with pytest.raises(TransientModelError):
        runner.call(req())
    assert len(sleeps) == 2 and len(ledger(runner)) == 3


def test_malformed_output_is_repaired_then_reported(tmp_path: Path) -> None:
    runner, provider, _ = make(tmp_path, ["not json", GOOD])
    response = runner.call(req())
    assert response.parsed is not None and not response.malformed
    assert "could not be used" in provider.requests[1].text()
    runner2, _, _ = make(tmp_path / "b", ["{}", "nope", "still nope"])
    bad = runner2.call(req())
    assert bad.malformed and bad.parsed is None and "reply began" in (bad.malformed_reason or "")
    assert [r.status for r in ledger(runner2)] == ["malformed"] * 3


def test_permanent_errors_are_recorded_and_raised(tmp_path: Path) -> None:
    runner, _, _ = make(tmp_path, [PermanentModelError("400 bad request")])
    with pytest.raises(PermanentModelError):
        runner.call(req())
    (row,) = ledger(runner)
    assert row.status == "error" and "400" in (row.error or "")


def test_budget_is_checked_before_each_paid_call(tmp_path: Path) -> None:
    runner, provider, _ = make(tmp_path, [GOOD] * 10)
    with transaction(runner.engine) as s:
        s.add(KeyValue(key=BUDGET_KEY, value="0.025"))
    # each call is estimated at ~0.015 USD before it is made and costs 0.003 USD
    with pytest.raises(BudgetExceeded, match="budget reached"):
        for attempt in range(1, 10):
            runner.call(req(attempt))
    assert len(provider.requests) == 4
    assert sum(r.usd for r in ledger(runner)) == pytest.approx(0.012)


def test_an_abandoned_in_flight_call_is_marked_interrupted(tmp_path: Path) -> None:
    runner, _, _ = make(tmp_path, [GOOD])
    with transaction(runner.engine) as s:
        s.add(ModelCall(request_hash=request_hash("sim/answerer", req()), role="x", provider="sim",
                        model="answerer", status="in_flight", estimated_usd=0.5))
    runner.call(req())
    assert [r.status for r in ledger(runner)] == ["interrupted", "ok"]
