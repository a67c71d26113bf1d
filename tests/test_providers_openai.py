"""Contract tests: the real openai SDK against a local server speaking chat completions (OpenAI, Qwen, vLLM).

They check what the SDK sends (schema, frames, limits, keys) and how replayed answers — 429 with
Retry-After, 500, a body cut off, truncated JSON, refusals, missing usage, quota exhaustion — travel
through the Runner (retries, repairs, ledger).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog

from playlisteval.config import Settings
from playlisteval.errors import BudgetExceeded, PermanentModelError, QuotaExhausted, TransientModelError
from playlisteval.models.providers.media_parts import plan
from playlisteval.models.request import GenerationSettings, ImagePart, ModelRequest, TextPart, VideoPart
from tests.helpers import project
from tests.provider_fakes import (
    CHAT,
    Canned,
    FakeAPI,
    chat_body,
    debug_logging,
    fake_api,
    ledger,
    make_video,
    runner_for,
    store_bytes,
)

OPENAI_KEY = "sk-test-0penai-SECRET-4242"
QWEN_KEY = "sk-test-dashscope-SECRET-77"
GOOD = json.dumps({"explanation": "because", "answer": "42"})


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
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("DASHSCOPE_API_KEY", QWEN_KEY)
    s = project(tmp_path / "proj", runner__backoff_base_s=0.01)
    s.media.dir = str(media)
    s.providers.openai_base_url = f"{api.url}/v1"
    s.providers.qwen_base_url = f"{api.url}/compatible-mode/v1"
    s.providers.vllm_base_url = f"{api.url}/vllm/v1"
    return s


def request(video: Path | None = None, **kw: Any) -> ModelRequest:
    parts: list[Any] = [TextPart(text="Which colour is the square?")]
    if video is not None:
        parts.append(VideoPart(path=str(video), start=2.0, end=10.0, fps=1.0, size=(160, 120), label="Clip 1"))
    return ModelRequest(role="C2_transcript_answer", parts=parts, response_schema="TextAnswer", **kw)


def sent(api: FakeAPI, n: int = -1) -> dict[str, Any]:
    body: dict[str, Any] = api.requests(CHAT)[n].json
    return body


def test_openai_request_carries_a_strict_schema_and_frames_within_the_image_limit(
        settings: Settings, api: FakeAPI, video: Path) -> None:
    settings.providers.image_limits["openai/*"] = 5  # 8 s at 1 fps would be 8 frames
    runner = runner_for(settings)
    req = request(video, settings=GenerationSettings(thinking="low"))
    response = runner.call(req, model="openai/gpt-5.4-mini")
    assert response.parsed == {"explanation": "because", "answer": "42"}
    seen = api.requests(CHAT)[0]
    assert seen.headers["authorization"] == f"Bearer {OPENAI_KEY}"
    body = seen.json
    assert body["model"] == "gpt-5.4-mini" and body["reasoning_effort"] == "low"
    assert "temperature" not in body and "top_p" not in body  # sampling only when the user sets it
    fmt = body["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    schema = fmt["json_schema"]["schema"]
    assert schema["additionalProperties"] is False and set(schema["required"]) == {"explanation", "answer"}
    content = body["messages"][0]["content"]
    images = [c for c in content if c["type"] == "image_url"]
    assert len(images) == 5 and all(i["image_url"]["url"].startswith("data:image/jpeg;base64,") for i in images)
    texts = [c["text"] for c in content if c["type"] == "text"]
    assert texts[0] == "Which colour is the square?" and texts[1] == "Clip 1:"
    assert texts[2].startswith("[0:0")  # each frame is labelled with its time on the clip's clock
    # usage: completion tokens include reasoning tokens; the ledger keeps them apart
    assert response.usage.input_tokens == 1000 and response.usage.output_tokens == 200
    assert response.usage.thinking_tokens == 100
    (row,) = ledger(runner.engine)
    assert row.status == "ok" and row.usd == pytest.approx((1000 * 0.75 + 200 * 4.5 + 100 * 4.5) / 1e6)


def test_the_image_limit_is_shared_by_clips_and_images(tmp_path: Path, video: Path) -> None:
    parts: list[Any] = [VideoPart(path=str(video), start=0, end=100, fps=1.0),
                        VideoPart(path=str(video), start=0, end=300, fps=1.0),
                        ImagePart(path=str(tmp_path / "a.jpg")), ImagePart(path=str(tmp_path / "b.jpg"))]
    req = ModelRequest(role="G", parts=parts)
    counts = plan(req, limit=42)
    assert sum(counts.values()) + 2 <= 42 and counts[1] > counts[0] * 2
    assert plan(req, limit=None) == {0: 100, 1: 300}
    with pytest.raises(PermanentModelError, match="over the model's limit"):
        plan(req, limit=3)


def test_sdk_retries_are_off_and_429_retry_after_is_honoured_by_the_runner(
        settings: Settings, api: FakeAPI) -> None:
    api.queue(CHAT, Canned(429, {"error": {"message": "slow down", "type": "requests"}}, {"retry-after": "7"}),
              Canned(500, {"error": {"message": "boom"}}))
    sleeps: list[float] = []
    runner = runner_for(settings, sleeps)
    assert runner.call(request(), model="openai/gpt-5.4-mini").parsed is not None
    assert len(api.requests(CHAT)) == 3  # one HTTP request per runner try: the SDK did not retry
    assert sleeps[0] >= 7.0 and len(sleeps) == 2
    rows = ledger(runner.engine)
    assert [r.status for r in rows] == ["error", "error", "ok"]
    assert "429" in (rows[0].error or "") and rows[0].usd == 0


def test_a_body_cut_off_mid_json_is_transient(settings: Settings, api: FakeAPI) -> None:
    api.queue(CHAT, Canned(200, '{"id": "x", "object": "chat.completion", "choices": [{"mess'))
    runner = runner_for(settings)
    assert runner.call(request(), model="openai/gpt-5.4-mini").parsed is not None
    assert [r.status for r in ledger(runner.engine)] == ["error", "ok"]


def test_truncated_json_is_repaired_with_a_note(settings: Settings, api: FakeAPI) -> None:
    api.queue(CHAT, Canned(body=chat_body('{"explanation": "becau', finish="length", usage=api.usage)))
    runner = runner_for(settings)
    response = runner.call(request(), model="openai/gpt-5.4-mini")
    assert response.parsed is not None and not response.malformed
    repaired = sent(api)["messages"][0]["content"][-1]["text"]
    assert "could not be used" in repaired
    assert [r.status for r in ledger(runner.engine)] == ["malformed", "ok"]


def test_a_refusal_is_a_reply_the_runner_finds_malformed(settings: Settings, api: FakeAPI) -> None:
    refusal = Canned(body=chat_body(None, refusal="I can't help with that.", usage=api.usage))
    api.queue(CHAT, refusal, refusal, refusal)
    runner = runner_for(settings)
    response = runner.call(request(), model="openai/gpt-5.4-mini")
    assert response.malformed and response.parsed is None and response.finish_reason == "refusal"
    assert "can't help" in response.text
    assert [r.status for r in ledger(runner.engine)] == ["malformed"] * 3


def test_missing_usage_is_estimated_not_free(settings: Settings, api: FakeAPI) -> None:
    api.queue(CHAT, Canned(body=chat_body(GOOD, usage=None)))
    runner = runner_for(settings)
    response = runner.call(request(), model="openai/gpt-5.4-mini")
    assert response.parsed is not None and response.raw["usage_estimated"] is True
    (row,) = ledger(runner.engine)
    assert row.input_tokens > 0 and row.output_tokens > 0 and row.usd > 0


def test_client_errors_are_permanent_and_quota_exhaustion_pauses(settings: Settings, api: FakeAPI) -> None:
    api.queue(CHAT, Canned(400, {"error": {"message": "bad image", "type": "invalid_request_error"}}))
    runner = runner_for(settings)
    with pytest.raises(PermanentModelError, match="bad image"):
        runner.call(request(), model="openai/gpt-5.4-mini")
    api.queue(CHAT, Canned(429, {"error": {"message": "You exceeded your current quota", "type": "insufficient_quota",
                                           "code": "insufficient_quota"}}))
    with pytest.raises(QuotaExhausted) as info:
        runner.call(request(attempt=2), model="openai/gpt-5.4-mini")
    assert isinstance(info.value, BudgetExceeded)  # the build pauses on it, resumable
    assert [r.status for r in ledger(runner.engine)] == ["error", "error"]


def test_timeouts_and_dead_servers_are_transient(settings: Settings) -> None:
    from playlisteval.models.providers.openai_compat import OpenAIProvider

    settings.providers.openai_base_url = "http://127.0.0.1:9/v1"  # nothing listens on the discard port
    with pytest.raises(TransientModelError, match="connection error"):
        OpenAIProvider(settings).complete("m", request(), None, timeout=2)


def test_no_api_key_reaches_the_store_or_the_logs(settings: Settings, api: FakeAPI, video: Path,
                                                   caplog: pytest.LogCaptureFixture,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    caplog.set_level(logging.DEBUG)
    api.queue(CHAT, Canned(401, {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}))
    runner = runner_for(settings)
    with debug_logging():
        with structlog.testing.capture_logs() as captured, pytest.raises(PermanentModelError):
            runner.call(request(video), model="openai/gpt-5.4-mini")
        runner.call(request(video, attempt=2), model="openai/gpt-5.4-mini")
        runner.call(request(video, attempt=2), model="openai/gpt-5.4-mini")  # a cache hit, logged too
        runner.call(request(video, attempt=2), model="qwen/qwen3.7-plus")
    out = capsys.readouterr()
    everything = "\n".join([out.out, out.err, caplog.text, json.dumps(captured, default=str)])
    for key in (OPENAI_KEY, QWEN_KEY):
        assert key not in everything
        assert key.encode() not in store_bytes(settings)
    assert api.requests(CHAT)[0].headers["authorization"] == f"Bearer {OPENAI_KEY}"  # it was on the wire only


def test_qwen_sends_video_as_a_frame_list_to_its_own_endpoint(settings: Settings, api: FakeAPI,
                                                               video: Path) -> None:
    runner = runner_for(settings)
    short = ModelRequest(role="C3", parts=[VideoPart(path=str(video), start=1.0, end=3.0, fps=0.5, label="Video 1",
                                                     audio=False), TextPart(text="grounded?")],
                         response_schema="TextAnswer", settings=GenerationSettings(thinking="none"))
    assert runner.call(short, model="qwen/qwen3.7-plus").parsed is not None
    seen = api.requests(CHAT)[0]
    assert seen.path == "/compatible-mode/v1/chat/completions"
    assert seen.headers["authorization"] == f"Bearer {QWEN_KEY}"
    body = seen.json
    (frames,) = [c for c in body["messages"][0]["content"] if c["type"] == "video"]
    assert len(frames["video"]) == settings.providers.qwen_min_frames  # 2 s at 0.5 fps is 1 frame: padded
    assert frames["fps"] == pytest.approx(2.0)
    assert body["response_format"]["type"] == "json_schema"
    assert body["enable_thinking"] is False  # thinking "none" → DashScope's switch, sent in the body
    assert "max_tokens" not in body and "reasoning_effort" not in body
    settings.providers.qwen_response_format = "json_object"
    assert runner.call(short.model_copy(update={"attempt": 1}), model="qwen/qwen3.7-plus").parsed is not None
    body = sent(api)
    assert body["response_format"] == {"type": "json_object"}
    assert '"required"' in body["messages"][0]["content"][-1]["text"]  # the schema went into the prompt


def test_vllm_is_charged_by_gpu_time_and_can_send_the_clip_itself(settings: Settings, api: FakeAPI,
                                                                   video: Path) -> None:
    settings.providers.vllm_gpus = 2
    runner = runner_for(settings)
    response = runner.call(request(video), model="vllm/Qwen/Qwen3-VL-30B-A3B-Instruct")
    assert response.parsed is not None and response.usage.gpu_seconds > 0
    seen = api.requests(CHAT)[0]
    assert seen.path == "/vllm/v1/chat/completions" and seen.json["model"] == "Qwen/Qwen3-VL-30B-A3B-Instruct"
    assert seen.headers["authorization"] == "Bearer EMPTY"  # no key needed for a local server
    (row,) = ledger(runner.engine)
    assert row.gpu_seconds == pytest.approx(response.usage.gpu_seconds)
    assert row.usd == pytest.approx(row.gpu_seconds / 3600 * 4.0)  # [prices."vllm/*"] gpu_hour = 4
    settings.providers.vllm_video = "video_url"
    runner.call(request(video, attempt=2), model="vllm/Qwen/Qwen3-VL-30B-A3B-Instruct")
    content = sent(api)["messages"][0]["content"]
    (clip,) = [c for c in content if c["type"] == "video_url"]
    assert clip["video_url"]["url"].startswith("data:video/mp4;base64,")
    assert not [c for c in content if c["type"] == "image_url"]
