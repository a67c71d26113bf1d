"""build / resume / retry-failed / status through the CLI, failures kept, poison items failed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import text

from playlisteval.actors import App
from playlisteval.actors.build_run import status
from playlisteval.actors.step import run_step
from playlisteval.cli import main
from playlisteval.store import items, transaction
from playlisteval.store.states import State
from playlisteval.store.tables import Item
from tests.helpers import QUIET_SIM, project, seeded_store


def test_every_command_explains_itself() -> None:
    runner = CliRunner()
    top = runner.invoke(main, ["--help"])
    assert top.exit_code == 0 and "Commands:" in top.output
    names = main.list_commands(main.make_context("playlisteval", [], resilient_parsing=True))
    assert {"init", "status", "eval", "show"} <= set(names)  # the lazy commands too (commands/lazy.py)
    for command in names:
        result = runner.invoke(main, [command, "--help"])
        assert result.exit_code == 0, command
        assert len(result.output.split("\n")) > 3, command


def test_commands_outside_a_project_say_how_to_start(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["--project", str(tmp_path), "status"])
    assert result.exit_code == 1
    assert "playlisteval init" in result.output


def test_init_then_build_and_status_json(tmp_path: Path) -> None:
    runner = CliRunner()
    assert runner.invoke(main, ["init", str(tmp_path)]).exit_code == 0
    seeded_store(project(tmp_path), 2)
    built = runner.invoke(main, ["--project", str(tmp_path), "build"])
    assert built.exit_code == 0, built.output
    assert "created 2 item(s)" in built.output
    result = runner.invoke(main, ["--project", str(tmp_path), "status", "--json"])
    data = json.loads(result.output)
    assert sum(data["states"].values()) == 2 and data["calls"] > 0


def test_a_permanent_error_fails_the_item_with_the_error_kept_and_retry_failed_resumes_it(tmp_path: Path) -> None:
    broken = project(tmp_path, models__C3="hf/no-such-local-model", **QUIET_SIM)
    seeded_store(broken, 1)
    runner = CliRunner()
    env = {"PLAYLISTEVAL_MODELS__C3": "hf/no-such-local-model",
           **{f"PLAYLISTEVAL_SIM__{k.split('__')[1].upper()}": "0" for k in QUIET_SIM}}
    # finished, with a failed item: exit status 3 (INCOMPLETE), not 0
    assert runner.invoke(main, ["--project", str(tmp_path), "build"], env=env).exit_code == 3
    st = status(broken)
    assert st.states == {"failed": 1}
    assert "no-such-local-model" in st.failures[0][1]
    shown = runner.invoke(main, ["--project", str(tmp_path), "status"], env=env)
    assert "failed" in shown.output and "no-such-local-model" in shown.output
    # fix the configuration, then put the item back where it failed
    fixed_env = {k: v for k, v in env.items() if "MODELS" not in k}
    result = runner.invoke(main, ["--project", str(tmp_path), "retry-failed"], env=fixed_env)
    assert result.exit_code == 0 and "retried 1" in result.output
    assert status(project(tmp_path, **QUIET_SIM)).states == {"accepted": 1}


def test_an_item_that_keeps_killing_its_worker_is_failed_as_poison(tmp_path: Path) -> None:
    settings = project(tmp_path)
    engine = seeded_store(settings, 1)
    (item_id,) = items.create_items(engine)
    with transaction(engine) as s:
        item = s.get(Item, item_id)
        assert item is not None
        item.claims = settings.broker.max_claims  # claimed that often, never committed
    assert run_step(App(settings), State.PENDING, item_id) is State.FAILED
    with engine.connect() as conn:
        error = conn.execute(text("SELECT error FROM item")).scalar()
    assert "poison" in error


def test_a_step_stopped_at_its_time_limit_fails_its_item_with_the_reason_and_is_not_exit_0(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A step interrupted by dramatiq's time limit ran past its start-to-close ceiling (issue 44,
    actors/ceilings.py): its item fails with the reason instead of going back to run (and stop) again; the
    build says so and exits 3; `retry-failed` then finishes it."""
    from dramatiq.middleware.time_limit import TimeLimitExceeded

    from playlisteval.build.stages import STAGES

    settings = project(tmp_path, **QUIET_SIM)
    engine = seeded_store(settings, 1)
    env = {f"PLAYLISTEVAL_SIM__{k.split('__')[1].upper()}": "0" for k in QUIET_SIM}

    def past_its_time_limit(ctx: object) -> object:
        raise TimeLimitExceeded()

    monkeypatch.setitem(STAGES, State.PENDING, past_its_time_limit)
    runner = CliRunner()
    built = runner.invoke(main, ["--project", str(tmp_path), "build"], env=env)
    assert built.exit_code == 3, built.output
    assert status(settings).states == {"failed": 1}
    with engine.connect() as conn:
        error = conn.execute(text("SELECT error FROM item")).scalar()
    assert error.startswith("the pending step exceeded its start-to-close ceiling of ") and \
        "([broker] step_ceiling_s)" in error
    monkeypatch.undo()
    retried = runner.invoke(main, ["--project", str(tmp_path), "retry-failed"], env=env)
    assert retried.exit_code == 0, retried.output
    assert status(settings).states == {"accepted": 1}
