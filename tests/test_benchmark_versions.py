"""Issue 22: a judge's main run belongs to the benchmark (its stored protocol), not to the reading shell;
benchmark versions keep what an earlier version was after `remove --force`; every output carries its
provenance."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from playlisteval.cli import main
from playlisteval.config import Settings
from playlisteval.store import open_store, protocol
from tests.helpers import env_for
from tests.judged_project import OVERRIDES, cli, copy_of, make_selected

WITHOUT_FRAMES = {k: v for k, v in OVERRIDES.items() if k != "eval__frames"}


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A selected benchmark (drawn with eval.frames=8 in the environment) judged by the sim judge."""
    root = make_selected(tmp_path_factory.mktemp("versions-source"))
    settings = copy_of(root, root)
    cli(settings, "eval", "judge", "--judge", "sim/judge", "--evidence", "retrieved", code=None)
    cli(settings, "eval", "judge", "--judge", "sim/judge", "--evidence", "uniform", code=None)
    return root


def read(settings: Settings, *args: str, env: dict[str, Any], code: int | None = 0) -> Result:
    """A command in a process whose PLAYLISTEVAL_* are exactly ``env`` (None removes a variable)."""
    result = CliRunner().invoke(main, ["--project", str(settings.root), *args], env=env, catch_exceptions=False)
    assert code is None or result.exit_code == code, result.output
    return result


def board(settings: Settings, *extra: str, env: dict[str, Any] | None = None) -> dict[str, Any]:
    env = env_for(**OVERRIDES) if env is None else env
    doc: dict[str, Any] = json.loads(read(settings, "leaderboard", "--json", *extra, env=env).output)
    return doc


def test_select_stores_the_protocol_it_ran_with(judged: Path, tmp_path: Path) -> None:
    settings = copy_of(judged, tmp_path)
    stored = protocol.stored(open_store(settings), 1)
    assert stored is not None and stored["frames"] == 8 and stored["evidence"] == "retrieved"
    shown = json.loads(read(settings, "protocol", "show", "--json", env=env_for(**WITHOUT_FRAMES)).output)
    assert shown["stored"] and shown["protocol"]["frames"] == 8 and shown["provenance"]["benchmark"]


def test_main_runs_do_not_depend_on_the_reading_shell(judged: Path, tmp_path: Path) -> None:
    settings = copy_of(judged, tmp_path)
    with_env = board(settings)
    assert with_env["rows"], "the judged run is the main run where it was made"
    # a shell without PLAYLISTEVAL_EVAL__FRAMES (the default is 128), and one with another value: same document
    without = board(settings, env={**env_for(**WITHOUT_FRAMES), "PLAYLISTEVAL_EVAL__FRAMES": None})
    other = board(settings, env={**env_for(**WITHOUT_FRAMES), "PLAYLISTEVAL_EVAL__FRAMES": "64"})
    assert without == with_env == other
    output = read(settings, "eval", "runs", "--json", env=env_for(**WITHOUT_FRAMES)).output
    listed = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
    assert listed and all(r["main"] for r in listed)


def test_the_stored_protocol_decides_and_eval_judge_defaults_to_it(judged: Path, tmp_path: Path) -> None:
    settings = copy_of(judged, tmp_path)
    env = {**env_for(**WITHOUT_FRAMES), "PLAYLISTEVAL_EVAL__FRAMES": None}
    read(settings, "protocol", "set", "--frames", "4", env=env)
    assert board(settings, env=env)["rows"] == []  # the frames=8 runs are sweeps of a frames=4 protocol now
    result = read(settings, "eval", "judge", "--judge", "sim/judge", "--json", env=env, code=None)
    line = json.loads([x for x in result.output.splitlines() if x.startswith("{")][0])
    assert line["settings"]["frames"] == 4  # not the shell's 128: the protocol's
    assert board(settings, env=env)["rows"]
    read(settings, "protocol", "set", "--frames", "0", env=env, code=2)  # a usage error, nothing changed
    assert protocol.stored(open_store(settings), 1)["frames"] == 4  # type: ignore[index]


def test_remove_makes_a_new_version_and_the_first_stays_readable(judged: Path, tmp_path: Path) -> None:
    settings = copy_of(judged, tmp_path)
    first = board(settings)
    assert first["provenance"]["benchmark_version"] == 1
    out1 = tmp_path / "v1"
    exported = json.loads(cli(settings, "export", str(out1), "--json").output)
    assert exported["provenance"]["benchmark_version"] == 1
    assert json.loads((out1 / "provenance.json").read_text())["content_hash"] == first["provenance"]["content_hash"]
    assert "## Provenance" in (out1 / "README.md").read_text()
    cli(settings, "remove", "--domain", "Education", "--force")
    listed = json.loads(cli(settings, "versions", "--json").output)["versions"]
    assert [v["version"] for v in listed] == [1, 2] and listed[0]["frozen"] and listed[1]["live"]
    assert listed[1]["content_hash"] != listed[0]["content_hash"]
    assert board(settings, "--version", "1") == first  # as it was printed while live
    assert board(settings)["provenance"]["benchmark_version"] == 2
    again = tmp_path / "v1-again"
    cli(settings, "export", str(again), "--version", "1")
    for name in ("data/test.parquet", "data/test.jsonl", "stats.json"):
        assert (again / name).read_bytes() == (out1 / name).read_bytes(), name
    read(settings, "leaderboard", "--version", "7", env=env_for(**OVERRIDES), code=1)


def test_a_refused_removal_makes_no_version(judged: Path, tmp_path: Path) -> None:
    settings = copy_of(judged, tmp_path)
    cli(settings, "remove", "--domain", "Education", code=1)  # finished items: needs --force
    listed = json.loads(cli(settings, "versions", "--json").output)["versions"]
    assert [(v["version"], v["frozen"]) for v in listed] == [(1, False)]
