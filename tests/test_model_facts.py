"""Model facts as data (issue 42): vendor files read by cost, the frame rule and `models`; a project's own
file adds or corrects a model, its [prices] and image_limits still win; a bad file names itself."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from playlisteval.cli import main
from playlisteval.config import Price
from playlisteval.config.model_facts import lookup
from playlisteval.errors import ConfigError
from playlisteval.models.providers.media_parts import image_limit
from tests.helpers import project


def _facts_file(root: Path, provider: str, text: str) -> None:
    (root / "model_facts").mkdir(exist_ok=True)
    (root / "model_facts" / f"{provider}.toml").write_text(text)


def test_packaged_facts_price_and_limit_models_the_project_never_listed(tmp_path: Path) -> None:
    settings = project(tmp_path)
    assert settings.price_for("openai/gpt-5.4-mini").output == 4.50
    assert settings.has_price("qwen/qwen3.7-plus")
    assert not settings.has_price("openai/some-new-model")  # "*" carries a limit, not a price
    assert image_limit(settings, "openai/some-new-model") == 100
    assert image_limit(settings, "gemini/gemini-3-flash-preview") == 3600
    assert image_limit(settings, "sim/judge") is None  # no file says anything: no limit is known


def test_a_project_file_adds_a_model_and_the_users_own_settings_still_win(tmp_path: Path) -> None:
    settings = project(tmp_path)
    _facts_file(tmp_path, "openai", '[models."gpt-9"]\nmax_images = 40\nthinking = "always"\n'
                '[models."gpt-9".price]\ninput = 1.0\noutput = 8.0\n')
    assert settings.has_price("openai/gpt-9") and settings.price_for("openai/gpt-9").output == 8.0
    assert image_limit(settings, "openai/gpt-9") == 40
    assert image_limit(settings, "openai/gpt-5.4") == 100  # the packaged "*" still covers the others
    found = lookup("openai/gpt-9", tmp_path)
    assert found is not None and found.exact and "model_facts/openai.toml" in found.source
    settings.prices["openai/gpt-9"] = Price(input=0.5, output=2.0)
    settings.providers.image_limits["openai/*"] = 7
    assert settings.price_for("openai/gpt-9").output == 2.0 and image_limit(settings, "openai/gpt-9") == 7


@pytest.mark.parametrize("text, named", [
    ('[models."m"]\nmax_images = -3\n', "max_images"),
    ('[models."m"]\nthinking = "sometimes"\n', "thinking"),
    ('[models."m"]\nknowledge_cutoff = "last spring"\n', "knowledge_cutoff"),
    ('[models."m"]\ncolour = "red"\n', "colour"),
    ("[models\n", "not valid TOML"),
])
def test_a_bad_facts_file_is_an_error_naming_the_file_and_field(tmp_path: Path, text: str, named: str) -> None:
    settings = project(tmp_path)
    _facts_file(tmp_path, "qwen", text)
    with pytest.raises(ConfigError) as err:
        settings.price_for("qwen/m")
    assert "model_facts/qwen.toml" in str(err.value) and named in str(err.value)


def test_models_facts_and_check_show_the_facts_with_unknowns_named(tmp_path: Path) -> None:
    project(tmp_path)
    runner = CliRunner()
    listed = runner.invoke(main, ["--project", str(tmp_path), "models", "facts", "gemini", "--json"])
    assert listed.exit_code == 0, listed.output
    data = json.loads(listed.output)
    assert data["gemini/gemini-3-flash-preview"]["context_tokens"] == 1048576
    assert data["gemini/gemini-3-flash-preview"]["price"]["input"] == 0.5
    env = {"PLAYLISTEVAL_MODELS__G": "openai/gpt-5.4", "OPENAI_API_KEY": ""}
    checked = runner.invoke(main, ["--project", str(tmp_path), "models", "check", "--no-network", "--role", "G",
                                   "--json"], env=env)
    row = json.loads(checked.output.splitlines()[0])
    assert row["model"] == "openai/gpt-5.4"
    assert "images/request ≤ 100" in row["facts"] and "window unknown" in row["facts"]
    assert row["price"].startswith("$2.5/1M in")


PLUGIN = '''
from playlisteval.models.request import ProviderReply, Usage


class EchoProvider:
    name = "echo"

    def __init__(self, settings):
        self.settings = settings

    def complete(self, model, request, schema, timeout):
        text = " ".join(getattr(p, "text", "") for p in request.parts)
        return ProviderReply(text='{"answer": "%s said: %s"}' % (model, text), usage=Usage(input_tokens=3))
'''


def test_a_plugin_package_registers_a_provider_through_the_entry_point_group(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A real distribution on sys.path (dist-info with entry_points.txt) adds provider "echo" beside the
    built-ins, which come through the same group; its model gets facts and a price from a project file."""
    from playlisteval.models import registry
    from playlisteval.models.request import ModelRequest, TextPart
    from playlisteval.models.runner import Runner
    from playlisteval.store import open_store

    site = tmp_path / "site"
    (site / "echo_provider_plugin-1.0.dist-info").mkdir(parents=True)
    (site / "echo_provider_plugin-1.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: echo-provider-plugin\nVersion: 1.0\n")
    (site / "echo_provider_plugin-1.0.dist-info" / "entry_points.txt").write_text(
        "[playlisteval.providers]\necho = echo_plugin_module:EchoProvider\n")
    (site / "echo_plugin_module.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(site))
    registry.known.cache_clear()
    try:
        assert {"echo", "gemini", "sim", "vllm"} <= set(registry.providers())
        assert registry.extra_for("echo") is None
        root = tmp_path / "proj"
        root.mkdir()
        settings = project(root)
        _facts_file(root, "echo", '[models."*"]\nmax_images = 2\n[models."*".price]\ninput = 1.0\n')
        settings.models["C2_transcript_answer"] = "echo/parrot"
        runner = Runner(settings, open_store(settings))
        reply = runner.call(ModelRequest(role="C2_transcript_answer", parts=[TextPart(text="hello")],
                                         response_schema="TextAnswer"))
        assert "parrot said: hello" in reply.text
        assert image_limit(settings, "echo/parrot") == 2 and settings.price_for("echo/parrot").input == 1.0
    finally:
        registry.known.cache_clear()
