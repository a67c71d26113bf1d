"""The agentic judge's wire (issue 20, deliverable 3): tools and tool calls through the real openai and
google-genai SDKs against a local fake server, through the Runner (cache, ledger), and the hashes that
must not move for requests without tools."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image

from playlisteval.config import Settings
from playlisteval.eval.agent_tools import TOOLS
from playlisteval.models.request import (
    GenerationSettings,
    ImagePart,
    ModelRequest,
    TextPart,
    ToolCall,
    ToolCallsPart,
    ToolResultPart,
    stable_dump,
)
from playlisteval.models.request_keys import request_hash
from tests.helpers import project
from tests.provider_fakes import CHAT, GENERATE, Canned, FakeAPI, chat_body, fake_api, gemini_body, ledger, runner_for

ARGS = {"query": "the sign above the stag", "k": 4}


@pytest.fixture
def api() -> Iterator[FakeAPI]:
    with fake_api() as server:
        yield server


@pytest.fixture
def settings(tmp_path: Path, api: FakeAPI, monkeypatch: pytest.MonkeyPatch) -> Settings:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-agent")
    monkeypatch.setenv("GEMINI_API_KEY", "gm-test-agent")
    s = project(tmp_path / "proj", runner__backoff_base_s=0.01)
    s.media.dir = str(tmp_path / "media")
    s.providers.openai_base_url = f"{api.url}/v1"
    s.providers.gemini_base_url = api.url
    return s


@pytest.fixture
def frame(tmp_path: Path) -> Path:
    path = tmp_path / "frame.jpg"
    Image.new("RGB", (64, 48), (200, 30, 30)).save(path)
    return path


def first_turn() -> ModelRequest:
    return ModelRequest(role="G", parts=[TextPart(text="Question: which?\n\nModel A:\nx\n\nModel B:\ny")],
                        tools=TOOLS, purpose="eval")


def tool_calls_body(calls: list[dict[str, object]]) -> dict[str, object]:
    usage = {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60}
    body = chat_body(None, finish="tool_calls", usage=usage)
    body["choices"][0]["message"]["tool_calls"] = calls  # type: ignore[index]
    return body


def test_openai_tool_calls_are_parsed_sent_back_as_turns_and_replayed_from_the_cache(
        settings: Settings, api: FakeAPI, frame: Path) -> None:
    api.queue(CHAT, Canned(body=tool_calls_body([
        {"id": "call_1", "type": "function", "function": {"name": "search", "arguments": json.dumps(ARGS)}},
        {"id": "call_2", "type": "function", "function": {"name": "fetch_frames", "arguments": "{not json"}}])))
    runner = runner_for(settings)
    first = runner.call(first_turn(), model="openai/gpt-5.4-mini")
    body = api.requests(CHAT)[0].json
    assert [t["function"]["name"] for t in body["tools"]] == ["search", "fetch_frames", "read_transcript"]
    assert body["tool_choice"] == "auto" and body["tools"][0]["type"] == "function"
    assert [c.name for c in first.tool_calls] == ["search", "fetch_frames"]
    assert first.tool_calls[0].arguments == ARGS and first.tool_calls[0].id == "call_1"
    assert first.tool_calls[1].arguments == {"_unparsed": "{not json"}  # untrusted: kept, answered with an error

    api.content = "Model A matches the frames. [[A]]"
    second = first_turn().model_copy(update={"parts": [
        *first_turn().parts, ToolCallsPart(text="", calls=first.tool_calls),
        ToolResultPart(call_id="call_1", name="search", content="Video 1 0-30 s (similarity 0.5): stag"),
        ToolResultPart(call_id="call_2", name="fetch_frames", content="error: the arguments were not a JSON object"),
        ImagePart(path=str(frame), timestamp=12.0), TextPart(text="Answer now.")], "tool_choice": "none"})
    answer = runner.call(second, model="openai/gpt-5.4-mini")
    assert answer.text.endswith("[[A]]") and not answer.tool_calls
    messages = api.requests(CHAT)[1].json["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "tool", "user"]
    assert messages[1]["tool_calls"][0]["function"] == {"name": "search", "arguments": json.dumps(ARGS, sort_keys=True)}
    assert messages[2] == {"role": "tool", "tool_call_id": "call_1", "content": "Video 1 0-30 s (similarity 0.5): stag"}
    kinds = [c["type"] for c in messages[4]["content"]]
    assert kinds == ["text", "image_url", "text"]  # the fetched frame (with its time), then the closing line
    assert api.requests(CHAT)[1].json["tool_choice"] == "none"

    # the whole conversation again: every turn from the cache, nothing sent, nothing paid
    again = runner_for(settings)
    assert again.call(first_turn(), model="openai/gpt-5.4-mini").tool_calls == first.tool_calls
    assert again.call(second, model="openai/gpt-5.4-mini").text == answer.text
    assert len(api.requests(CHAT)) == 2
    rows = ledger(runner.engine)
    assert [r.status for r in rows] == ["ok", "ok", "cached", "cached"] and rows[2].usd == 0 == rows[3].usd


def test_gemini_function_calls_carry_their_thought_signature_back(settings: Settings, api: FakeAPI) -> None:
    body = gemini_body("", usage={"promptTokenCount": 40, "candidatesTokenCount": 5, "totalTokenCount": 45})
    body["candidates"][0]["content"]["parts"] = [  # type: ignore[index]
        {"functionCall": {"name": "search", "args": ARGS}, "thoughtSignature": "c2lnbmVk"}]
    api.queue(GENERATE, Canned(body=body))
    runner = runner_for(settings)
    first = runner.call(first_turn(), model="gemini/gemini-test")
    sent = api.requests(GENERATE)[0].json
    declared = sent["tools"][0]["functionDeclarations"]
    assert [d["name"] for d in declared] == ["search", "fetch_frames", "read_transcript"]
    # the SDK writes this one field in snake case (proto JSON takes both spellings)
    schema = declared[0].get("parametersJsonSchema") or declared[0]["parameters_json_schema"]
    assert schema["required"] == ["query"]
    assert sent["toolConfig"]["functionCallingConfig"]["mode"] == "AUTO"
    (call,) = first.tool_calls
    assert call.name == "search" and call.arguments == ARGS and call.signature == "c2lnbmVk"

    api.content = "[[B]]"
    second = first_turn().model_copy(update={"parts": [
        *first_turn().parts, ToolCallsPart(calls=first.tool_calls),
        ToolResultPart(call_id=call.id, name="search", content="no chunk matches")]})
    assert runner.call(second, model="gemini/gemini-test").text == "[[B]]"
    contents = api.requests(GENERATE)[1].json["contents"]
    assert [c["role"] for c in contents] == ["user", "model", "user"]
    assert contents[1]["parts"][0]["functionCall"]["name"] == "search"
    assert contents[1]["parts"][0]["thoughtSignature"] == "c2lnbmVk"
    assert contents[2]["parts"][0]["functionResponse"] == {
        "id": call.id, "name": "search", "response": {"result": "no chunk matches"}}


def test_requests_without_tools_or_new_settings_keep_their_cache_keys() -> None:
    plain = ModelRequest(role="G", parts=[TextPart(text="x")], settings=GenerationSettings(thinking="low"))
    dumped = plain.model_dump()
    for key in ("tools", "tool_choice"):
        dumped.pop(key)
    for key in ("thinking_budget", "max_pixels"):
        dumped["settings"].pop(key)
    assert stable_dump(plain) == dumped  # what every hash was made of before issue 20
    with_tools = plain.model_copy(update={"tools": TOOLS})
    assert request_hash("sim/judge", with_tools) != request_hash("sim/judge", plain)
    budgeted = plain.model_copy(update={"settings": GenerationSettings(thinking="low", thinking_budget=512)})
    assert request_hash("sim/judge", budgeted) != request_hash("sim/judge", plain)
    forced = with_tools.model_copy(update={"tool_choice": "none"})
    assert request_hash("sim/judge", forced) != request_hash("sim/judge", with_tools)


def test_a_tool_call_round_trips_through_the_cache_format() -> None:
    call = ToolCall(id="c", name="fetch_frames", arguments={"video": 1, "start": 0, "end": 30}, signature=None)
    part = ToolCallsPart(text="looking", calls=[call])
    again = ModelRequest.model_validate(ModelRequest(role="G", parts=[part]).model_dump(mode="json"))
    assert again.parts[0] == part
