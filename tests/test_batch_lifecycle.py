"""Batch lifecycle (issue 15) through the real openai and google-genai SDKs against the local wire fakes:
submit, poll, partial results, a failed request, an expired batch, a 429 on submit, an interrupted send."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import select

from playlisteval.config import Settings
from playlisteval.errors import BudgetExceeded
from playlisteval.models.batch.api import Backends
from playlisteval.models.batch.lifecycle import Collector, Deferred
from playlisteval.models.batch.run import Clock, drive, live_requests
from playlisteval.models.request import ModelRequest, TextPart, VideoPart
from playlisteval.models.runner import Runner
from playlisteval.store import transaction
from playlisteval.store.tables import ModelBatch, ModelBatchRequest, ResponseCache
from tests.batch_wire import GEM_BATCH_CREATE, GEM_BATCH_GET, OAI_BATCH_CREATE, OAI_FILE_CREATE
from tests.helpers import project
from tests.provider_fakes import CHAT, GENERATE, Canned, FakeAPI, fake_api, ledger, make_video, runner_for

OPENAI = "openai/gpt-5.4-mini"
GEMINI = "gemini/gemini-3-flash-preview"
ROLE = "C2_transcript_answer"
GOOD = {"explanation": "because", "answer": "42"}


class FakeClock(Clock):
    """Time that jumps instead of passing: polls and backoffs cost nothing in a test."""

    def __init__(self) -> None:
        self.t = 1_000_000.0
        self.slept: list[float] = []

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.t += seconds


@pytest.fixture
def api() -> Iterator[FakeAPI]:
    with fake_api() as server:
        yield server


@pytest.fixture
def settings(tmp_path: Path, api: FakeAPI, monkeypatch: pytest.MonkeyPatch) -> Settings:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-batch-0000")
    monkeypatch.setenv("GEMINI_API_KEY", "fake-gemini-batch-key")
    s = project(tmp_path / "proj", runner__backoff_base_s=0.01)
    s.media.dir = str(tmp_path / "media")
    s.providers.openai_base_url = f"{api.url}/v1"
    s.providers.gemini_base_url = api.url
    s.providers.file_poll_s = 0.01
    s.batch.poll_s, s.batch.poll_max_s = 30, 240
    return s


def req(i: int, *parts: Any) -> ModelRequest:
    return ModelRequest(role=ROLE, parts=[TextPart(text=f"Question {i}?"), *parts], response_schema="TextAnswer",
                        purpose="eval", item_id=i)


def queue(runner: Runner, spec: str, requests: list[ModelRequest]) -> Collector:
    collector = Collector(runner.settings, runner.engine, {ROLE})
    runner.defer = collector.defer
    for r in requests:
        with pytest.raises(Deferred):
            runner.call(r, model=spec)
    return collector


def rows(engine: Any, table: Any) -> list[Any]:
    with transaction(engine) as s:
        return list(s.exec(select(table).order_by(table.id)).all())


@pytest.mark.parametrize("spec", [OPENAI, GEMINI])
def test_batched_answers_land_in_the_cache_and_ledger_like_online_ones(settings: Settings, api: FakeAPI,
                                                                       spec: str) -> None:
    runner = runner_for(settings)
    requests = [req(i) for i in range(4)]
    queue(runner, spec, requests)
    assert live_requests(runner.engine) == 4
    clock = FakeClock()
    api.batch.polls = 2
    report = drive(settings, runner.engine, Backends(settings, runner.registry), clock=clock, wait_s=3600)
    assert report.settled and report.stored == 4 and report.sent == 1
    assert clock.slept and clock.slept[0] >= 30  # it waited poll_s before asking again, doubling after
    assert sorted(api.batch.keys) == sorted({k for k in api.batch.keys})  # each request sent once
    assert not api.requests(CHAT) and not api.requests(GENERATE)  # nothing went online
    calls = ledger(runner.engine)
    batched = [c for c in calls if c.batch_id]
    assert len(batched) == 4 and all(c.status == "ok" for c in batched)
    price = settings.price_for(spec)
    first = batched[0]
    online_usd = (first.input_tokens * price.input + first.output_tokens * price.output
                  + first.thinking_tokens * price.thinking) / 1e6
    assert first.usd == pytest.approx(online_usd / 2)  # the batch price: half
    for r in requests:  # the runner answers from the cache, as it would an online answer
        response = runner.call(r, model=spec)
        assert response.cached and response.parsed == GOOD
    (batch,) = rows(runner.engine, ModelBatch)
    assert batch.state == "completed" and batch.remote_id and batch.marker.startswith("playlisteval-")


def test_a_batched_answer_is_cached_exactly_as_the_online_one(settings: Settings, api: FakeAPI) -> None:
    runner = runner_for(settings)
    online = runner.call(req(1), model=OPENAI)
    queue(runner, OPENAI, [req(2)])
    drive(settings, runner.engine, Backends(settings, runner.registry), clock=FakeClock(), wait_s=3600)
    with transaction(runner.engine) as s:
        cached = {c.request_hash: c.response for c in s.exec(select(ResponseCache)).all()}
    assert len(cached) == 2
    first, second = cached.values()
    assert first == second  # same text, parse, usage, finish reason and raw body: indistinguishable
    assert online.parsed == GOOD


@pytest.mark.parametrize("spec", [OPENAI, GEMINI])
def test_a_failed_request_and_an_expired_batch_go_back_online_one_by_one(settings: Settings, api: FakeAPI,
                                                                         spec: str) -> None:
    runner = runner_for(settings)
    requests = [req(i) for i in range(5)]
    queue(runner, spec, requests)
    with transaction(runner.engine) as s:
        keys = [r.request_hash for r in s.exec(select(ModelBatchRequest).order_by(ModelBatchRequest.id)).all()]
    api.batch.failing = {keys[1]}
    api.batch.expire_after = 3  # requests 3 and 4 are never answered: the batch expires with partial results
    report = drive(settings, runner.engine, Backends(settings, runner.registry), clock=FakeClock(), wait_s=3600)
    assert report.settled and report.stored == 3 and report.released == 3  # 2 answered + 1 failure stored
    states = {r.request_hash: r.state for r in rows(runner.engine, ModelBatchRequest)}
    assert [states[k] for k in keys] == ["done", "failed", "done", "expired", "expired"]
    (batch,) = rows(runner.engine, ModelBatch)
    assert batch.state == "expired"
    released = [c for c in ledger(runner.engine) if c.batch_id and c.status == "error"]
    assert len(released) == 3 and all(c.usd == 0 for c in released)  # unanswered is unpaid
    online = api.requests(CHAT) + api.requests(GENERATE)
    answers = [runner.call(r, model=spec) for r in requests]  # the released ones are asked online
    assert all(a.parsed == GOOD for a in answers)
    assert len(api.requests(CHAT) + api.requests(GENERATE)) - len(online) == 3
    assert [a.cached for a in answers] == [True, False, True, False, False]


@pytest.mark.parametrize(("spec", "route"), [(OPENAI, OAI_BATCH_CREATE), (GEMINI, GEM_BATCH_CREATE)])
def test_a_429_on_submit_is_retried_after_backoff_and_sent_once(settings: Settings, api: FakeAPI, spec: str,
                                                                route: str) -> None:
    runner = runner_for(settings)
    queue(runner, spec, [req(i) for i in range(3)])
    body = {"error": {"code": 429, "message": "too many batches", "status": "RESOURCE_EXHAUSTED",
                      "type": "rate_limit"}}
    api.queue(route, Canned(429, body, {"retry-after": "90"}))
    clock = FakeClock()
    report = drive(settings, runner.engine, Backends(settings, runner.registry), clock=clock, wait_s=3600)
    assert report.settled and report.stored == 3
    assert len(api.requests(route)) == 2 and clock.slept[0] >= 90  # Retry-After honoured
    assert len(api.batch.keys) == 3  # the refused send created nothing; the second created one batch


@pytest.mark.parametrize("spec", [OPENAI, GEMINI])
def test_a_send_interrupted_after_the_provider_took_it_is_adopted_not_resent(settings: Settings, api: FakeAPI,
                                                                             spec: str) -> None:
    runner = runner_for(settings)
    queue(runner, spec, [req(i) for i in range(3)])
    backends = Backends(settings, runner.registry)
    backend = backends.get(spec.split("/")[0])
    real_submit = backend.submit

    def submit_then_die(*args: Any) -> str:
        real_submit(*args)
        raise SystemExit("killed between send and record")

    backend.submit = submit_then_die  # type: ignore[method-assign]
    with pytest.raises(SystemExit):
        drive(settings, runner.engine, backends, clock=FakeClock(), wait_s=3600)
    (batch,) = rows(runner.engine, ModelBatch)
    assert batch.state == "pending" and not batch.remote_id  # the provider has it; the store does not know
    backend.submit = real_submit  # type: ignore[method-assign]
    report = drive(settings, runner.engine, backends, clock=FakeClock(), wait_s=3600)
    assert report.settled and report.stored == 3
    assert len(api.batch.keys) == 3  # found by its marker and adopted: never sent twice
    (batch,) = rows(runner.engine, ModelBatch)
    assert batch.state == "completed" and batch.remote_id


def test_the_budget_is_checked_when_a_batch_is_written(settings: Settings, api: FakeAPI) -> None:
    settings.eval.budget_usd = 1e-6
    runner = runner_for(settings)
    queue(runner, OPENAI, [req(i) for i in range(2)])
    with pytest.raises(BudgetExceeded):
        drive(settings, runner.engine, Backends(settings, runner.registry), clock=FakeClock(), wait_s=3600)
    assert not rows(runner.engine, ModelBatch) and not api.requests(OAI_FILE_CREATE)
    assert {r.state for r in rows(runner.engine, ModelBatchRequest)} == {"queued"}  # kept for a larger budget


def test_the_openai_jsonl_line_is_the_online_request(settings: Settings, api: FakeAPI) -> None:
    runner = runner_for(settings)
    runner.call(req(7), model=OPENAI)
    queue(runner, OPENAI, [req(8)])
    drive(settings, runner.engine, Backends(settings, runner.registry), clock=FakeClock(), wait_s=3600)
    online = api.requests(CHAT)[0].json
    (upload,) = [f for f in api.batch.files.values() if f["purpose"] == "batch"]
    (line,) = [json.loads(x) for x in upload["_data"].decode().splitlines()]
    assert line["url"] == "/v1/chat/completions" and line["method"] == "POST"
    online["messages"][0]["content"][0]["text"] = "Question 8?"
    assert line["body"] == online  # same model, content, strict schema and options
    (batch,) = api.batch.batches.values()
    assert batch["metadata"]["playlisteval_marker"].startswith("playlisteval-")
    assert upload["filename"] == batch["metadata"]["playlisteval_marker"] + ".jsonl"


def test_gemini_batches_reference_uploaded_clips(settings: Settings, api: FakeAPI, tmp_path: Path) -> None:
    video = make_video(tmp_path / "v.mp4", seconds=6, size="160x120")
    runner = runner_for(settings)
    clip = VideoPart(path=str(video), start=1.0, end=5.0, fps=0.5, size=(160, 120), label="Clip 1")
    queue(runner, GEMINI, [req(1, clip), req(2, clip)])
    api.batch.cached_tokens = 500
    drive(settings, runner.engine, Backends(settings, runner.registry), clock=FakeClock(), wait_s=3600)
    (create,) = api.requests(GEM_BATCH_CREATE)
    inlined = create.json["batch"]["inputConfig"]["requests"]["requests"]
    # the SDK writes the file reference's inner keys in snake case here (proto JSON accepts both spellings)
    files = [p["fileData"] for r in inlined for p in r["request"]["contents"][0]["parts"] if "fileData" in p]
    uris = {f.get("fileUri") or f.get("file_uri") for f in files}
    assert len(uris) == 1 and len(api.files) == 1  # one upload, referenced by both requests
    assert create.json["batch"]["displayName"].startswith("playlisteval-")
    assert api.requests(GEM_BATCH_GET)
    calls = [c for c in ledger(runner.engine) if c.batch_id]
    price = settings.price_for(GEMINI)
    c = calls[0]
    fresh = ((c.input_tokens - 500) * price.input + c.output_tokens * price.output
             + c.thinking_tokens * price.thinking) / 1e6
    assert c.cached_input_tokens == 500 and c.usd == pytest.approx(fresh / 2 + 500 * (price.cached_input or 0) / 1e6)


def test_status_and_batches_show_open_batches_with_age_and_expected_cost(settings: Settings, api: FakeAPI) -> None:
    from click.testing import CliRunner

    from playlisteval.actors.build_run import status
    from playlisteval.cli import main

    runner = runner_for(settings)
    queue(runner, OPENAI, [req(i) for i in range(3)])
    api.batch.polls = 5
    clock = FakeClock()
    report = drive(settings, runner.engine, Backends(settings, runner.registry), clock=clock, wait_s=0)
    assert report.sent == 1 and report.live == 3  # sent, still running when the wait was over
    (open_batch,) = status(settings).batches
    assert open_batch["state"] == "submitted" and open_batch["requests"] == 3 and open_batch["answered"] == 0
    assert open_batch["expected_usd"] > 0 and open_batch["remote_id"].startswith("batch_")
    env = {"OPENAI_API_KEY": "sk-test-batch-0000",
           "PLAYLISTEVAL_PROVIDERS__OPENAI_BASE_URL": f"{api.url}/v1", "PLAYLISTEVAL_BATCH__POLL_S": "0.01"}
    shown = CliRunner().invoke(main, ["--project", str(settings.root), "status"], env=env, catch_exceptions=False)
    assert shown.exit_code == 0 and "0/3 answered" in shown.output
    listed = CliRunner().invoke(main, ["--project", str(settings.root), "batches", "--json"], env=env)
    assert json.loads(listed.output.splitlines()[0])["state"] == "submitted"
    collected = CliRunner().invoke(main, ["--project", str(settings.root), "batches", "--collect", "--wait", "30"],
                                   env=env, catch_exceptions=False)
    assert collected.exit_code == 0 and "3 answer(s) stored" in collected.output
    assert "no open batches" in collected.output
    assert not status(settings).batches


def test_a_missing_key_leaves_batches_waiting_and_resume_collects_them(settings: Settings, api: FakeAPI,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    from playlisteval.actors.build_run import resume

    runner = runner_for(settings)
    requests = [req(i) for i in range(2)]
    queue(runner, OPENAI, requests)
    api.batch.polls = 100
    clock = FakeClock()
    drive(settings, runner.engine, Backends(settings, runner.registry), clock=clock, wait_s=0)  # sent only
    clock.t += 3600  # its next poll is due
    monkeypatch.delenv("OPENAI_API_KEY")
    fresh = Backends(settings)  # a process without the key: a new client cannot be made
    report = drive(settings, runner.engine, fresh, clock=clock, wait_s=0)
    assert report.live == 2 and report.released == 0  # the batch is not blamed for a missing key
    (batch,) = rows(runner.engine, ModelBatch)
    assert batch.state == "submitted" and "OPENAI_API_KEY" in batch.error
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-batch-0000")
    settings.batch.poll_s = settings.batch.poll_max_s = 0.01
    api.batch.polls = 0
    for _ in range(20):  # `resume` (no item to build) sends and collects what is due, without waiting
        resume(settings)
        if not live_requests(runner.engine):
            break
        time.sleep(0.02)
    assert not live_requests(runner.engine)
    runner.defer = None
    assert all(runner.call(r, model=OPENAI).cached for r in requests)
    assert len(api.batch.keys) == 2
