"""The reference's glossary (docs/reference.md, linked from the README) says what the CLI's gate ids and
states mean, in step with the code."""

from __future__ import annotations

from pathlib import Path

from playlisteval.commands.glossary import GATES, STATES, legend
from playlisteval.store.states import State

REFERENCE = Path(__file__).resolve().parents[1] / "docs" / "reference.md"


def test_every_state_and_gate_is_explained_and_the_readme_says_the_same() -> None:
    assert set(STATES) == {s.value for s in State}
    text = REFERENCE.read_text(encoding="utf-8")
    for key, meaning in {**GATES, **STATES}.items():
        assert f"| {key} | {meaning} |" in text, f"docs/reference.md glossary out of step for {key}"


def test_legend_lists_the_ids_asked_for() -> None:
    out = legend(["C1", "D4"])
    assert "C1" in out and "D4" in out and "C2.1" not in out

