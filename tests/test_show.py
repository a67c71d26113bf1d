"""`playlisteval show ITEM`: an item's whole story from the store, as text and as JSON."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from playlisteval.cli import main
from tests.helpers import project, seeded_store


def test_show_prints_the_whole_history_of_a_built_item(tmp_path: Path) -> None:
    runner = CliRunner()
    assert runner.invoke(main, ["init", str(tmp_path)]).exit_code == 0
    seeded_store(project(tmp_path), 1)
    built = runner.invoke(main, ["--project", str(tmp_path), "build"])
    assert built.exit_code == 0, built.output

    result = runner.invoke(main, ["--project", str(tmp_path), "show", "1", "--json"])
    assert result.exit_code == 0, result.output
    story = json.loads(result.output)
    assert story["item"] == 1 and story["state"] in ("accepted", "failed", "rejected", "too_easy")
    assert len(story["seed"]["segments"]) == 2
    phases = {a["phase"] for a in story["attempts"]}
    assert 1 in phases
    first = story["attempts"][0]
    assert first["question"] and first["gates"], "every attempt keeps its output and the gates that ran"
    # every transition is there, in order, ending in the item's state
    versions = [e["version"] for e in story["events"]]
    assert versions == sorted(versions) and story["events"][-1]["to"] == story["state"]
    # every model call of the item, with its tokens and dollars, and the spend adds up
    assert story["calls"] and all("usd" in c and "input_tokens" in c for c in story["calls"])
    assert abs(story["spend"]["usd"] - sum(c["usd"] for c in story["calls"] if c["status"] == "ok")) < 1e-6
    # every call keeps what it asked: the transcript verifier was shown the attempt's question
    assert all(c["prompt"] for c in story["calls"])
    verify = [c for c in story["calls"] if c["role"] == "C2_transcript_verify"]
    assert verify and first["question"] in verify[0]["prompt"]
    rejected = [g for a in story["attempts"] for g in a["gates"] if g["verdict"] == "reject"]
    assert all(g["feedback"] for g in rejected), "a rejection shows the feedback the next attempt received"

    text = runner.invoke(main, ["--project", str(tmp_path), "show", "1"])
    assert text.exit_code == 0, text.output
    assert "item 1" in text.output and "model calls" in text.output and "transitions" in text.output
    with_prompts = runner.invoke(main, ["--project", str(tmp_path), "show", "1", "--prompts"])
    assert with_prompts.exit_code == 0 and "reply" in with_prompts.output


def test_show_of_an_unknown_item_is_one_clear_error(tmp_path: Path) -> None:
    runner = CliRunner()
    assert runner.invoke(main, ["init", str(tmp_path)]).exit_code == 0
    result = runner.invoke(main, ["--project", str(tmp_path), "show", "7"])
    assert result.exit_code == 1
    assert "no item 7" in result.output and "playlisteval build" in result.output
    assert "Traceback" not in result.output
