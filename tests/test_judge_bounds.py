"""Issue 42, item 6: a judge run priced before it starts (`cost estimate --judge`) and bounded while it runs
(`eval judge --max-pairs N`, `--budget USD`), on a small sim-built, selected benchmark."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text

from playlisteval.commands import exitcodes
from playlisteval.config import Settings
from playlisteval.eval.bounds import pair_keys
from playlisteval.store import open_store
from tests.helpers import project
from tests.judged_project import OVERRIDES, cli, copy_of, json_lines, make_selected


@pytest.fixture(scope="module")
def selected(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_selected(tmp_path_factory.mktemp("bounds"))


def _judged_keys(settings: Settings, run_id: int) -> list[str]:
    engine = open_store(settings)
    with engine.connect() as conn:
        ids = [int(p) for (p,) in conn.execute(text("SELECT pair_id FROM judgment WHERE run_id = :r"), {"r": run_id})]
    return sorted(pair_keys(engine, ids).values())


def _benchmark_keys(settings: Settings) -> list[str]:
    engine = open_store(settings)
    with engine.connect() as conn:
        ids = [int(p) for (p,) in conn.execute(text("SELECT pair_id FROM benchmark_pair"))]
    return sorted(pair_keys(engine, ids).values())


# -- cost estimate --judge ---------------------------------------------------------------------------------
def test_cost_estimate_of_a_judge_prints_a_per_pair_and_a_total_figure(selected: Path, tmp_path: Path) -> None:
    settings = copy_of(selected, tmp_path)
    args = ("cost", "estimate", "--judge", "vllm/x", "--evidence", "uniform", "--frames", "16")
    shown = cli(settings, *args)
    flat = " ".join(shown.output.split())
    assert "per pair: 0.0111 USD" in flat  # 10 GPU-seconds a call at [prices."vllm/*"] gpu_hour = 4
    assert "total: " in flat and "258 tokens per frame ([estimate] tokens_per_frame)" in flat
    [est] = json_lines(cli(settings, *args, "--json"))
    pairs = len(_benchmark_keys(settings))
    assert est["pairs"] == pairs and est["assumptions"]["frames_sent"] == 16
    assert est["options"]["evidence"] == "uniform" and est["options"]["frames"] == 16
    [judge] = est["judges"]
    assert judge["calls"] == pairs and judge["input_tokens"] >= 16 * 258
    assert est["per_pair_usd"] == pytest.approx(10 / 3600 * 4.0)
    assert est["total_usd"] == pytest.approx(pairs * est["per_pair_usd"])
    # the swapped pass and samples multiply the calls; --max-pairs bounds the pairs
    [more] = json_lines(cli(settings, *args, "--swap", "--samples", "3", "--max-pairs", "5", "--json"))
    assert more["judges"][0]["calls"] == 5 * 2 * 3
    assert more["total_usd"] == pytest.approx(30 * est["per_pair_usd"])
    # the model's image limit ([providers] image_limits "vllm/*" = 64) thins the frames it is sent
    [thinned] = json_lines(cli(settings, "cost", "estimate", "--judge", "vllm/x", "--frames", "128", "--json"))
    assert thinned["judges"][0]["frames_sent"] == 64 and thinned["assumptions"]["frames_asked"] == 128
    # a judge run's option without --judge is a usage error, not a build estimate
    usage = cli(settings, "cost", "estimate", "--evidence", "uniform", code=exitcodes.USAGE)
    assert "--evidence" in usage.output and "add --judge MODEL" in usage.output


def test_cost_estimate_refuses_a_judge_without_a_price_and_names_the_setting(selected: Path, tmp_path: Path) -> None:
    settings = copy_of(selected, tmp_path)
    refused = cli(settings, "cost", "estimate", "--judge", "openai/no-such-model", "--frames", "16",
                  code=exitcodes.ERROR)
    flat = " ".join(refused.output.split())
    assert '[prices."openai/no-such-model"]' in flat and "0 USD" in flat
    assert "per pair" not in flat


# -- eval judge --max-pairs --------------------------------------------------------------------------------
def test_max_pairs_judges_the_first_pairs_by_content_key_the_same_on_another_store(
        selected: Path, tmp_path: Path) -> None:
    settings = copy_of(selected, tmp_path / "one")
    [run] = json_lines(cli(settings, "eval", "judge", "--judge", "sim/judge", "--max-pairs", "5", "--json"))
    assert (run["judged"], run["judged_now"], run["errors"]) == (5, 5, 0)
    assert run["pairs"] > 5 and run["state"] == "incomplete"
    keys = _judged_keys(settings, run["run_id"])
    assert len(keys) == 5 and keys == _benchmark_keys(settings)[:5]
    # a store built the same way from scratch judges the same five pairs
    other = project(make_selected(tmp_path / "two"), **OVERRIDES)
    [run2] = json_lines(cli(other, "eval", "judge", "--judge", "sim/judge", "--max-pairs", "5", "--json"))
    assert _judged_keys(other, run2["run_id"]) == keys
    # again: nothing new; without the bound the same run goes on and finishes
    [again] = json_lines(cli(settings, "eval", "judge", "--judge", "sim/judge", "--max-pairs", "5", "--json"))
    assert (again["run_id"], again["judged"], again["judged_now"]) == (run["run_id"], 5, 0)
    [rest] = json_lines(cli(settings, "eval", "judge", "--judge", "sim/judge", "--json"))
    assert (rest["run_id"], rest["judged_now"], rest["state"]) == (run["run_id"], run["pairs"] - 5, "finished")
    with open_store(settings).connect() as conn:
        calls = conn.execute(text("SELECT count(*) FROM model_call WHERE purpose = 'eval' AND status = 'ok'"))
        assert calls.scalar_one() == run["pairs"]  # no pair paid for twice


# -- eval judge --budget -------------------------------------------------------------------------------------
def test_the_budget_stops_a_judge_run_part_way_and_the_same_command_resumes_it(selected: Path, tmp_path: Path) -> None:
    args = ("eval", "judge", "--judge", "sim/judge", "--evidence", "uniform")
    budget, stopped, settings = 0.002, None, None
    for attempt in range(10):  # the smallest budget that lets some calls through, but not all
        settings = copy_of(selected, tmp_path / str(attempt))
        result = cli(settings, *args, "--budget", str(budget), "--json", code=None)
        [run] = json_lines(result)
        if 0 < run["judged"] < run["pairs"]:
            assert result.exit_code == exitcodes.PAUSED, result.output
            stopped = run
            break
        assert run["judged"] == 0 and result.exit_code == exitcodes.PAUSED, result.output
        budget *= 1.5
    assert stopped is not None and settings is not None, "no budget stopped the run part way"
    assert stopped["stopped"] == "budget" and stopped["errors"] == stopped["pairs"] - stopped["judged"]
    resumed = cli(settings, *args, "--budget", "1", "--json")
    [done] = json_lines(resumed)
    assert (done["run_id"], done["state"], done["judged"]) == (stopped["run_id"], "finished", stopped["pairs"])
    assert done["judged_now"] == stopped["pairs"] - stopped["judged"]
    with open_store(settings).connect() as conn:
        calls = conn.execute(text("SELECT count(*) FROM model_call WHERE purpose = 'eval' AND status = 'ok'"))
        assert calls.scalar_one() == stopped["pairs"]  # what the stopped pass paid for is not asked again
    assert done["stopped"] == "" and resumed.exit_code == exitcodes.DONE
