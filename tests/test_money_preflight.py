"""Issue 9, items 2 (preflight), 4 (money is never free by accident), 5 (the sim stays in its world) and
6 (exit codes), through the command line. "No key" cases use the real provider classes with the key
removed from the environment; a configured judge runs against the local wire fake."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import text
from sqlalchemy.engine import Engine

from playlisteval.actors.build_run import build
from playlisteval.cli import main
from playlisteval.commands import exitcodes
from playlisteval.config import Settings, load_settings, template_text
from playlisteval.errors import ConfigError
from playlisteval.models.preflight import problems
from playlisteval.models.registry import providers
from playlisteval.select.sampling import select_benchmark
from playlisteval.store import open_store
from tests.eval_helpers import indexed_seeded_store
from tests.helpers import QUIET_SIM, env_for, project, seeded_store
from tests.provider_fakes import CHAT, fake_api

SMALL: dict[str, object] = dict(index__embedder="hash", eval__materialize_frames=False, eval__frames=16,
                                select__difficulty_evidence="oracle", select__questions_per_domain=0,
                                select__pairs_per_domain=90, runner__max_attempts=1, **QUIET_SIM)
KEYS = ("GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENAI_API_KEY", "DASHSCOPE_API_KEY")


def cli(root: Path, *args: str, **overrides: object) -> Any:
    return CliRunner().invoke(main, ["--project", str(root), *args], env=env_for(**{**SMALL, **overrides}))


def count(engine: Engine, sql: str) -> int:
    with engine.connect() as conn:
        return int(conn.execute(text(sql)).scalar_one())


@pytest.fixture(autouse=True)
def _no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in KEYS:
        monkeypatch.delenv(key, raising=False)


@pytest.fixture(scope="module")
def selected(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """A sim-built, selected benchmark over a small synthetic store."""
    settings = project(tmp_path_factory.mktemp("money"), **SMALL)
    indexed_seeded_store(settings, 4)
    build(settings)
    select_benchmark(settings)
    return settings


# -- item 2: preflight -------------------------------------------------------------------------------
def test_a_judge_without_its_key_is_refused_before_any_run_and_the_leaderboard_is_unchanged(
        selected: Settings) -> None:
    engine = open_store(selected)
    runs, calls = count(engine, "SELECT count(*) FROM judge_run"), count(engine, "SELECT count(*) FROM model_call")
    with fake_api() as api:
        result = cli(selected.root, "eval", "judge", "--judge", "gemini/gemini-3-flash-preview",
                     "--modality", "transcript", providers__gemini_base_url=api.url)
        assert api.seen == []  # nothing reached the wire
    assert result.exit_code == exitcodes.ERROR, result.output
    assert "role G → gemini/gemini-3-flash-preview: GEMINI_API_KEY is not set" in result.output
    assert count(engine, "SELECT count(*) FROM judge_run") == runs
    assert count(engine, "SELECT count(*) FROM model_call") == calls


def test_a_judge_with_its_key_and_price_passes_the_preflight_and_runs_on_the_wire(
        selected: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-0000")
    with fake_api() as api:
        api.content = "Model A is better. [[A]]"
        result = cli(selected.root, "eval", "judge", "--judge", "openai/gpt-5.4-mini", "--modality", "transcript",
                     "--json", providers__openai_base_url=f"{api.url}/v1")
        asked = len(api.requests(CHAT))
    assert result.exit_code == 0, result.output
    assert asked > 0


def test_build_lists_every_problem_in_one_message_and_creates_nothing(tmp_path: Path) -> None:
    engine = seeded_store(project(tmp_path), 2)
    result = cli(tmp_path, "build", models__B="gemini/gemini-3-flash-preview",
                 models__D1="gemini/gemini-3-flash-preview", models__C3="qwen/qwen-unpriced-model",
                 models__D4="openai/gpt-5.4")
    assert result.exit_code == exitcodes.ERROR, result.output
    flat = " ".join(result.output.split())
    for line in ("role B → gemini/gemini-3-flash-preview: GEMINI_API_KEY is not set",
                 "role D1 → gemini/gemini-3-flash-preview: GEMINI_API_KEY is not set",
                 "role C3 → qwen/qwen-unpriced-model: DASHSCOPE_API_KEY is not set",
                 "role C3 → qwen/qwen-unpriced-model: no price in [prices]",
                 "role D4 → openai/gpt-5.4: OPENAI_API_KEY is not set"):
        assert line in flat, line
    assert "5 problem(s)" in flat
    assert count(engine, "SELECT count(*) FROM item") == 0
    assert count(engine, "SELECT count(*) FROM model_call") == 0


# -- item 4: money ----------------------------------------------------------------------------------
def test_a_model_with_no_price_is_refused_even_with_its_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DASHSCOPE_API_KEY", "sk-test-not-a-real-key-1111")
    engine = seeded_store(project(tmp_path), 1)
    # nothing listens on the discard port: on a tool that let it through, the call fails fast
    result = cli(tmp_path, "build", models__C3="qwen/qwen-unpriced-model",
                 providers__qwen_base_url="http://127.0.0.1:9/v1")
    assert result.exit_code == exitcodes.ERROR
    assert "role C3 → qwen/qwen-unpriced-model: no price in [prices]" in " ".join(result.output.split())
    assert count(engine, "SELECT count(*) FROM model_call") == 0


def test_an_explicit_zero_price_and_local_gpu_pricing_are_accepted(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DASHSCOPE_API_KEY", "sk-test-not-a-real-key-1111")
    settings = project(tmp_path)
    assert [p.split(": ", 1)[0] for p in problems(settings, [("C3", "qwen/qwen-free")])] == ["role C3 → qwen/qwen-free"]
    settings.prices["qwen/qwen-free"] = settings.prices["sim/*"].model_copy(update={"input": 0, "output": 0})
    assert problems(settings, [("C3", "qwen/qwen-free")]) == []
    # vLLM: charged by GPU time ([prices."vllm/*"] gpu_hour), no key needed
    assert problems(settings, [("F_first", "vllm/Qwen/Qwen3-VL-30B-A3B-Instruct")]) == []
    del settings.prices["vllm/*"]
    assert "no price" in problems(settings, [("F_first", "vllm/Qwen/Qwen3-VL-30B-A3B-Instruct")])[0]


def test_every_model_the_template_names_has_a_price_in_it_or_in_its_facts_file(tmp_path: Path) -> None:
    text_ = template_text()
    named = set(re.findall(rf'"((?:{"|".join(providers())})/[^"*]+)"', text_))
    assert "qwen/qwen3.7-plus" in named and "vllm/OpenGVLab/InternVL3_5-8B" in named
    assert "gemini/gemini-3-flash-preview" not in tomllib.loads(text_)["prices"]  # a vendor fact (issue 42)
    settings = project(tmp_path)
    assert [m for m in named if not m.startswith("sim/") and not settings.has_price(m)] == []
    assert settings.price_for("gemini/gemini-3-flash-preview").input == 0.50  # from model_facts/gemini.toml


def test_negative_budgets_are_refused(tmp_path: Path) -> None:
    seeded_store(project(tmp_path), 1)
    for args in (["build", "--budget", "-1"], ["resume", "--budget", "-1"], ["select", "--budget", "-1"],
                 ["eval", "judge", "--budget", "-1"]):
        result = cli(tmp_path, *args)
        assert result.exit_code == exitcodes.USAGE, args
        assert "--budget" in result.output and "-1" in result.output, args
    result = cli(tmp_path, "status", build__budget_usd=-5)
    assert result.exit_code == exitcodes.ERROR and "budget_usd" in result.output
    with pytest.raises(ConfigError, match="budget_usd"):
        load_settings(tmp_path, environ={"PLAYLISTEVAL_EVAL__BUDGET_USD": "-5"})


def test_select_has_its_own_budget_and_reserves_before_it_spends(tmp_path: Path) -> None:
    settings = project(tmp_path, **SMALL)
    engine = indexed_seeded_store(settings, 2)
    build(settings)
    # a tiny build budget once limited the difficulty gate too; it is the build's alone now
    assert cli(tmp_path, "resume", "--budget", "0.0001").exit_code == 0
    refused = cli(tmp_path, "select", "--budget", "0.0001")
    assert refused.exit_code in (exitcodes.ERROR, exitcodes.PAUSED) and "budget" in refused.output
    # reserved, then refused: no weak-judge call was paid for
    assert count(engine, "SELECT count(*) FROM model_call WHERE purpose = 'select' AND status = 'ok'") == 0
    done = cli(tmp_path, "select", "--json")
    assert done.exit_code == 0, done.output
    assert count(engine, "SELECT count(*) FROM model_call WHERE purpose = 'select' AND status = 'ok'") > 0


def test_eval_has_its_own_budget(selected: Settings) -> None:
    engine = open_store(selected)
    before = count(engine, "SELECT count(*) FROM model_call WHERE purpose = 'eval' AND status = 'ok'")
    refused = cli(selected.root, "eval", "judge", "--judge", "sim/judge", "--evidence", "oracle", "--budget", "0.0001")
    assert refused.exit_code in (exitcodes.ERROR, exitcodes.PAUSED) and "budget" in refused.output
    assert count(engine, "SELECT count(*) FROM model_call WHERE purpose = 'eval' AND status = 'ok'") == before


# -- item 5: the sim stays in its world ----------------------------------------------------------------
def test_the_sim_refuses_videos_synth_did_not_make(tmp_path: Path) -> None:
    settings = project(tmp_path, **SMALL)
    engine = seeded_store(settings, 2)
    for world in tmp_path.glob("*.world.json"):
        world.unlink()  # now they are ordinary videos
    built = cli(tmp_path, "build")
    assert built.exit_code == exitcodes.ERROR
    flat = " ".join(built.output.split())
    assert "which only knows videos made by `playlisteval synth`" in flat
    assert "B, C2_parametric_answer_a" in flat and "configure real models for" in flat
    assert count(engine, "SELECT count(*) FROM item") == 0
    chosen = cli(tmp_path, "select")
    assert chosen.exit_code == exitcodes.ERROR and "F_first, F_second" in " ".join(chosen.output.split())
    judged = cli(tmp_path, "eval", "judge", "--judge", "sim/judge")
    assert judged.exit_code == exitcodes.ERROR and "G uses the simulated world" in " ".join(judged.output.split())
    assert count(engine, "SELECT count(*) FROM benchmark") == 0
    assert count(engine, "SELECT count(*) FROM judge_run") == 0


def test_what_the_sim_computed_is_labelled_simulated(selected: Settings) -> None:
    status = cli(selected.root, "status")
    assert status.exit_code == 0 and "SIMULATED" in status.output
    assert '"simulated": true' in cli(selected.root, "status", "--json").output
    judged = cli(selected.root, "eval", "judge", "--judge", "shortcut/random")
    assert judged.exit_code == 0 and "simulated" in judged.output  # a shortcut on a sim benchmark too
    board = cli(selected.root, "leaderboard")
    assert board.exit_code == 0 and "simulated" in board.output.lower()


# -- item 6: exit codes -------------------------------------------------------------------------------
def test_a_build_paused_by_its_budget_exits_4_and_a_missing_path_is_an_error(tmp_path: Path) -> None:
    engine = seeded_store(project(tmp_path), 2)
    paused = cli(tmp_path, "build", "--budget", "0.0001")
    assert paused.exit_code == exitcodes.PAUSED, paused.output
    assert "paused" in paused.output
    assert cli(tmp_path, "resume", "--budget", "0.00011").exit_code == exitcodes.PAUSED
    assert cli(tmp_path, "resume", "--budget", "0").exit_code == exitcodes.DONE
    missing = cli(tmp_path, "add", "Education", str(tmp_path / "no-such-folder"))
    assert missing.exit_code == exitcodes.ERROR
    assert "no-such-folder" in missing.output and "nothing was added" in missing.output
    assert count(engine, "SELECT count(*) FROM playlist") == 1  # the store's own, nothing new
