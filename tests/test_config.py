from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from playlisteval.config import DEFAULT_MODELS, env_overrides, find_project, load_settings, write_project
from playlisteval.errors import ConfigError, ProjectNotFound


def test_init_writes_a_commented_file_whose_defaults_are_offline(tmp_path: Path) -> None:
    path = write_project(tmp_path / "proj")
    text = path.read_text()
    data = tomllib.loads(text)
    assert all(spec.startswith("sim/") for spec in data["models"].values())
    assert set(data["models"]) == set(DEFAULT_MODELS)
    # the paper's models are shown, commented, for each role
    assert 'paper: "gemini/gemini-3-flash-preview"' in text and 'paper: "openai/gpt-5.4-mini"' in text
    settings = load_settings(tmp_path / "proj", environ={})
    assert settings.build.attempts_per_phase == 6
    assert settings.index.seed_similarity_min == 0.40 and settings.index.chunk_s == 30


def test_init_refuses_to_overwrite(tmp_path: Path) -> None:
    write_project(tmp_path)
    with pytest.raises(ConfigError, match="already exists"):
        write_project(tmp_path)


def test_env_overrides_and_types(tmp_path: Path) -> None:
    write_project(tmp_path)
    env = {"PLAYLISTEVAL_BROKER__URL": "redis://localhost:6379/3", "PLAYLISTEVAL_BUILD__BUDGET_USD": "12.5",
           "PLAYLISTEVAL_MODELS__B": "gemini/gemini-3-flash-preview", "OTHER": "x"}
    s = load_settings(tmp_path, environ=env)
    assert s.broker.url == "redis://localhost:6379/3"
    assert s.build.budget_usd == 12.5
    assert s.models["B"] == "gemini/gemini-3-flash-preview"
    assert env_overrides({"PLAYLISTEVAL_INDEX__SEEDS_SAME_PLAYLIST": "false"}) == {
        "index": {"seeds_same_playlist": False}}


def test_unknown_keys_are_errors(tmp_path: Path) -> None:
    write_project(tmp_path)
    with pytest.raises(ConfigError, match="budget_dollars"):
        load_settings(tmp_path, environ={"PLAYLISTEVAL_BUILD__BUDGET_DOLLARS": "3"})


def test_project_is_found_from_a_subdirectory(tmp_path: Path) -> None:
    write_project(tmp_path)
    (tmp_path / "a" / "b").mkdir(parents=True)
    assert find_project(tmp_path / "a" / "b") == tmp_path.resolve()
    with pytest.raises(ProjectNotFound, match="playlisteval init"):
        find_project(tmp_path.parent / "nowhere-else")


def test_relative_sqlite_path_resolves_against_project(tmp_path: Path) -> None:
    write_project(tmp_path)
    s = load_settings(tmp_path, environ={})
    assert s.store_url == f"sqlite:///{(tmp_path / 'playlisteval.db').resolve()}"
    assert s.price_for("sim/generator").output == 3.0
    assert s.price_for("openai/unknown").output == 0.0


def test_a_role_name_that_is_not_a_role_is_an_error_naming_the_right_one(tmp_path: Path) -> None:
    """Issue 41: PLAYLISTEVAL_MODELS__F_FIRST used to become a new role while F_first kept its model."""
    write_project(tmp_path)
    with pytest.raises(ConfigError, match="no role 'F_FIRST'.*did you mean 'F_first'"):
        load_settings(tmp_path, environ={"PLAYLISTEVAL_MODELS__F_FIRST": "x"})
    with pytest.raises(ConfigError, match="no role 'D3_frist'.*did you mean 'D3_first'"):
        load_settings(tmp_path, environ={"PLAYLISTEVAL_MODELS__D3_frist": "sim/judge"})
    assert load_settings(tmp_path, environ={"PLAYLISTEVAL_MODELS__F_first": "sim/judge"}).models["F_first"]
