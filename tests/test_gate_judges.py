"""The difficulty gate keyed by its judges (issue 25, deliverable 4): a change of a weak judge — its model,
its generation settings, the G4 prompt — makes the gate judge again with the judge configured now; the
other judge's verdicts, still its own, are kept; an unchanged gate asks nothing.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine

from playlisteval.actors.build_run import build
from playlisteval.config import RoleGeneration, Settings
from playlisteval.prompts.render import template_source
from playlisteval.select import gate_key
from playlisteval.select.difficulty import pending_pairs, run_gate
from playlisteval.select.sampling import select_benchmark
from playlisteval.store import forget_engines, open_store
from tests.eval_helpers import indexed_seeded_store
from tests.helpers import QUIET_SIM, project

OVERRIDES: dict[str, object] = dict(
    index__embedder="hash", eval__materialize_frames=False, eval__frames=8, eval__modality="transcript",
    eval__workers=1, select__difficulty_evidence="oracle", select__questions_per_domain=0,
    select__pairs_per_domain=10, **QUIET_SIM)


@pytest.fixture(scope="module")
def gated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three sim-built questions, selected (so gated) by the configured weak judges."""
    root = tmp_path_factory.mktemp("gated")
    settings = project(root, **OVERRIDES)
    indexed_seeded_store(settings, 3)
    build(settings)
    assert select_benchmark(settings).created
    forget_engines()
    return root


def fresh(gated: Path, tmp_path: Path, **extra: object) -> Settings:
    shutil.copytree(gated, tmp_path / "p")
    return project(tmp_path / "p", **OVERRIDES, **extra)


def calls(engine: Engine, role: str) -> list[str]:
    with engine.connect() as conn:
        return [str(m) for (m,) in conn.execute(text("SELECT model FROM model_call WHERE role = :r ORDER BY id"),
                                                {"r": role})]


def records(engine: Engine) -> list[dict[str, object]]:
    with engine.connect() as conn:
        return [json.loads(r) for (r,) in conn.execute(text("SELECT difficulty FROM pair ORDER BY id"))]


def items(engine: Engine) -> list[int]:
    with engine.connect() as conn:
        return [int(i) for (i,) in conn.execute(text("SELECT DISTINCT item_id FROM pair"))]


def test_an_unchanged_gate_asks_nothing(gated: Path, tmp_path: Path) -> None:
    settings = fresh(gated, tmp_path)
    engine = open_store(settings)
    before = calls(engine, "F_first") + calls(engine, "F_second")
    assert before and not pending_pairs(engine, items(engine), settings)
    report = run_gate(settings, engine, items(engine))
    assert report.judged == report.rejudged == 0 and calls(engine, "F_first") + calls(engine, "F_second") == before
    assert all(r["F_first"][gate_key.KEY] == gate_key.judge_key(settings, "F_first") for r in records(engine))


def test_another_weak_model_judges_again_and_the_other_judge_is_kept(gated: Path, tmp_path: Path) -> None:
    settings = fresh(gated, tmp_path, models__F_first="sim/weak-judge-other")
    engine = open_store(settings)
    n_pairs = len(records(engine))
    second_before = calls(engine, "F_second")
    report = run_gate(settings, engine, items(engine))
    assert report.rejudged == n_pairs and report.judged == n_pairs and report.undecided == 0
    assert report.changed and report.changed[0].startswith("F_first (was sim/weak-judge")
    assert calls(engine, "F_first").count("weak-judge-other") == n_pairs  # every pair asked anew
    assert calls(engine, "F_second") == second_before  # the unchanged judge's verdicts are kept
    assert all(r["F_first"]["model"] == "sim/weak-judge-other" for r in records(engine))
    kept = [bool(r["F_first"]["correct"] and r["F_second"]["correct"]) for r in records(engine)]
    with engine.connect() as conn:
        stored = [not bool(k) for (k,) in conn.execute(text("SELECT kept FROM pair ORDER BY id"))]
    assert stored == kept  # kept recomputed from the new verdicts: too easy iff both are right
    assert run_gate(settings, engine, items(engine)).judged == 0  # and now current: nothing more


def test_a_changed_prompt_or_generation_setting_judges_again(gated: Path, tmp_path: Path) -> None:
    settings = fresh(gated, tmp_path)
    engine = open_store(settings)
    n_pairs = len(records(engine))
    prompts = settings.root / "prompts"
    prompts.mkdir()
    (prompts / "g4_judge.j2").write_text(template_source("g4_judge.j2") + "\nBe brief.\n")
    changed = settings.model_copy(deep=True)
    changed.root = settings.root
    changed.build.prompts_dir = "prompts"
    assert gate_key.judge_key(changed, "F_first") != gate_key.judge_key(settings, "F_first")
    report = run_gate(changed, engine, items(engine))
    assert report.rejudged == n_pairs  # both judges see the new prompt
    assert len(calls(engine, "F_first")) == 2 * n_pairs and len(calls(engine, "F_second")) == 2 * n_pairs

    hotter = changed.model_copy(deep=True)
    hotter.root = settings.root
    hotter.generation["F_second"] = RoleGeneration(temperature=0.7)
    report = run_gate(hotter, engine, items(engine))
    assert report.rejudged == n_pairs and len(calls(engine, "F_second")) == 3 * n_pairs
    assert len(calls(engine, "F_first")) == 2 * n_pairs  # F_first's settings did not change


def test_a_verdict_recorded_before_keys_is_matched_on_its_model() -> None:
    old = {"F_first": {"model": "sim/weak-judge", "outcome": "verdict"}}
    assert gate_key.current(old, "F_first", "any-key", "sim/weak-judge")
    assert not gate_key.current(old, "F_first", "any-key", "sim/other")
    assert not gate_key.current({"F_first": {"model": "sim/weak-judge", gate_key.KEY: "k1"}}, "F_first", "k2",
                                "sim/weak-judge")
    assert not gate_key.current(None, "F_first", "k", "m")
