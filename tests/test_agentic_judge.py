"""`eval judge --agentic` end to end on a synthetic collection with the sim (issue 20, deliverable 3): the
judge searches, fetches frames of what it found and answers; every tool call is recorded with the
judgment, `show` and `--json` list them, a replay pays nothing, and the run is its own (not the main run)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import text

from playlisteval.cli import main
from playlisteval.config import Settings
from playlisteval.store import open_store
from tests.helpers import QUIET_SIM, built_synthetic_project, env_for

OVERRIDES: dict[str, object] = dict(
    index__embedder="hash", index__ocr="none", index__segment_min_s=60, index__segment_max_s=90, eval__frames=16,
    select__questions_per_domain=0, select__pairs_per_domain=6, eval__materialize_frames=False, **QUIET_SIM)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    settings = built_synthetic_project(tmp_path_factory.mktemp("agentic"), **OVERRIDES)
    cli(settings, "select", "--json")
    return settings


def cli(settings: Settings, *args: str, code: int = 0) -> Any:
    result = CliRunner().invoke(main, ["--project", str(settings.root), *args], env=env_for(**OVERRIDES),
                                catch_exceptions=False)
    assert result.exit_code == code, result.output
    return result.output


def json_lines(output: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in output.splitlines() if line.startswith("{")]


def sql(settings: Settings, query: str, **params: Any) -> list[Any]:
    with open_store(settings).connect() as conn:
        return list(conn.execute(text(query), params))


def test_the_agentic_judge_searches_then_looks_then_answers_with_every_call_on_record(built: Settings) -> None:
    [run] = json_lines(cli(built, "eval", "judge", "--judge", "sim/judge", "--agentic", "--json"))
    assert run["state"] == "finished" and run["errors"] == 0 and run["judged"] == run["pairs"] > 0
    assert run["settings"]["agentic"] is True and "frames" not in run["settings"]
    assert run["simulated"] is True and run["accuracy_ci"]["low"] <= run["accuracy"] <= run["accuracy_ci"]["high"]
    agent = run["agent"]
    assert len(agent["pairs"]) == run["judged"] and agent["tool_calls"] == sum(agent["by_tool"].values())
    assert set(agent["by_tool"]) == {"search", "fetch_frames"}
    for pair in agent["pairs"]:
        tools = [c["tool"] for c in pair["tool_calls"]]
        assert tools[0] == "search" and "fetch_frames" in tools  # it looked where its searches pointed
        assert tools.index("fetch_frames") > max(i for i, t in enumerate(tools) if t == "search")
        assert pair["steps"] == 3 and pair["stopped"] == "answered"
        fetched = [c for c in pair["tool_calls"] if c["tool"] == "fetch_frames"]
        assert all(c["frames"] > 0 and not c["error"] for c in fetched)

    # the served chunks and frames are the judgment's evidence, as for a fixed-evidence judge
    [(evidence,)] = sql(built, "SELECT evidence FROM judgment WHERE run_id = :r ORDER BY pair_id LIMIT 1",
                        r=run["run_id"])
    record = json.loads(evidence) if isinstance(evidence, str) else evidence
    assert record["mode"] == "agentic" and record["chunks"] and record["frames"]
    assert len(record["agent"]["calls"]) == 3  # a ledger row per turn

    # every turn was paid through the runner, with the run's id on the ledger
    paid = sql(built, "SELECT count(*), sum(usd) FROM model_call WHERE run_id = :r AND status = 'ok'",
               r=run["run_id"])
    assert paid[0][0] == agent["turns"]

    # a replay of the whole run: the same turns from the cache, nothing paid, the same verdicts
    before = sql(built, "SELECT pair_id, verdict FROM judgment WHERE run_id = :r ORDER BY pair_id", r=run["run_id"])
    cli(built, "eval", "drop", str(run["run_id"]), "--yes")
    [again] = json_lines(cli(built, "eval", "judge", "--judge", "sim/judge", "--agentic", "--json"))
    after = sql(built, "SELECT pair_id, verdict FROM judgment WHERE run_id = :r ORDER BY pair_id", r=again["run_id"])
    assert after == before and again["agent"]["by_tool"] == agent["by_tool"]
    cached = sql(built, "SELECT count(*), sum(usd) FROM model_call WHERE run_id = :r AND status = 'cached'",
                 r=again["run_id"])
    assert cached[0][0] == agent["turns"] and cached[0][1] == 0
    new_paid = sql(built, "SELECT count(*) FROM model_call WHERE run_id = :r AND status = 'ok'", r=again["run_id"])
    assert new_paid[0][0] == paid[0][0]  # no new paid row

    # `show ITEM` lists the tool calls of its pairs' agentic judgments
    [(item,)] = sql(built, "SELECT p.item_id FROM judgment j JOIN pair p ON p.id = j.pair_id WHERE j.run_id = :r "
                           "ORDER BY j.pair_id LIMIT 1", r=again["run_id"])
    story = json.loads(cli(built, "show", str(item), "--json"))
    listed = story["agentic_judgments"]
    assert listed and listed[0]["tool_calls"][0]["tool"] == "search" and listed[0]["run_id"] == again["run_id"]
    shown = cli(built, "show", str(item))
    assert "agentic judgment" in shown and "fetch_frames" in shown


def test_a_shortcut_judge_cannot_be_agentic_and_batch_is_refused(built: Settings) -> None:
    assert "--agentic" in cli(built, "eval", "judge", "--judge", "sim/judge", "--agentic", "--batch", code=2)
    assert "model judge" in cli(built, "eval", "judge", "--judge", "shortcut/random", "--agentic", code=2)


def test_a_forced_last_turn_answers_from_what_the_judge_has(built: Settings) -> None:
    env = {**env_for(**OVERRIDES), "PLAYLISTEVAL_EVAL__AGENT_MAX_STEPS": "2"}
    result = CliRunner().invoke(main, ["--project", str(built.root), "eval", "judge", "--judge", "sim/judge",
                                       "--agentic", "--json"], env=env, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    [run] = json_lines(result.output)
    assert run["settings"]["agent_max_steps"] == 2  # a budget is part of the run: its own run
    for pair in run["agent"]["pairs"]:
        assert pair["steps"] == 2 and pair["stopped"] == "step budget"
        assert [c["tool"] for c in pair["tool_calls"]] == ["search"] * len(pair["tool_calls"])
        assert pair["verdict"] in ("A", "B")  # answered on the forced turn, from what it had
