"""Issue 22: `status`, `select`, `eval judge` and `eval runs` --json carry the provenance block (tool
version, store without password, benchmark version and content hash, settings digest, models per role)
next to their existing keys."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.judged_project import cli, copy_of, json_lines, make_selected


@pytest.fixture(scope="module")
def selected(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_selected(tmp_path_factory.mktemp("provenance-json"))


def _check(block: dict[str, Any]) -> None:
    assert block["tool"] == "playlisteval" and block["version"]
    assert block["benchmark"] and block["benchmark_version"] == 1 and len(block["content_hash"]) == 64
    assert block["settings_source"] == "benchmark" and block["settings_digest"]
    assert block["store"].startswith("sqlite") and block["models"]


def test_every_json_output_names_its_provenance(selected: Path, tmp_path: Path) -> None:
    settings = copy_of(selected, tmp_path)
    judged = json_lines(cli(settings, "eval", "judge", "--judge", "sim/judge", "--json", code=None))
    assert judged and "accuracy" in judged[0]
    _check(judged[0]["provenance"])
    runs = json_lines(cli(settings, "eval", "runs", "--json"))
    assert runs and all("run_id" in r for r in runs)
    for run in runs:
        _check(run["provenance"])
    status = json.loads(cli(settings, "status", "--json").output)
    assert "states" in status and "spend" in status
    _check(status["provenance"])
    again = json_lines(cli(settings, "select", "--json", code=None))
    assert again and again[0]["created"] is False and again[0]["pairs"]
    _check(again[0]["provenance"])
    assert again[0]["provenance"]["content_hash"] == status["provenance"]["content_hash"]
