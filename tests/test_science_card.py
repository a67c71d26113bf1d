"""The science checks on a benchmark the sim built (issue 9, items 7 and 8): `eval judge` and
`eval retrieve` print every rate with its interval, and the exported dataset card carries the shortcut
audit and the accuracy by rating gap, labelled simulated."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from playlisteval.actors.build_run import build
from playlisteval.cli import main
from playlisteval.config import Settings
from playlisteval.select.sampling import select_benchmark
from tests.eval_helpers import indexed_seeded_store
from tests.helpers import QUIET_SIM, env_for, project

SMALL: dict[str, object] = dict(index__embedder="hash", eval__materialize_frames=False, eval__frames=16,
                                select__difficulty_evidence="oracle", select__questions_per_domain=0,
                                select__pairs_per_domain=90, **QUIET_SIM)
CI = re.compile(r"\d+\.\d% \[-?\d+\.\d, -?\d+\.\d\]")  # "62.5% [51.0, 73.2]"


def cli(settings: Settings, *args: str) -> Any:
    return CliRunner().invoke(main, ["--project", str(settings.root), *args], env={**env_for(**SMALL),
                                                                                  "COLUMNS": "200"})


@pytest.fixture(scope="module")
def selected(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    settings = project(tmp_path_factory.mktemp("science"), **SMALL)
    indexed_seeded_store(settings, 4)
    build(settings)
    select_benchmark(settings)
    return settings


def test_eval_judge_prints_and_returns_intervals(selected: Settings) -> None:
    shown = cli(selected, "eval", "judge", "--judge", "shortcut/always-a")
    assert shown.exit_code == 0, shown.output
    assert CI.search(shown.output), shown.output
    result = cli(selected, "eval", "judge", "--judge", "shortcut/always-a", "--json")
    summary = json.loads(result.output.splitlines()[0])
    ci = summary["accuracy_ci"]
    assert ci["estimate"] == pytest.approx(summary["accuracy"]) and ci["n"] == summary["judged"]
    assert ci["low"] <= ci["estimate"] <= ci["high"] and 1 < ci["clusters"] < ci["n"]  # pairs of fewer questions
    assert set(summary["by_domain_ci"]) == set(summary["by_domain"])


def test_eval_retrieve_prints_and_returns_intervals(selected: Settings) -> None:
    result = cli(selected, "eval", "retrieve", "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    for rate in ("hit_both", "hit_any", "ndcg"):
        assert out[f"{rate}_ci"]["estimate"] == pytest.approx(out[rate])
        assert out[f"{rate}_ci"]["clusters"] == out["questions"]  # one ranking per question
    shown = cli(selected, "eval", "retrieve")
    assert CI.search(shown.output), shown.output


def test_the_dataset_card_carries_the_science_checks(selected: Settings, tmp_path: Path) -> None:
    assert cli(selected, "eval", "judge", "--judge", "shortcut/random").exit_code == 0
    out = tmp_path / "bench"
    assert cli(selected, "export", str(out)).exit_code == 0
    card = (out / "README.md").read_text()
    science = card[card.index("## Science checks"):]
    assert science.startswith("## Science checks (simulated)")
    audit = science[science.index("### Shortcut audit"):science.index("### Accuracy by rating gap")]
    rows = [line for line in audit.splitlines() if line.startswith("| `shortcut/")]
    assert [r.split("`")[1] for r in rows] == ["shortcut/random", "shortcut/always-a", "shortcut/longer-answer",
                                                "shortcut/transcript-overlap"]
    assert "| main run (retrieved, domain) |" in rows[0]  # measured by its run …
    assert "computed from the benchmark" in rows[2]  # … or from the benchmark itself …
    assert "not run: playlisteval eval judge --judge shortcut/transcript-overlap" in rows[3]  # … or said so
    for row in rows[:3]:
        assert re.search(r"\d+\.\d \[\d+\.\d, \d+\.\d\]", row) and re.search(r"\| (ok|\*\*flagged\*\*) \|$", row)
    weak = science[science.index("the difficulty gate's weak judges"):science.index("judge runs on this benchmark")]
    assert "| Weak judge | gap 1 |" in weak
    assert "F_first: sim/weak-judge (simulated)" in weak and "F_second: sim/weak-judge-b (simulated)" in weak
    runs = science[science.index("judge runs on this benchmark"):]
    assert "shortcut/always-a (retrieved, domain)" in runs and "shortcut/random (retrieved, domain)" in runs
    assert "run 1" not in runs  # no store ids in the card: the same card from any store
