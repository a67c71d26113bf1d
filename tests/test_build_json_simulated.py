"""`build --json` says "simulated": true when it only enqueued work the sim will answer (issue 25,
deliverable 6): handed to Redis workers, no call of the build is in the store yet, and the flag read the
store alone."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from playlisteval.cli import main
from tests.helpers import QUIET_SIM, env_for, project, seeded_store


def test_build_json_is_simulated_when_it_only_enqueued_sim_work(tmp_path: Path, redis_url: str) -> None:
    overrides: dict[str, object] = {"broker__url": redis_url, **QUIET_SIM}
    settings = project(tmp_path, **overrides)
    seeded_store(settings, 3)
    result = CliRunner().invoke(main, ["--project", str(tmp_path), "build", "--json"], env=env_for(**overrides),
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    said = json.loads(result.output)
    assert said["enqueued"] == 3 and said["processed"] == 0
    assert said["simulated"] is True
