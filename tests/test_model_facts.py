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
