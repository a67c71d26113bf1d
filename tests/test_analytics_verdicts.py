"""`eval verdicts`: accuracy with no-verdicts at 0.5, the no-verdict count, and errors naming the line."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from playlisteval.cli import main
from playlisteval.eval.trec import ScoreInputError
from playlisteval.eval.verdict_scoring import score_file, score_lines


def lines(*objs: object) -> list[str]:
    return [json.dumps(o) for o in objs]


def test_accuracy_counts_no_verdict_as_half() -> None:
    scores = score_lines(lines(
        {"pair_id": 1, "verdict": "A", "a_is_better": True},    # right
        {"pair_id": 2, "verdict": "A", "a_is_better": False},   # wrong
        {"pair_id": 3, "verdict": "B", "a_is_better": False},   # right
        {"pair_id": "x", "verdict": None, "a_is_better": True},  # no verdict: 0.5
    ))
    assert (scores.n, scores.accuracy, scores.no_verdict) == (4, pytest.approx(2.5 / 4), 1)


def test_agrees_with_an_independent_count_on_random_verdicts() -> None:
    rng = random.Random(11)
    verdicts = [rng.choice(["A", "B", None]) for _ in range(2000)]
    truth = [rng.random() < 0.5 for _ in range(2000)]
    scores = score_lines(lines(*({"pair_id": i, "verdict": v, "a_is_better": t}
                                 for i, (v, t) in enumerate(zip(verdicts, truth, strict=True)))))
    v = np.array([{"A": 1, "B": 0, None: -1}[x] for x in verdicts])
    t = np.array(truth, dtype=int)
    expected = (np.sum((v >= 0) & (v == t)) + 0.5 * np.sum(v < 0)) / len(v)
    assert scores.accuracy == pytest.approx(expected)
    assert scores.no_verdict == int(np.sum(v < 0))


@pytest.mark.parametrize("bad, message", [
    ("{not json", "not JSON"),
    ("[1, 2]", "expected a JSON object"),
    ('{"pair_id": 3, "verdict": "A"}', "missing a_is_better"),
    ('{"pair_id": 3, "verdict": "C", "a_is_better": true}', "verdict must be"),
    ('{"pair_id": 3, "verdict": "a", "a_is_better": true}', "verdict must be"),
    ('{"pair_id": 3, "verdict": "A", "a_is_better": "yes"}', "a_is_better must be true or false"),
    ('{"pair_id": 3, "verdict": "A", "a_is_better": 1}', "a_is_better must be true or false"),
    ('{"pair_id": null, "verdict": "A", "a_is_better": true}', "pair_id must be"),
    ('{"pair_id": 1, "verdict": "B", "a_is_better": true}', "pair 1 has a verdict already"),
])
def test_a_malformed_line_is_an_error_naming_its_number(bad: str, message: str) -> None:
    good = lines({"pair_id": 1, "verdict": "A", "a_is_better": True})
    with pytest.raises(ScoreInputError, match=message) as err:
        score_lines([*good, "", bad], source="v.jsonl")
    assert "v.jsonl: line 3" in str(err.value)


def test_an_empty_file_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("\n\n")
    with pytest.raises(ScoreInputError, match="no verdicts"):
        score_file(path)


def test_cli_json_and_error(tmp_path: Path) -> None:
    path = tmp_path / "v.jsonl"
    path.write_text("\n".join(lines({"pair_id": 1, "verdict": "A", "a_is_better": True},
                                    {"pair_id": 2, "verdict": None, "a_is_better": False})) + "\n")
    result = CliRunner().invoke(main, ["eval", "verdicts", str(path), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == {"n": 2, "accuracy": 0.75, "no_verdict": 1}
    assert "accuracy" in CliRunner().invoke(main, ["eval", "verdicts", str(path)]).output
    path.write_text(path.read_text() + '{"pair_id": 3, "verdict": "maybe", "a_is_better": true}\n')
    failed = CliRunner().invoke(main, ["eval", "verdicts", str(path), "--json"])
    assert failed.exit_code == 1 and "line 3" in failed.output
