"""Issue 41 item 6: `eval export RUN OUT` writes a judge run as an Inspect AI eval log that inspect_ai's own
reader reads back — one sample per judged pair, the prompt given, the reply, the verdict as the score (no
verdict never correct, never 0.5), tokens, dollars and the evidence served — and says so when the run is
incomplete or inspect_ai is missing."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from playlisteval.store import open_store
from tests.judged_project import cli, copy_of, json_lines, make_selected

inspect_log = pytest.importorskip("inspect_ai.log")  # the `inspect` extra (make installs it)


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> Any:
    selected = make_selected(tmp_path_factory.mktemp("inspect"))
    settings = copy_of(selected, tmp_path_factory.mktemp("inspect-copy"))
    [run] = json_lines(cli(settings, "eval", "judge", "--judge", "sim/judge", "--json"))
    with open_store(settings).begin() as c:  # one reply without a verdict, as a model may give
        pair = c.execute(text("SELECT min(pair_id) FROM judgment WHERE run_id = :r"), {"r": run["run_id"]}).scalar()
        c.execute(text("UPDATE judgment SET verdict = NULL, outcome = 'no_verdict', score = 0.5 "
                       "WHERE run_id = :r AND pair_id = :p"), {"r": run["run_id"], "p": pair})
    return settings, run, int(pair)


def _stored(settings: Any, run_id: int) -> dict[int, dict[str, Any]]:
    with open_store(settings).connect() as c:
        rows = c.execute(text(
            "SELECT j.pair_id, j.verdict, j.a_is_better, j.raw, p.text AS prompt, m.input_tokens, m.usd "
            "FROM judgment AS j JOIN model_call AS m ON m.id = j.call_id "
            "LEFT JOIN model_prompt AS p ON p.request_hash = m.request_hash WHERE j.run_id = :r"),
            {"r": run_id}).mappings().all()
    return {int(r["pair_id"]): dict(r) for r in rows}


def test_a_run_round_trips_through_inspect_ai(judged: Any, tmp_path: Path) -> None:
    settings, run, no_verdict_pair = judged
    out = tmp_path / "logs"
    [done] = json_lines(cli(settings, "eval", "export", str(run["run_id"]), str(out), "--json"))
    assert done["samples"] == run["pairs"] and done["errors"] == 0 and Path(done["path"]).parent == out
    assert [info.name for info in inspect_log.list_eval_logs(str(out))] != []  # `inspect view` lists the folder
    log = inspect_log.read_eval_log(done["path"])
    assert log.status == "success" and log.eval.model == "sim/judge"
    assert log.samples is not None and len(log.samples) == run["pairs"]  # one sample per judged pair
    stored = _stored(settings, run["run_id"])
    assert len({s.id for s in log.samples}) == len(stored)
    values = {}
    for sample in log.samples:
        meta = sample.metadata
        row = stored[meta["pair_id"]]
        intended = "A" if row["a_is_better"] else "B"
        assert sample.target == intended
        assert sample.input == row["prompt"] and row["prompt"]  # the prompt as the ledger kept it
        assert sample.output.completion == row["raw"]
        assert meta["input_tokens"] == row["input_tokens"] > 0 and meta["usd"] == pytest.approx(row["usd"])
        assert sample.output.usage is not None and sample.output.usage.input_tokens == row["input_tokens"]
        assert meta["evidence"]["frames"]  # what the judge was served
        expected = "N" if row["verdict"] is None else "C" if row["verdict"] == intended else "I"
        assert sample.scores is not None and sample.scores["verdict"].value == expected
        values[meta["pair_id"]] = expected
    assert values[no_verdict_pair] == "N"  # no verdict: neither correct nor Inspect's partial 0.5
    assert {"C", "I"} & set(values.values())
    [score] = log.results.scores
    metrics = {k: m.value for k, m in score.metrics.items()}
    right, none = list(values.values()).count("C"), list(values.values()).count("N")
    assert metrics["correct"] == right and metrics["no_verdict"] == none == 1
    # the project's own accuracy (no verdict 0.5, SPEC G4): the leaderboard's figure, named as such
    assert metrics["pairwise_accuracy"] == pytest.approx((right + 0.5 * none) / len(values))


def test_an_incomplete_run_says_so_and_has_no_sample_for_a_failed_pair(judged: Any, tmp_path: Path) -> None:
    settings, run, _ = judged
    engine = open_store(settings)
    with engine.begin() as c:  # the last pair's call failed: an error of the run, not a judgment
        pair, item = c.execute(text("SELECT j.pair_id, p.item_id FROM judgment AS j JOIN pair AS p ON p.id = j.pair_id "
                                    "WHERE j.run_id = :r ORDER BY j.pair_id DESC LIMIT 1"),
                               {"r": run["run_id"]}).one()
        saved = c.execute(text("SELECT * FROM judgment WHERE run_id = :r AND pair_id = :p"),
                          {"r": run["run_id"], "p": pair}).mappings().one()
        c.execute(text("DELETE FROM judgment WHERE id = :i"), {"i": saved["id"]})
        c.execute(text("INSERT INTO judge_error (run_id, pair_id, item_id, error, attempts, created_at) "
                       "VALUES (:r, :p, :i, 'ProviderError: 503', 1, 0)"), {"r": run["run_id"], "p": pair, "i": item})
    try:
        result = cli(settings, "eval", "export", str(run["run_id"]), str(tmp_path / "run.eval"), "--json", code=3)
        [done] = json_lines(result)
        assert done["errors"] == 1 and done["samples"] == run["pairs"] - 1
        log = inspect_log.read_eval_log(str(tmp_path / "run.eval"))
        assert log.status == "error" and "1 pair(s) failed" in log.error.message
        assert log.samples is not None and pair not in {s.metadata["pair_id"] for s in log.samples}
        assert log.results.total_samples == run["pairs"] and log.results.completed_samples == run["pairs"] - 1
    finally:
        with engine.begin() as c:
            c.execute(text("DELETE FROM judge_error WHERE run_id = :r"), {"r": run["run_id"]})
            values = {k: (json.dumps(v) if isinstance(v, dict) else v) for k, v in saved.items()}
            c.execute(text(f"INSERT INTO judgment ({', '.join(values)}) VALUES ({', '.join(':' + k for k in values)})"),
                      values)


def test_no_such_run_and_no_inspect_ai_are_errors(judged: Any, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    settings, run, _ = judged
    result = cli(settings, "eval", "export", "999", str(tmp_path / "x"), code=1)
    assert "no judge run 999" in result.output
    monkeypatch.setitem(sys.modules, "inspect_ai.log", None)  # as if the extra were not installed
    result = cli(settings, "eval", "export", str(run["run_id"]), str(tmp_path / "y"), code=1)
    assert "playlisteval[inspect]" in result.output and not (tmp_path / "y").exists()


def test_a_shortcut_run_and_a_rescore_say_what_they_did_not_spend(judged: Any, tmp_path: Path) -> None:
    """A shortcut judge asks no model: its samples say there was no prompt and carry no tokens or dollars. A
    rescore's judgments point at the calls of the run it re-read: their dollars are not counted again."""
    settings, run, _ = judged
    [shortcut] = json_lines(cli(settings, "eval", "judge", "--judge", "shortcut/random", "--json"))
    [done] = json_lines(cli(settings, "eval", "export", str(shortcut["run_id"]), str(tmp_path / "s.eval"), "--json"))
    log = inspect_log.read_eval_log(done["path"])
    assert log.samples is not None and len(log.samples) == shortcut["pairs"]
    for sample in log.samples:
        assert "no prompt" in str(sample.input) and not sample.metadata["prompt_stored"]
        assert sample.metadata["usd"] is None and sample.metadata["input_tokens"] is None
        assert sample.output.usage is None and sample.scores is not None
    said = cli(settings, "eval", "rescore", str(run["run_id"]), "--json").output
    rescored = json.loads(said.strip().splitlines()[-1])
    [done] = json_lines(cli(settings, "eval", "export", str(rescored["run_id"]), str(tmp_path / "r.json"), "--json"))
    log = inspect_log.read_eval_log(done["path"])  # the .json form reads back as well
    assert log.eval.metadata is not None and log.eval.metadata["rescore_of"] == run["run_id"]
    assert log.samples is not None and all(s.metadata["usd"] is None and s.metadata["input_tokens"] > 0
                                           for s in log.samples)
    assert all(s.output.usage is not None and s.output.usage.total_cost is None for s in log.samples)
