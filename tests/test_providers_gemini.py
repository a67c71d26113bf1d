"""Contract tests: the real google-genai SDK against a local server speaking generateContent, the
resumable Files upload and files.get; run through the Runner for retries, repairs and the ledger."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog
from sqlmodel import select

from playlisteval.config import Settings
from playlisteval.errors import BudgetExceeded, PermanentModelError, QuotaExhausted
from playlisteval.models.request import AudioPart, GenerationSettings, ModelRequest, TextPart, VideoPart
from playlisteval.models.runner import Runner
from playlisteval.store import transaction
from playlisteval.store.tables import RemoteFile
from tests.helpers import project
from tests.provider_fakes import (
    FILE_GET,
    GENERATE,
    UPLOAD,
    UPLOAD_START,
    Canned,
    FakeAPI,
    debug_logging,
    fake_api,
    gemini_body,
    ledger,
    make_video,
    runner_for,
    store_bytes,
)

KEY = "fake-gemini-key-SECRET-9000"
MODEL = "gemini/gemini-3-flash-preview"


@pytest.fixture
def api() -> Iterator[FakeAPI]:
    with fake_api() as server:
        yield server


@pytest.fixture(scope="module")
def video(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_video(tmp_path_factory.mktemp("media") / "source.mp4", seconds=12, size="192x144")


@pytest.fixture(scope="module")
def media(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One media folder for the module: clips and frames are content-keyed, so tests share them safely."""
    return tmp_path_factory.mktemp("derived")


@pytest.fixture
def settings(tmp_path: Path, api: FakeAPI, media: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    s = project(tmp_path / "proj", runner__backoff_base_s=0.01)
    s.media.dir = str(media)
    s.providers.gemini_base_url = api.url
    s.providers.file_poll_s = 0.01
    return s


def request(video: Path, attempt: int = 0, **settings: Any) -> ModelRequest:
    return ModelRequest(
        role="B", attempt=attempt, response_schema="TextAnswer", settings=GenerationSettings(**settings),
        parts=[TextPart(text="Write a question."),
               VideoPart(path=str(video), start=2.0, end=10.0, fps=0.5, size=(160, 120), media_resolution="medium",
                         audio=True, label="Clip 1")],
    )


def generate_body(api: FakeAPI, n: int = -1) -> dict[str, Any]:
    body: dict[str, Any] = api.requests(GENERATE)[n].json
    return body


def remote_rows(runner: Runner) -> list[RemoteFile]:
    with transaction(runner.engine) as s:
        return list(s.exec(select(RemoteFile)).all())


def test_a_clip_is_uploaded_resumably_polled_until_active_and_sent_with_video_metadata(
        settings: Settings, api: FakeAPI, video: Path) -> None:
    api.processing_polls = 2
    runner = runner_for(settings)
    response = runner.call(request(video, thinking="low"), model=MODEL)
    assert response.parsed == {"explanation": "because", "answer": "42"}
    (start,) = api.requests(UPLOAD_START)
    assert start.path == "/upload/v1beta/files" and start.headers["x-goog-api-key"] == KEY
    assert start.headers["x-goog-upload-protocol"] == "resumable"
    assert start.headers["x-goog-upload-command"] == "start"
    assert start.headers["x-goog-upload-header-content-type"] == "video/mp4"
    chunks = api.requests(UPLOAD)
    assert "finalize" in chunks[-1].headers["x-goog-upload-command"]
    (row,) = remote_rows(runner)
    assert sum(len(c.body) for c in chunks) > 0 and row.remote_name.startswith("files/")
    assert len(api.requests(FILE_GET)) == 3  # PROCESSING twice, then ACTIVE
    seen = api.requests(GENERATE)[0]
    assert seen.path == "/v1beta/models/gemini-3-flash-preview:generateContent"
    assert seen.headers["x-goog-api-key"] == KEY
    parts = seen.json["contents"][0]["parts"]
    assert parts[0] == {"text": "Write a question."} and parts[1] == {"text": "Clip 1:"}
    clip = parts[2]
    file_data = clip["fileData"]
    assert (file_data.get("fileUri") or file_data.get("file_uri")) == row.uri
    meta = {k.replace("_", "").lower(): v for k, v in clip["videoMetadata"].items()}
    assert meta == {"fps": 0.5, "startoffset": "0s", "endoffset": "8.000s"}
    # issue 42: the clip went as video, sampled at its own fps — recorded with the reply for funnel and show
    assert response.raw["frames"] == [{"part": 1, "fps_asked": 0.5, "fps_sent": 0.5, "frames": 4, "limit": None,
                                       "subsampled": False, "sent_as": "video"}]
    config = seen.json["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert config["responseJsonSchema"]["required"] == ["explanation", "answer"]
    assert config["mediaResolution"] == "MEDIA_RESOLUTION_MEDIUM"
    thinking = {k.replace("_", "").lower(): v for k, v in config["thinkingConfig"].items()}
    assert thinking == {"thinkinglevel": "LOW"}
    assert "temperature" not in config
    assert (response.usage.input_tokens, response.usage.output_tokens, response.usage.thinking_tokens) == (
        2000, 200, 50)
    (call,) = ledger(runner.engine)
    assert call.usd == pytest.approx((2000 * 0.5 + 200 * 3.0 + 50 * 3.0) / 1e6)


def test_an_upload_is_reused_while_valid_and_replaced_when_expired_or_lost(
        settings: Settings, api: FakeAPI, video: Path) -> None:
    runner = runner_for(settings)
    runner.call(request(video, attempt=1), model=MODEL)
    runner.call(request(video, attempt=2), model=MODEL)  # a new request, the same clip
    assert len(api.requests(UPLOAD_START)) == 1
    (row,) = remote_rows(runner)
    assert row.expires_at is not None and row.expires_at > time.time() + 40 * 3600
    with transaction(runner.engine) as s:
        stored = s.get(RemoteFile, row.id)
        assert stored is not None
        stored.expires_at = time.time() + 60  # inside the reuse margin
        s.add(stored)
    runner.call(request(video, attempt=3), model=MODEL)
    assert len(api.requests(UPLOAD_START)) == 2
    # the API no longer knows the file: forget it, retry, upload again
    api.queue(GENERATE, Canned(403, {"error": {"code": 403, "status": "PERMISSION_DENIED",
                                               "message": "You do not have permission to access the File x "
                                                          "or it may not exist."}}))
    assert runner.call(request(video, attempt=4), model=MODEL).parsed is not None
    assert len(api.requests(UPLOAD_START)) == 3
    assert [r.status for r in ledger(runner.engine)][-2:] == ["error", "ok"]
    (row,) = remote_rows(runner)
    assert row.uri == (generate_body(api)["contents"][0]["parts"][2]["fileData"].get("fileUri")
                       or generate_body(api)["contents"][0]["parts"][2]["fileData"].get("file_uri"))


def test_retry_delay_server_errors_and_cut_bodies_are_retried(settings: Settings, api: FakeAPI,
                                                              video: Path) -> None:
    api.queue(GENERATE,
              Canned(429, {"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "message": "slow down",
                                     "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo",
                                                  "retryDelay": "7s"}]}}),
              Canned(503, {"error": {"code": 503, "status": "UNAVAILABLE", "message": "overloaded"}}),
              Canned(200, '{"candidates": [{"content": {"parts": [{"te'))
    sleeps: list[float] = []
    runner = runner_for(settings, sleeps)
    assert runner.call(request(video), model=MODEL).parsed is not None
    assert sleeps[0] >= 7.0 and len(sleeps) == 3
    assert [r.status for r in ledger(runner.engine)] == ["error", "error", "error", "ok"]
    assert len(api.requests(GENERATE)) == 4  # the SDK never retried on its own


def test_truncated_json_blocked_prompts_and_missing_usage(settings: Settings, api: FakeAPI, video: Path) -> None:
    api.queue(GENERATE, Canned(body=gemini_body('{"explanation": "trunc', finish="MAX_TOKENS",
                                                usage=api.gemini_usage)))
    runner = runner_for(settings)
    response = runner.call(request(video, attempt=1), model=MODEL)
    assert response.parsed is not None
    assert "could not be used" in generate_body(api)["contents"][0]["parts"][-1]["text"]
    blocked = Canned(body={"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 10}})
    api.queue(GENERATE, blocked, blocked, blocked)
    response = runner.call(request(video, attempt=2), model=MODEL)
    assert response.malformed and response.finish_reason == "blocked: SAFETY"
    api.queue(GENERATE, Canned(body=gemini_body(api.content, usage=None)))
    response = runner.call(request(video, attempt=3), model=MODEL)
    assert response.parsed is not None and response.raw["usage_estimated"] is True
    assert ledger(runner.engine)[-1].usd > 0


def test_a_daily_quota_pauses_and_other_client_errors_are_permanent(settings: Settings, api: FakeAPI,
                                                                   video: Path) -> None:
    api.queue(GENERATE, Canned(429, {"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "message": "quota",
                                               "details": [{"@type": "type.googleapis.com/google.rpc.QuotaFailure",
                                                            "violations": [{"quotaId": "GenerateRequestsPerDay"
                                                                                       "PerProjectPerModel"}]}]}}))
    runner = runner_for(settings)
    with pytest.raises(QuotaExhausted) as info:
        runner.call(request(video, attempt=1), model=MODEL)
    assert isinstance(info.value, BudgetExceeded)
    api.queue(GENERATE, Canned(400, {"error": {"code": 400, "status": "INVALID_ARGUMENT", "message": "bad fps"}}))
    with pytest.raises(PermanentModelError, match="bad fps"):
        runner.call(request(video, attempt=2), model=MODEL)
    assert [r.status for r in ledger(runner.engine)] == ["error", "error"]


def test_audio_parts_are_uploaded_as_audio(settings: Settings, api: FakeAPI, video: Path) -> None:
    runner = runner_for(settings)
    req = ModelRequest(role="G", parts=[AudioPart(path=str(video), start=1.0, end=4.0), TextPart(text="Which?")])
    runner.call(req, model=MODEL)
    start = api.requests(UPLOAD_START)[0]
    assert start.headers["x-goog-upload-header-content-type"] == "audio/aac"
    data = generate_body(api)["contents"][0]["parts"][0]["fileData"]
    assert (data.get("mimeType") or data.get("mime_type")) == "audio/aac"


def test_no_api_key_reaches_the_store_or_the_logs(settings: Settings, api: FakeAPI, video: Path,
                                                   caplog: pytest.LogCaptureFixture,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    caplog.set_level(logging.DEBUG)
    api.queue(GENERATE, Canned(403, {"error": {"code": 403, "status": "PERMISSION_DENIED",
                                               "message": "API key not valid"}}))
    runner = runner_for(settings)
    with debug_logging():
        with structlog.testing.capture_logs() as captured, pytest.raises(PermanentModelError):
            runner.call(request(video, attempt=1), model=MODEL)
        runner.call(request(video, attempt=2), model=MODEL)  # logged (debug) to the captured stderr
        runner.call(request(video, attempt=2), model=MODEL)  # a cache hit, logged too
    out = capsys.readouterr()
    everything = "\n".join([out.out, out.err, caplog.text, json.dumps(captured, default=str)])
    assert KEY not in everything and KEY.encode() not in store_bytes(settings)
    assert any(s.headers.get("x-goog-api-key") == KEY for s in api.requests(GENERATE))
