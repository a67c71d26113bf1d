"""`human report --json` has a PPI++ interval of how often the intended answer is right (issue 21,
deliverable 3): a judge's verdicts on every benchmark pair plus the study's ratings, never wider than the
ratings-only interval, and equal to a direct call of ppi_mean on arrays read straight from the store."""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from pathlib import Path

import pytest
from sqlalchemy import text

from playlisteval.analytics.ppi import classical_mean, ppi_mean
from playlisteval.config import Settings
from playlisteval.store import open_store
from tests.human_helpers import REASON, cli, study_project


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> tuple[Settings, int]:
    """The study's project judged by the sim judge, and rated by three simulated annotators whose majority
    follows the judge's verdict on most pairs (so the verdicts carry information) but not all."""
    settings = study_project(tmp_path_factory.mktemp("ppi") / "proj")
    [run] = [json.loads(line) for line in cli(settings, "eval", "judge", "--judge", "sim/judge", "--json")
             .output.splitlines() if line.startswith("{")]
    engine = open_store(settings)
    with engine.connect() as conn:
        scores = dict(conn.execute(text("SELECT pair_id, score FROM judgment WHERE run_id = :r"),
                                   {"r": run["run_id"]}).all())
        tasks = conn.execute(text("SELECT id, pair_id, intended_slot, attention_check FROM human_task "
                                  "ORDER BY task_key")).all()
    lines = []
    for i, t in enumerate(tasks):
        other = "B" if t.intended_slot == "A" else "A"
        # the majority confirms the intended answer where the judge chose it, except every fifth pair
        agrees = t.attention_check or ((scores.get(t.pair_id, 1.0) == 1.0) != (i % 5 == 4))
        for j, who in enumerate(("w1", "w2", "w3")):
            dissent = j == 2 and i % 3 == 0  # one annotator of three disagrees on some pairs
            pick = (t.intended_slot if agrees else other) if not dissent or t.attention_check else \
                (other if agrees else t.intended_slot)
            lines.append([str(t.id), who, pick, REASON])
    path = settings.root / "ratings.csv"
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["task_id", "annotator", "choice", "reason"])
        writer.writerows(lines)
    cli(settings, "human", "import", str(path))
    return settings, int(run["run_id"])


def _direct(settings: Settings, run_id: int | None) -> tuple[list[float], list[float], list[float]]:
    """Y, f on the rated pairs and f on the benchmark's other pairs, straight from the store's tables."""
    engine = open_store(settings)
    with engine.connect() as conn:
        rated = conn.execute(text("SELECT t.pair_id, t.intended_slot, t.attention_check, r.annotator, r.choice "
                                  "FROM human_rating r JOIN human_task t ON t.id = r.task_id")).all()
        bench = [p for (p,) in conn.execute(text("SELECT pair_id FROM benchmark_pair")).all()]
        f = {p: 1.0 for p in bench} if run_id is None else dict(conn.execute(
            text("SELECT pair_id, score FROM judgment WHERE run_id = :r"), {"r": run_id}).all())
    failed = {r.annotator for r in rated if r.attention_check and r.choice != r.intended_slot}
    votes: dict[int, list[bool]] = defaultdict(list)
    for r in rated:
        if not r.attention_check and r.annotator not in failed:
            votes[r.pair_id].append(r.choice == r.intended_slot)
    y = {p: 1.0 if 2 * sum(v) > len(v) else 0.0 if 2 * sum(v) < len(v) else 0.5 for p, v in votes.items()}
    labelled = sorted(p for p in y if p in f)
    return ([y[p] for p in labelled], [f[p] for p in labelled],
            [f[p] for p in sorted(bench) if p not in y and p in f])


def test_ppi_interval_is_no_wider_than_the_ratings_alone_and_equals_a_direct_call(
        judged: tuple[Settings, int]) -> None:
    settings, run_id = judged
    out = json.loads(cli(settings, "human", "report", "--json").output)
    got = out["ppi"]
    y, f, g = _direct(settings, run_id)
    assert len(y) == out["n_tasks"] and 0 < sum(y) < len(y)  # the labels vary: the intervals exist
    expected = ppi_mean(y, f, g, level=settings.human.confidence)
    for key in ("estimate", "low", "high", "standard_error", "lambda", "n_labelled", "n_unlabelled"):
        assert got[key] == pytest.approx(expected[key], abs=1e-12), key
    human = classical_mean(y, settings.human.confidence)
    assert got["classical"]["low"] == pytest.approx(human["low"]) and got["classical"]["high"] == pytest.approx(
        human["high"])
    assert got["predictions"] == {"source": "judge", "judge": "sim/judge", "shown_as": "sim/judge (simulated)",
                                  "run_id": run_id, "evidence": "retrieved", "simulated": True,
                                  "chosen": "the best model judge's main run (highest accuracy)"}
    assert got["pairs"]["benchmark"] == len(y) + len(g) and got["n_unlabelled"] == len(g)
    assert got["lambda"] > 0 and got["width"] < got["human_only_width"]  # the verdicts track the ratings
    assert got["width"] == pytest.approx(got["high"] - got["low"])
    assert "PPI++" in got["method"] and got["classical"]["method"]
    text_out = cli(settings, "human", "report").output
    assert "Intended answer right, PPI++ (%)" in text_out and "Intended answer right, ratings only" in text_out
    assert f"{100 * got['estimate']:.1f} [{100 * got['low']:.1f}," in text_out


def test_intended_labels_carry_no_information_and_reproduce_the_ratings_only_interval(
        judged: tuple[Settings, int]) -> None:
    settings, _ = judged
    got = json.loads(cli(settings, "human", "report", "--json", "--ppi-judge", "intended").output)["ppi"]
    y, f, g = _direct(settings, None)
    assert f == [1.0] * len(y) and got["predictions"]["source"] == "intended"
    assert got["lambda"] == 0.0 and got["width"] == pytest.approx(got["human_only_width"])
    human = classical_mean(y, settings.human.confidence)
    assert got["low"] == pytest.approx(human["low"], abs=1e-12) and got["high"] == pytest.approx(human["high"])
    assert got["estimate"] == ppi_mean(y, f, g, level=settings.human.confidence)["estimate"]


def test_an_unknown_ppi_judge_is_one_clear_line(judged: tuple[Settings, int], tmp_path: Path) -> None:
    settings, _ = judged
    result = cli(settings, "human", "report", "--ppi-judge", "nobody", code=1)
    assert "--ppi-judge 'nobody': no main run of that judge" in result.output and "sim/judge" in result.output
