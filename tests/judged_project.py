"""A small judged project for the issue-20 tests (reward judges, attribution, correlation, scope figure,
sweep costs): three sim-built questions over seeded worlds, a benchmark drawn by the sim weak judges, copied
per test so each test may judge, drop or add without touching the others."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from playlisteval.actors.build_run import build
from playlisteval.cli import main
from playlisteval.config import Settings
from playlisteval.select.sampling import select_benchmark
from tests.eval_helpers import indexed_seeded_store
from tests.helpers import QUIET_SIM, env_for, project, share_media

OVERRIDES: dict[str, object] = dict(
    index__embedder="hash", index__ocr="none", eval__materialize_frames=False, eval__frames=8,
    eval__workers=1, select__difficulty_evidence="oracle", select__questions_per_domain=0,
    select__pairs_per_domain=10, runner__max_attempts=1, runner__backoff_base_s=0.01, **QUIET_SIM)


def make_selected(root: Path) -> Path:
    """Build and select once (module fixtures call this): the project folder."""
    settings = project(root, **OVERRIDES)
    indexed_seeded_store(settings, 3)
    build(settings)
    out = select_benchmark(project(root, **OVERRIDES))
    assert out.created and out.pairs >= 6
    return root


def copy_of(source: Path, root: Path) -> Settings:
    """A fresh project at ``root`` holding ``source``'s store."""
    project(root, **OVERRIDES)
    with sqlite3.connect(source / "playlisteval.db") as a, sqlite3.connect(root / "playlisteval.db") as b:
        a.backup(b)
    share_media(source, root)
    return project(root, **OVERRIDES)


def cli(settings: Settings, *args: str, code: int | None = 0) -> Result:
    result = CliRunner().invoke(main, ["--project", str(settings.root), *args], env=env_for(**OVERRIDES),
                                catch_exceptions=False)
    if code is not None:
        assert result.exit_code == code, result.output
    return result


def json_lines(result: Result) -> list[dict[str, Any]]:
    return [json.loads(line) for line in result.output.splitlines() if line.startswith("{")]
