"""SPEC C4: `build` refuses to start when a verifier has the model family of what it checks."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import text

from playlisteval.actors.build_run import build
from playlisteval.build.gates.preflight import CHECKS, family, family_clashes
from playlisteval.cli import main
from playlisteval.config import DEFAULT_MODELS
from playlisteval.errors import ConfigError
from tests.helpers import project, seeded_store


def test_families_by_provider_organisation_and_sim_name() -> None:
    assert family("gemini/gemini-3-flash-preview") == family("gemini/gemini-3.1-pro-preview") == "gemini"
    assert family("openai/gpt-5.4") == family("openai/gpt-5.4-mini") == "openai"
    assert family("qwen/qwen3.7-plus") == family("vllm/Qwen/Qwen3-VL-30B-A3B-Instruct") == "qwen"
    assert family("vllm/OpenGVLab/InternVL3_5-8B") == "opengvlab"
    assert family("hf/internvl3_5-8b") == "internvl"
    assert family("sim/verifier") != family("sim/verifier-b") != family("sim/answerer")
    families = {"openai/kimi-*": "moonshot", "vllm/*InternVL*": "internvl"}
    assert family("openai/kimi-k2", families) == "moonshot"
    assert family("vllm/OpenGVLab/InternVL3_5-8B", families) == "internvl"
    assert family("openai/gpt-5.4", {"openai/gpt-5.4": "GPT"}) == "gpt"


def test_the_default_and_the_papers_models_pass(tmp_path: Path) -> None:
    assert family_clashes(project(tmp_path)) == []
    paper = {
        "B": "gemini/gemini-3-flash-preview", "C2_transcript_answer": "gemini/gemini-3-flash-preview",
        "C2_transcript_verify": "openai/gpt-5.4-mini", "C2_parametric_answer_a": "gemini/gemini-3-flash-preview",
        "C2_parametric_verify_a": "openai/gpt-5.4", "C2_parametric_answer_b": "openai/gpt-5.4-mini",
        "C2_parametric_verify_b": "gemini/gemini-3.1-pro-preview", "C3": "qwen/qwen3.7-plus",
        "D1": "gemini/gemini-3-flash-preview", "D3_first": "gemini/gemini-3.1-pro-preview",
        "D3_second": "openai/gpt-5.4", "D4": "qwen/qwen3.7-plus",
    }
    assert family_clashes(project(tmp_path, **{f"models__{r}": m for r, m in paper.items()})) == []
    assert {v for v, _ in CHECKS} <= set(DEFAULT_MODELS) and {c for _, c in CHECKS} <= set(DEFAULT_MODELS)


@pytest.mark.parametrize(("role", "model"), [
    ("C2_transcript_verify", "sim/answerer"),  # the answerer's own model verifies its answer
    ("C2_parametric_verify_b", "sim/answerer-b"),
    ("C3", "sim/generator"),  # the generator grounds its own question
    ("D4", "sim/generator"),
])
def test_build_refuses_a_verifier_of_the_checked_family(tmp_path: Path, role: str, model: str) -> None:
    settings = project(tmp_path, **{f"models__{role}": model})
    engine = seeded_store(settings, 1)
    with pytest.raises(ConfigError, match=rf"SPEC C4.*{role}"):
        build(settings)
    with engine.connect() as conn:  # refused before anything was created or called
        assert conn.execute(text("SELECT COUNT(*) FROM item")).scalar() == 0
        assert conn.execute(text("SELECT COUNT(*) FROM model_call")).scalar() == 0


def test_a_family_map_can_separate_models_of_one_provider(tmp_path: Path) -> None:
    clash = {"models__C3": "openai/gpt-5.4", "models__B": "openai/gpt-5.4-mini"}
    assert family_clashes(project(tmp_path, **clash))
    (tmp_path / "playlisteval.toml").write_text(
        (tmp_path / "playlisteval.toml").read_text().replace(
            "model_families = {}", 'model_families = { "openai/gpt-5.4" = "big-gpt" }'))
    assert family_clashes(project(tmp_path, **clash)) == []


def test_the_cli_says_why_it_refuses(tmp_path: Path) -> None:
    project(tmp_path)
    result = CliRunner().invoke(main, ["--project", str(tmp_path), "build"],
                                env={"PLAYLISTEVAL_MODELS__D4": '"sim/generator"'})
    assert result.exit_code == 1
    assert "SPEC C4" in result.output and "D4" in result.output
