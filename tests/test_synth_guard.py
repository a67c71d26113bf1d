"""Issue 22: `synth` validates its counts (a usage error, exit 2) and leaves an existing collection alone
unless --force."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from playlisteval.cli import main


@pytest.mark.parametrize("args", [["--videos", "-1"], ["--minutes", "0"], ["--domains", "0"], ["--vp9", "-1"],
                                  ["--videos", "-1", "--minutes", "0"]])
def test_bad_counts_are_usage_errors(tmp_path: Path, args: list[str]) -> None:
    result = CliRunner().invoke(main, ["synth", str(tmp_path / "v"), *args])
    assert result.exit_code == 2, result.output
    assert not (tmp_path / "v").exists()  # nothing written


def test_an_existing_collection_is_not_written_over(tmp_path: Path) -> None:
    out = tmp_path / "v"
    out.mkdir()
    (out / "manifest.csv").write_text("domain,playlist,title,path\n")
    result = CliRunner().invoke(main, ["synth", str(out), "--videos", "1", "--minutes", "0.1"])
    assert result.exit_code == 1 and "--force" in result.output, result.output
    assert (out / "manifest.csv").read_text() == "domain,playlist,title,path\n"
    assert sorted(p.name for p in out.iterdir()) == ["manifest.csv"]
