"""Issue 22, deliverable 6: `--json` on the commands that lacked it (human annotators / export / import,
`eval drop`, `retry-failed`), and `human serve` on a port another server holds (exit 2, no URL printed).
"""

from __future__ import annotations

import csv
import json
import socket
from pathlib import Path

import pytest
from click.testing import CliRunner

from playlisteval.cli import main
from playlisteval.commands import exitcodes
from playlisteval.config import Settings
from tests.helpers import env_for
from tests.human_helpers import OVERRIDES, REASON, cli, study_project


@pytest.fixture(scope="module")
def proj(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return study_project(tmp_path_factory.mktemp("human-json") / "proj")


def test_human_annotators_export_and_import_speak_json(proj: Settings, tmp_path: Path) -> None:
    cli(proj, "human", "invite", "Ada")
    listed = json.loads(cli(proj, "human", "annotators", "--json").output)
    assert [a["annotator"] for a in listed["annotators"]] == ["Ada"] and listed["annotators"][0]["done"] == 0
    out_dir = tmp_path / "crowd"
    exported = json.loads(cli(proj, "human", "export", str(out_dir), "--json").output)
    assert exported["directory"] == str(out_dir) and exported["tasks"] > 0
    assert exported["tasks"] == sum(1 for _ in csv.DictReader((out_dir / "tasks.csv").open()))
    task_id = next(csv.DictReader((out_dir / "tasks.csv").open()))["task_id"]
    ratings = tmp_path / "ratings.csv"
    with ratings.open("w", newline="") as fh:
        csv.writer(fh).writerows([["task_id", "annotator", "choice", "reason"], [task_id, "w1", "A", REASON]])
    imported = json.loads(cli(proj, "human", "import", str(ratings), "--json").output)
    assert imported == {"study": proj.human.study, "file": str(ratings), "imported": 1}


def test_human_serve_on_a_busy_port_fails_before_printing_its_url(proj: Settings) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        result = CliRunner().invoke(main, ["--project", str(proj.root), "human", "serve", "--port", str(port)],
                                    env=env_for(**OVERRIDES))
    assert result.exit_code == exitcodes.USAGE, result.output
    assert "http://" not in result.output and f"127.0.0.1:{port}" in result.output


def test_dollars_in_json_carry_no_float_noise() -> None:
    """Issue 44: `status --json` printed 3.1e-17 (and -2.1e-17) dollars reserved: sums of per-token prices."""
    from playlisteval.commands.support import money_rounded

    got = money_rounded({"reserved_usd": -2.0816681711721685e-17, "spent_usd": 0.1 + 0.2,
                         "by": [{"paid_usd": 3.1e-17, "tokens": 1e-17}], "price_per_token_usd": 2.5e-8})
    assert got == {"reserved_usd": 0.0, "spent_usd": 0.3, "by": [{"paid_usd": 0.0, "tokens": 1e-17}],
                   "price_per_token_usd": 2.5e-8}
    assert str(got["reserved_usd"]) == "0.0"  # not -0.0
