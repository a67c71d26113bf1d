"""Per-role generation settings in `[models]` (issue 20, deliverable 6; paper Table 9): a role given as a
table keeps its model and gets its settings on every call — in the request the provider translates and in
the cache key — while a call's own setting wins, and unset roles hash exactly as before."""

from __future__ import annotations

from pathlib import Path

import pytest

from playlisteval.config import Settings, load_settings, write_project
from playlisteval.errors import ConfigError
from playlisteval.models.request import GenerationSettings, ModelRequest, TextPart
from playlisteval.models.request_keys import request_hash, with_role_generation
from tests.provider_fakes import ledger, runner_for

TABLES = '''
[models]
B = { model = "sim/generator", thinking = "high", temperature = 0.7, thinking_budget = 2048 }
D4 = { max_pixels = 307200 }
G = { model = "sim/judge", temperature = 0.3 }
'''


def project_with(tmp_path: Path, tables: str) -> Settings:
    """The template's project with its [models] lines for B and D4 replaced by ``tables``' entries."""
    path = write_project(tmp_path)
    lines = [ln for ln in path.read_text().splitlines() if not ln.startswith(("B = ", "D4 = ", "G = "))]
    text = "\n".join(lines) + "\n"
    entries = [ln for ln in tables.splitlines() if ln.startswith(("B = ", "D4 = ", "G = "))]
    path.write_text(text.replace("\n[models]\n", "\n[models]\n" + "\n".join(entries) + "\n", 1))
    return load_settings(tmp_path)


def test_a_role_table_keeps_its_model_and_its_settings(tmp_path: Path) -> None:
    s = project_with(tmp_path, TABLES)
    assert s.models["B"] == "sim/generator" and s.models["D4"] == "sim/video-verifier"  # no model: the default
    assert s.generation["B"].thinking == "high" and s.generation["B"].temperature == 0.7
    assert s.generation["B"].thinking_budget == 2048 and s.generation["D4"].max_pixels == 307200
    assert "C3" not in s.generation


def test_a_bad_setting_names_the_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="temperature"):
        project_with(tmp_path, 'B = { model = "sim/generator", temperature = 7 }')


def test_settings_reach_the_request_and_its_hash_and_a_calls_own_setting_wins(tmp_path: Path) -> None:
    s = project_with(tmp_path, TABLES)
    plain = ModelRequest(role="B", parts=[TextPart(text="Write a question.")])
    filled = with_role_generation(s, plain)
    assert filled.settings.thinking == "high" and filled.settings.temperature == 0.7
    assert filled.settings.thinking_budget == 2048
    assert request_hash("sim/generator", filled) != request_hash("sim/generator", plain)
    own = plain.model_copy(update={"settings": GenerationSettings(thinking="low")})
    assert with_role_generation(s, own).settings.thinking == "low"  # the sweep's level, not the role's
    assert with_role_generation(s, own).settings.temperature == 0.7
    other = ModelRequest(role="C3", parts=[TextPart(text="x")])
    assert with_role_generation(s, other) is other  # a role without a table is untouched

    # through the runner: the call is cached under the filled request's key, and the sim saw the setting
    runner = runner_for(s)
    judge = ModelRequest(role="G", parts=[TextPart(text="Question: q\n\nModel A:\na\n\nModel B:\nb")])
    runner.call(judge, model="sim/judge")
    (row,) = ledger(runner.engine)
    assert row.request_hash == request_hash("sim/judge", with_role_generation(s, judge))
    assert row.request_hash != request_hash("sim/judge", judge)


def test_thinking_budget_and_pixel_budget_reach_qwen_and_vllm_and_openai_refuses_a_budget(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from playlisteval.errors import PermanentModelError
    from tests.provider_fakes import CHAT, fake_api

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-gen")
    monkeypatch.setenv("DASHSCOPE_API_KEY", "sk-test-gen-q")
    with fake_api() as api:
        s = project_with(tmp_path, "")
        s.providers.openai_base_url = f"{api.url}/v1"
        s.providers.qwen_base_url = f"{api.url}/compatible-mode/v1"
        s.providers.vllm_base_url = f"{api.url}/vllm/v1"
        runner = runner_for(s)
        ask = ModelRequest(role="C2_transcript_answer", response_schema="TextAnswer", parts=[TextPart(text="q")],
                           settings=GenerationSettings(thinking_budget=1024, media_resolution="low"))
        runner.call(ask, model="vllm/Qwen/Qwen3-VL-8B")
        body = api.requests(CHAT)[-1].json
        assert body["thinking_token_budget"] == 1024
        assert body["mm_processor_kwargs"] == {"max_pixels": s.providers.pixel_budgets["low"]}
        runner.call(ask, model="qwen/qwen3.7-plus")
        body = api.requests(CHAT)[-1].json
        assert body["enable_thinking"] is True and body["thinking_budget"] == 1024
        sent = len(api.requests(CHAT))
        with pytest.raises(PermanentModelError, match="no thinking budget"):
            runner.call(ask, model="openai/gpt-5.4-mini")
        assert len(api.requests(CHAT)) == sent  # refused before anything was sent
