"""`eval judge --samples N --temperature T` (issue 21, deliverable 4): N runs, N verdicts per pair from N
real requests, and stability figures equal to analytics/stability.stability on the stored verdicts."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest
from sqlalchemy import text

from playlisteval.analytics.stability import stability
from playlisteval.config import Settings
from playlisteval.eval.options import JudgeOptions
from playlisteval.store import open_store
from playlisteval.world.sim.judge import tempered
from tests.human_helpers import cli, study_project


@pytest.fixture(scope="module")
def proj(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return study_project(tmp_path_factory.mktemp("samples") / "proj")


def _lines(output: str) -> list[dict]:  # type: ignore[type-arg]
    return [json.loads(line) for line in output.splitlines() if line.startswith("{")]


def _stored(settings: Settings, runs: list[int]) -> tuple[list[list[int | None]], list[int], dict[int, set[int]]]:
    """Per pair its verdicts in sample order (1, 0, None), its question, and the ledger rows behind them."""
    with open_store(settings).connect() as conn:
        got = conn.execute(text("SELECT j.run_id, j.pair_id, j.score, j.call_id, p.item_id FROM judgment j "
                                "JOIN pair p ON p.id = j.pair_id")).all()
    by_pair: dict[int, dict[int, int | None]] = defaultdict(dict)
    calls: dict[int, set[int]] = defaultdict(set)
    item = {}
    for r in got:
        if r.run_id in runs:
            by_pair[r.pair_id][r.run_id] = None if r.score == 0.5 else int(r.score == 1.0)
            calls[r.pair_id].add(r.call_id)
            item[r.pair_id] = r.item_id
    pairs = sorted(p for p, v in by_pair.items() if len(v) == len(runs))
    return [[by_pair[p][r] for r in runs] for p in pairs], [item[p] for p in pairs], calls


def test_three_samples_store_three_verdicts_per_pair_and_their_stability(proj: Settings, tmp_path: Path) -> None:
    out = _lines(cli(proj, "eval", "judge", "--judge", "sim/judge", "--samples", "3", "--temperature", "0.7",
                     "--json").output)
    assert [r["sample"] for r in out] == [0, 1, 2] and {r["temperature"] for r in out} == {0.7}
    runs = [r["run_id"] for r in out]
    assert len(set(runs)) == 3 and all("stability" not in r for r in out[:2])
    verdicts, questions, calls = _stored(proj, runs)
    assert len(verdicts) == out[0]["pairs"] and all(len(v) == 3 for v in verdicts)
    assert all(len(ids) == 3 and 0 not in ids for ids in calls.values())  # three calls per pair, none shared
    fig = out[-1]["stability"]
    expected = stability(verdicts, questions, seed=proj.project.seed, resamples=proj.analytics.bootstrap_resamples,
                         level=proj.analytics.confidence)
    for key in ("expected_accuracy", "consensus_accuracy", "consistency", "consensus_gain"):
        for field in ("estimate", "low", "high", "n", "clusters"):
            assert fig[key][field] == pytest.approx(expected[key][field]), (key, field)
        assert fig[key]["method"]
    assert fig["runs"] == runs and fig["samples"] == 3 and fig["simulated"] is True
    assert fig["consistency"]["estimate"] < 1  # at 0.7 the sim's verdicts on some pairs change between samples
    # asking again continues the same three runs: nothing is asked twice
    again = _lines(cli(proj, "eval", "judge", "--judge", "sim/judge", "--samples", "3", "--temperature", "0.7",
                       "--json").output)
    assert [r["run_id"] for r in again] == runs and all(r["judged_now"] == 0 for r in again)
    # the report's trust section shows them (the sampled runs are sweeps: the leaderboard's main run is not one)
    cli(proj, "report", str(tmp_path / "report.html"))
    page = (tmp_path / "report.html").read_text()
    assert "sim/judge (3 samples, T=0.7)" in page and "consensus accuracy" in page
    board = json.loads(cli(proj, "leaderboard", "--json").output)
    assert not {r.get("run_id") for r in board.get("rows", [])} & set(runs)


def test_at_temperature_zero_every_sample_agrees(proj: Settings) -> None:
    out = _lines(cli(proj, "eval", "judge", "--judge", "sim/judge", "--samples", "2", "--temperature", "0",
                     "--json").output)
    verdicts, _, _ = _stored(proj, [r["run_id"] for r in out])
    assert all(len(set(v)) == 1 for v in verdicts)
    assert out[-1]["stability"]["consistency"]["estimate"] == 1.0


def test_samples_need_a_temperature_and_unsampled_runs_keep_their_options() -> None:
    plain = JudgeOptions.from_settings(Settings())
    assert "temperature" not in plain.as_settings() and "sample" not in plain.as_settings()
    hot = JudgeOptions.from_settings(Settings(), temperature=0.7)
    assert hot.as_settings()["temperature"] == 0.7 and hot.options_hash != plain.options_hash
    assert tempered(0.8, None) == 0.8 and tempered(0.8, 1.0) == pytest.approx(0.8) and tempered(0.8, 0) == 1.0
    assert tempered(0.8, 0.5) == pytest.approx(0.64 / (0.64 + 0.04)) and tempered(0.5, 0.3) == 0.5


def test_samples_without_a_temperature_is_a_usage_error(proj: Settings) -> None:
    result = cli(proj, "eval", "judge", "--judge", "sim/judge", "--samples", "2", code=2)
    assert "--samples N needs --temperature T" in result.output
