"""`playlisteval models check` and `playlisteval cost estimate`: offline, keys named never shown."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from playlisteval.cli import main
from playlisteval.config import load_settings, write_project
from playlisteval.models.estimate import project_cost
from playlisteval.store import transaction
from playlisteval.store.tables import ModelCall
from tests.helpers import seeded_store
from tests.provider_fakes import MODELS, FakeAPI, fake_api

GEMINI_KEY = "fake-gemini-cli-SECRET-1"
OPENAI_KEY = "sk-cli-SECRET-2"


@pytest.fixture
def proj(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENAI_API_KEY", "DASHSCOPE_API_KEY", "VLLM_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    write_project(tmp_path)
    return tmp_path


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    """The CLI configures logging onto CliRunner's stderr, closed after each test: put it back."""
    import structlog

    saved = structlog.get_config()
    yield
    structlog.configure(**saved)


@pytest.fixture
def api() -> Iterator[FakeAPI]:
    with fake_api() as server:
        yield server


def run(proj: Path, *args: str) -> Result:
    return CliRunner().invoke(main, ["--project", str(proj), *args])


def test_the_offline_default_checks_clean_with_or_without_network(proj: Path) -> None:
    for args in (["models", "check"], ["models", "check", "--no-network"]):
        result = run(proj, *args)
        assert result.exit_code == 0, result.output
        assert "every role is usable" in result.output and "sim/generator" in result.output


def test_missing_keys_are_named_and_fail_the_check(proj: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLAYLISTEVAL_MODELS__B", "gemini/gemini-3-flash-preview")
    monkeypatch.setenv("PLAYLISTEVAL_MODELS__C3", "qwen/qwen3.7-plus")
    result = run(proj, "models", "check", "--role", "B", "--role", "C3")
    assert result.exit_code == 1
    assert "GEMINI_API_KEY" in result.output and "DASHSCOPE_API_KEY" in result.output
    assert "2 role(s) not usable" in result.output
    assert run(proj, "models", "check", "--role", "nope").exit_code == 1


def test_endpoints_are_reached_with_the_key_which_is_never_printed(proj: Path, api: FakeAPI,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", GEMINI_KEY)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("PLAYLISTEVAL_MODELS__B", "gemini/gemini-test")
    monkeypatch.setenv("PLAYLISTEVAL_MODELS__C2_transcript_verify", "openai/m")
    monkeypatch.setenv("PLAYLISTEVAL_PROVIDERS__GEMINI_BASE_URL", api.url)
    monkeypatch.setenv("PLAYLISTEVAL_PROVIDERS__OPENAI_BASE_URL", f"{api.url}/v1")
    result = run(proj, "models", "check", "--role", "B", "--role", "C2_transcript_verify", "--json")
    assert result.exit_code == 0, result.output
    rows = {r["role"]: r for r in map(json.loads, result.output.splitlines())}
    assert rows["B"]["key"] == "GEMINI_API_KEY set" and rows["B"]["reachable"] is True
    assert rows["B"]["endpoint"].endswith("gemini-test listed")
    assert rows["C2_transcript_verify"]["endpoint"].endswith("m listed")
    assert GEMINI_KEY not in result.output and OPENAI_KEY not in result.output
    table = run(proj, "models", "check", "--role", "B")
    assert table.exit_code == 0 and GEMINI_KEY not in table.output
    seen = api.requests(MODELS)
    assert {s.path.split("?")[0] for s in seen} == {"/v1beta/models", "/v1/models"}
    assert any(s.headers.get("x-goog-api-key") == GEMINI_KEY for s in seen)
    assert any(s.headers.get("authorization") == f"Bearer {OPENAI_KEY}" for s in seen)


def test_an_unreachable_endpoint_fails_the_check(proj: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLAYLISTEVAL_MODELS__F_first", "vllm/some-model")
    monkeypatch.setenv("PLAYLISTEVAL_PROVIDERS__VLLM_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("PLAYLISTEVAL_PROVIDERS__CHECK_TIMEOUT_S", "2")
    result = run(proj, "models", "check", "--role", "F_first")
    assert result.exit_code == 1 and "connection error" in result.output
    assert run(proj, "models", "check", "--role", "F_first", "--no-network").exit_code == 0


def test_a_missing_sdk_names_its_extra(proj: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import playlisteval.commands.models as commands

    monkeypatch.setattr(commands, "_sdk_ok", lambda module: module != "openai")
    monkeypatch.setenv("PLAYLISTEVAL_MODELS__D3_second", "openai/gpt-5.4")
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    result = run(proj, "models", "check", "--role", "D3_second")
    assert result.exit_code == 1 and "playlisteval[api]" in result.output


def test_cost_estimate_projects_from_prices_and_the_store_offline(proj: Path) -> None:
    result = run(proj, "cost", "estimate")
    assert result.exit_code == 1 and "no seeds" in result.output
    result = run(proj, "cost", "estimate", "--seeds", "400")
    assert result.exit_code == 0, result.output
    settings = load_settings(proj, environ={})
    expected = project_cost(settings, 400)
    assert f"{expected.total_usd:.2f} USD" in result.output and expected.total_usd > 0
    b = next(r for r in expected.roles if r.role == "B")
    e = settings.estimate
    clip = int(1200 * settings.build.gen_fps * e.tokens_per_frame + 1200 * e.audio_tokens_per_s)
    assert b.usage.input_tokens == e.prompt_tokens + 2 * clip + 2 * int(20 * e.transcript_tokens_per_min)
    assert b.calls_per_seed == e.attempts_phase1


def test_cost_estimate_reads_seeds_segments_and_measured_tokens(proj: Path) -> None:
    settings = load_settings(proj, environ={})
    engine = seeded_store(settings, 3)
    with transaction(engine) as s:
        s.add(ModelCall(request_hash="h", role="B", provider="sim", model="generator", status="ok",
                        input_tokens=5000, output_tokens=1000, thinking_tokens=0))
    result = run(proj, "cost", "estimate")
    assert result.exit_code == 0, result.output
    assert "3 seed(s)" in result.output and "2.0 min" in result.output  # the store's 120-s segments
    assert "B *" in result.output and "measured from the ledger" in result.output
    projected = project_cost(settings, 3, 120.0, engine)
    b = next(r for r in projected.roles if r.role == "B")
    assert b.measured and b.usage.input_tokens == 5000
    assert f"{projected.total_usd:.2f} USD" in result.output
