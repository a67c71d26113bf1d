"""Issue 9, items 2 and 3 on the evaluation side: errors are never scores, and runs are explicit.

The judges and weak judges that fail here are the real OpenAI and Gemini providers against the local wire
fakes (tests/provider_fakes.py): 400, 500 and content-policy errors, replies without a verdict, a
provider whose key is not in the environment. The store is a small sim-built benchmark, copied per test.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from sqlalchemy import text
from sqlalchemy.engine import Engine

from playlisteval.actors.build_run import build
from playlisteval.analytics import Analytics
from playlisteval.cli import main
from playlisteval.commands import exitcodes
from playlisteval.config import Settings
from playlisteval.eval.judge import run_judge
from playlisteval.eval.options import JudgeOptions
from playlisteval.select.sampling import select_benchmark
from playlisteval.store import open_store
from tests.eval_helpers import indexed_seeded_store
from tests.helpers import QUIET_SIM, env_for, project, share_media
from tests.provider_fakes import CHAT, GENERATE, Canned, FakeAPI, chat_body, fake_api

OVERRIDES: dict[str, object] = dict(
    index__embedder="hash", eval__materialize_frames=False, eval__frames=8, eval__modality="transcript",
    eval__workers=1, select__difficulty_evidence="oracle", select__questions_per_domain=0,
    select__pairs_per_domain=10, runner__max_attempts=1, runner__backoff_base_s=0.01, **QUIET_SIM)
JUDGE = "openai/judge-test"
KEY = "sk-test-errors-runs-0000"
PRICES = '\n[prices."openai/judge-test"]\ninput = 1.0\noutput = 2.0\n\n[prices."openai/weak-test"]\ninput = 0.1\n'


def _copy_store(src: Path, dst: Path) -> None:
    with sqlite3.connect(src / "playlisteval.db") as a, sqlite3.connect(dst / "playlisteval.db") as b:
        a.backup(b)
    share_media(src, dst)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three sim-built questions, not selected yet (the weak-judge tests select themselves)."""
    root = tmp_path_factory.mktemp("built")
    settings = project(root, **OVERRIDES)
    indexed_seeded_store(settings, 3)
    build(settings)
    return root


@pytest.fixture(scope="module")
def selected(built: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same store with a benchmark drawn by the sim weak judges."""
    root = tmp_path_factory.mktemp("selected")
    project(root, **OVERRIDES)
    _copy_store(built, root)
    out = select_benchmark(project(root, **OVERRIDES))
    assert out.created and out.pairs >= 6
    return root


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAPI]:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    with fake_api() as server:
        server.content = "Model A cites the scene.\n\n[[A]]"
        yield server


def _fresh(source: Path, tmp_path: Path, api: FakeAPI, **extra: object) -> Settings:
    root = tmp_path / "proj"
    settings = project(root, **OVERRIDES, **extra)
    with (root / "playlisteval.toml").open("a") as f:
        f.write(PRICES)
    _copy_store(source, root)
    settings = project(root, **OVERRIDES, **extra)
    settings.providers.openai_base_url = f"{api.url}/v1"
    settings.providers.gemini_base_url = api.url
    return settings


def cli(settings: Settings, api: FakeAPI, *args: str, input: str | None = None, **extra: object) -> Result:
    env = env_for(**OVERRIDES, **extra, providers__openai_base_url=f"{api.url}/v1", providers__gemini_base_url=api.url)
    return CliRunner().invoke(main, ["--project", str(settings.root), *args], env=env, input=input,
                              catch_exceptions=False)


def json_lines(result: Result) -> list[dict[str, Any]]:
    return [json.loads(line) for line in result.output.splitlines() if line.startswith("{")]


def rows(engine: Engine, sql: str, **params: Any) -> list[Any]:
    with engine.connect() as conn:
        return list(conn.execute(text(sql), params))


def fail(status: int, message: str, code: str = "invalid_request_error") -> Canned:
    return Canned(status, {"error": {"message": message, "type": code, "code": code}})


# -- errors are never scores ---------------------------------------------------------------------------------


def test_failed_judge_calls_are_error_rows_and_the_rerun_asks_exactly_those(
        selected: Path, tmp_path: Path, api: FakeAPI) -> None:
    settings = _fresh(selected, tmp_path, api)
    engine = open_store(settings)
    pairs = rows(engine, "SELECT COUNT(*) FROM benchmark_pair")[0][0]
    api.queue(CHAT, fail(400, "Your request was flagged by our content policy.", "content_policy_violation"),
              fail(500, "upstream exploded", "server_error"), fail(400, "bad image", "invalid_request_error"),
              Canned(body=chat_body("I cannot tell which is better.")))
    first = cli(settings, api, "eval", "judge", "--judge", JUDGE)
    assert first.exit_code == exitcodes.INCOMPLETE, first.output
    assert "is incomplete: 3 error(s)" in first.output and "content policy" in first.output
    # three calls failed: error rows with their text, never judgments, never 0.5
    errors = rows(engine, "SELECT pair_id, error, attempts FROM judge_error")
    assert len(errors) == 3 and all(attempts == 1 for _, _, attempts in errors)
    assert {e.split(":")[0] for _, e, _ in errors} == {"PermanentModelError", "TransientModelError"}
    judged = rows(engine, "SELECT pair_id, verdict, a_is_better, score, outcome, id FROM judgment")
    assert len(judged) == pairs - 3 and not any(o == "error" for *_, o, _ in judged)
    assert not {p for p, *_ in judged} & {p for p, _, _ in errors}
    [listed] = json_lines(cli(settings, api, "eval", "runs", "--json"))
    expected = [1.0 if v == "A" and a else 0.0 if v in ("A", "B") else 0.5 for _, v, a, *_ in judged]
    assert (listed["state"], listed["errors"], listed["judged"], listed["no_verdict"]) == ("incomplete", 3,
                                                                                         pairs - 3, 1)
    assert listed["accuracy"] == pytest.approx(sum(expected) / len(expected))  # over the judged pairs only
    before = len(api.requests(CHAT))
    second = cli(settings, api, "eval", "judge", "--judge", JUDGE, "--json")
    assert second.exit_code == exitcodes.DONE, second.output
    [summary] = json_lines(second)
    assert len(api.requests(CHAT)) - before == 3  # exactly the errored pairs, nothing else
    new = {p for p, *_, i in rows(engine, "SELECT pair_id, id FROM judgment") if i > max(j[-1] for j in judged)}
    assert new == {p for p, _, _ in errors}
    assert (summary["run_id"], summary["state"], summary["errors"], summary["judged"]) == (
        listed["run_id"], "finished", 0, pairs)
    assert rows(engine, "SELECT COUNT(*) FROM judge_error") == [(0,)]
    third = cli(settings, api, "eval", "judge", "--judge", JUDGE, "--json")
    assert third.exit_code == exitcodes.DONE and len(api.requests(CHAT)) - before == 3  # nothing asked again


def test_a_key_missing_at_call_time_is_an_error_the_leaderboard_marks_not_a_half(
        selected: Path, tmp_path: Path, api: FakeAPI, monkeypatch: pytest.MonkeyPatch) -> None:
    from playlisteval.commands.eval_output import judge_exit

    settings = _fresh(selected, tmp_path, api)
    engine = open_store(settings)
    pairs = rows(engine, "SELECT COUNT(*) FROM benchmark_pair")[0][0]
    options = JudgeOptions.from_settings(settings)
    summary = run_judge(settings, "gemini/gemini-test", options)  # past any preflight: the key is read at call time
    assert (summary.judged, summary.errors, summary.accuracy, summary.stopped) == (0, pairs, None, "unavailable")
    assert judge_exit([summary]) == exitcodes.INCOMPLETE and not api.requests(GENERATE)
    messages = [e for (e,) in rows(engine, "SELECT error FROM judge_error")]
    assert len(messages) == pairs and all("GEMINI_API_KEY" in m for m in messages)
    assert rows(engine, "SELECT COUNT(*) FROM judgment") == [(0,)]
    with Analytics(engine, settings) as an:
        [row] = an.rows("SELECT * FROM leaderboard WHERE judge = 'gemini/gemini-test'")
        assert row["retrieved"] is None and row["complete"] is False
        assert row["status"] == f"retrieved incomplete: {pairs} errors" and row["errors_retrieved"] == pairs
        assert an.rows("SELECT * FROM pair_difficulty WHERE judges > 0") == []  # not counted until finished
    shown = cli(settings, api, "leaderboard")
    assert "gemini/gemini-test" in shown.output and "incomplete" in shown.output and "50.0" not in shown.output
    # with the key, the same run asks every pair again and finishes
    monkeypatch.setenv("GEMINI_API_KEY", "AIza-test-errors-runs")
    api.content = "[[B]]"
    again = run_judge(settings, "gemini/gemini-test", options)
    assert (again.run_id, again.state, again.judged, again.errors) == (summary.run_id, "finished", pairs, 0)
    assert len(api.requests(GENERATE)) == pairs


def test_the_budget_stops_a_judge_pass_and_the_command_says_paused(selected: Path, tmp_path: Path,
                                                                  api: FakeAPI) -> None:
    settings = _fresh(selected, tmp_path, api)
    result = cli(settings, api, "eval", "judge", "--judge", JUDGE, "--budget", "0.000001", "--json")
    assert result.exit_code == exitcodes.PAUSED, result.output
    [summary] = json_lines(result)
    assert summary["stopped"] == "budget" and summary["judged"] == 0 and summary["errors"] == summary["pairs"]
    assert not api.requests(CHAT) and all(m.startswith(("BudgetExceeded", "not asked"))
                                          for m in summary["error_messages"])


# -- runs are explicit ---------------------------------------------------------------------------------------


def test_the_main_run_is_the_one_with_the_default_options_even_when_a_sweep_came_first(
        selected: Path, tmp_path: Path, api: FakeAPI) -> None:
    settings = _fresh(selected, tmp_path, api)
    engine = open_store(settings)
    judge = "shortcut/longer-answer"
    [sweep] = json_lines(cli(settings, api, "eval", "judge", "--judge", judge, "--frames", "4", "--json"))
    [main_run] = json_lines(cli(settings, api, "eval", "judge", "--judge", judge, "--json"))
    assert sweep["run_id"] < main_run["run_id"] and sweep["options_hash"] != main_run["options_hash"]
    assert rows(engine, "SELECT options_hash FROM judge_run ORDER BY id") == [(sweep["options_hash"],),
                                                                            (main_run["options_hash"],)]
    with Analytics(engine, settings) as an:
        assert [r["run_id"] for r in an.rows("SELECT run_id FROM main_run")] == [main_run["run_id"]]
        [sweeps] = an.rows("SELECT * FROM judge_sweeps")
        assert (sweeps["run_id"], sweeps["varies"], sweeps["main_run_id"]) == (sweep["run_id"], "frames=4",
                                                                             main_run["run_id"])
        [board] = an.rows("SELECT * FROM leaderboard WHERE domain = 'All'")
        assert board["complete"] and board["status"] == "" and board["n_retrieved"] == main_run["judged"]
    listed = {r["run_id"]: r for r in json_lines(cli(settings, api, "eval", "runs", "--json"))}
    assert (listed[main_run["run_id"]]["main"], listed[main_run["run_id"]]["varies"]) == (True, "")
    assert (listed[sweep["run_id"]]["main"], listed[sweep["run_id"]]["varies"]) == (False, "frames=4")


def test_position_bias_pairs_a_forward_and_a_swapped_run_only_with_identical_options(
        selected: Path, tmp_path: Path, api: FakeAPI) -> None:
    settings = _fresh(selected, tmp_path, api)
    engine = open_store(settings)
    judge = "shortcut/always-a"
    [fwd_sweep] = json_lines(cli(settings, api, "eval", "judge", "--judge", judge, "--frames", "4", "--json"))
    [rev] = json_lines(cli(settings, api, "eval", "judge", "--judge", judge, "--swap", "--json"))
    [rev_sweep] = json_lines(cli(settings, api, "eval", "judge", "--judge", judge, "--swap", "--size", "320x240",
                                 "--json"))
    with Analytics(engine, settings) as an:
        assert an.rows("SELECT * FROM position_bias") == []  # a --frames 4 forward is no partner for the default
    [fwd] = json_lines(cli(settings, api, "eval", "judge", "--judge", judge, "--json"))
    with Analytics(engine, settings) as an:
        [row] = an.rows("SELECT * FROM position_bias")
    assert (row["forward_run"], row["reversed_run"]) == (fwd["run_id"], rev["run_id"])
    assert row["picked_a_forward"] == row["picked_a_reversed"] == 1.0 and row["letter_agreement"] == 1.0
    assert fwd_sweep["run_id"] not in (row["forward_run"], row["reversed_run"]) and rev_sweep["run_id"] != rev["run_id"]


def test_eval_runs_lists_options_state_and_counts_and_drop_deletes_on_request(
        selected: Path, tmp_path: Path, api: FakeAPI) -> None:
    settings = _fresh(selected, tmp_path, api)
    engine = open_store(settings)
    api.queue(CHAT, fail(400, "nope"))
    assert cli(settings, api, "eval", "judge", "--judge", JUDGE).exit_code == exitcodes.INCOMPLETE
    assert cli(settings, api, "eval", "judge", "--judge", "shortcut/random", "--evidence", "uniform").exit_code == 0
    listed = json_lines(cli(settings, api, "eval", "runs", "--json"))
    by_judge = {r["judge"]: r for r in listed}
    model = by_judge[JUDGE]
    assert (model["state"], model["errors"], model["pending"], model["main"]) == ("incomplete", 1, 0, True)
    assert model["settings"]["evidence"] == "retrieved" and model["settings"]["frames"] == 8
    assert by_judge["shortcut/random"]["state"] == "finished" and by_judge["shortcut/random"]["errors"] == 0
    table = cli(settings, api, "eval", "runs")
    assert table.exit_code == 0 and "incomplete" in table.output and "sweep" not in table.output
    calls = rows(engine, "SELECT COUNT(*) FROM model_call WHERE run_id = :r", r=model["run_id"])
    kept = cli(settings, api, "eval", "drop", str(model["run_id"]), input="n\n")
    assert kept.exit_code == 1 and rows(engine, "SELECT COUNT(*) FROM judge_run") == [(2,)]
    dropped = cli(settings, api, "eval", "drop", str(model["run_id"]), input="y\n")
    assert dropped.exit_code == 0 and "deleted run" in dropped.output
    assert rows(engine, "SELECT COUNT(*) FROM judgment WHERE run_id = :r", r=model["run_id"]) == [(0,)]
    assert rows(engine, "SELECT COUNT(*) FROM judge_error") == [(0,)]
    assert rows(engine, "SELECT COUNT(*) FROM model_call WHERE run_id = :r", r=model["run_id"]) == calls  # ledger kept
    other = by_judge["shortcut/random"]["run_id"]
    assert cli(settings, api, "eval", "drop", str(other), "--yes").exit_code == 0
    assert rows(engine, "SELECT COUNT(*) FROM judge_run") == [(0,)]
    missing = cli(settings, api, "eval", "drop", "999", "--yes")
    assert missing.exit_code == exitcodes.USAGE and "no judge run 999" in missing.output


def test_errors_reruns_listing_and_dropping_on_postgresql(pg_url: str, tmp_path: Path, api: FakeAPI) -> None:
    from playlisteval.eval.runs import drop_run, list_runs

    settings = project(tmp_path / "pg", store__url=pg_url, **OVERRIDES)
    settings.providers.openai_base_url = f"{api.url}/v1"
    indexed_seeded_store(settings, 3)
    build(settings)
    assert select_benchmark(settings).created
    engine = open_store(settings)
    api.queue(CHAT, fail(400, "bad request"), fail(400, "still bad"))
    options = JudgeOptions.from_settings(settings)
    first = run_judge(settings, JUDGE, options)
    assert (first.errors, first.state) == (2, "incomplete")
    assert rows(engine, "SELECT COUNT(*) FROM judge_error") == [(2,)]
    second = run_judge(settings, JUDGE, options)
    assert (second.run_id, second.errors, second.state, second.judged_now) == (first.run_id, 0, "finished", 2)
    [info] = list_runs(settings, engine)
    assert (info.main, info.counts.state, info.counts.judged, info.options_hash) == (
        True, "finished", first.pairs, options.options_hash)
    _, judged, errors = drop_run(engine, first.run_id)
    assert (judged, errors) == (first.pairs, 0) and rows(engine, "SELECT COUNT(*) FROM judge_run") == [(0,)]


# -- the difficulty gate's weak judges -----------------------------------------------------------------------


def test_a_weak_judge_fault_leaves_the_pair_open_and_select_asks_that_judge_again(
        built: Path, tmp_path: Path, api: FakeAPI) -> None:
    weak = {"models__F_first": "openai/weak-test"}
    settings = _fresh(built, tmp_path, api, **weak)
    engine = open_store(settings)
    no_verdict = Canned(body=chat_body("Both answers look fine to me."))
    # one call fails for good, one is a 500 (one attempt allowed), one judge never gives a verdict in 3 asks
    api.queue(CHAT, fail(400, "bad request"), fail(500, "upstream exploded", "server_error"), no_verdict,
              no_verdict, no_verdict)
    first = cli(settings, api, "select", "--json", **weak)
    assert first.exit_code == exitcodes.INCOMPLETE, first.output
    [out] = json_lines(first)
    assert not out["created"] and out["gate"]["undecided"] == 3 and out["gate"]["errors"] == 3
    assert rows(engine, "SELECT COUNT(*) FROM benchmark") == [(0,)]  # nothing drawn from a partial gate
    open_pairs = rows(engine, "SELECT id, difficulty FROM pair WHERE kept IS NULL")
    assert len(open_pairs) == 3
    for _, raw in open_pairs:
        record = json.loads(raw)
        assert record["F_first"]["outcome"] != "verdict" and record["F_first"]["fault"]
        assert record["F_second"]["outcome"] == "verdict"  # the other judge's verdict is kept
    asks = sorted(json.loads(raw)["F_first"]["asks"] for _, raw in open_pairs)
    assert asks == [1, 1, 3] and len(api.requests(CHAT)) == rows(engine, "SELECT COUNT(*) FROM pair")[0][0] + 2
    sim_calls = rows(engine, "SELECT COUNT(*) FROM model_call WHERE role = 'F_second'")
    before = len(api.requests(CHAT))
    second = cli(settings, api, "select", "--json", **weak)
    assert second.exit_code == exitcodes.DONE, second.output
    [again] = json_lines(second)
    assert again["created"] and again["gate"]["judged"] == 3 and again["gate"]["undecided"] == 0
    assert len(api.requests(CHAT)) - before == 3  # only the faulted judge, only on the open pairs
    assert rows(engine, "SELECT COUNT(*) FROM model_call WHERE role = 'F_second'") == sim_calls
    assert rows(engine, "SELECT COUNT(*) FROM pair WHERE kept IS NULL") == [(0,)]


def test_a_weak_judge_without_its_key_stops_the_gate_and_decides_nothing(
        built: Path, tmp_path: Path, api: FakeAPI) -> None:
    from playlisteval.commands.eval_output import gate_exit

    settings = _fresh(built, tmp_path, api, models__F_second="gemini/gemini-weak")
    out = select_benchmark(settings)  # past the preflight: the key is missing when the call is made
    total = rows(open_store(settings), "SELECT COUNT(*) FROM pair")[0][0]
    assert not out.created and out.gate.undecided == total and out.gate.stopped == "unavailable"
    assert gate_exit(out.gate) == exitcodes.INCOMPLETE and not api.requests(GENERATE)
    assert rows(open_store(settings), "SELECT COUNT(*) FROM pair WHERE kept IS NOT NULL") == [(0,)]


# -- retriever runs ------------------------------------------------------------------------------------------


def test_a_question_the_retriever_cannot_rank_is_an_error_not_a_miss(selected: Path, tmp_path: Path,
                                                                     api: FakeAPI) -> None:
    settings = _fresh(selected, tmp_path, api)
    engine = open_store(settings)
    [(item_id, gold, other)] = rows(
        engine, "SELECT i.id, s.segment1_id, s.segment2_id FROM benchmark_question q JOIN item i ON i.id = q.item_id "
                "JOIN seed s ON s.id = i.seed_id ORDER BY i.id LIMIT 1")
    with engine.begin() as conn:  # the gold segment was marked a duplicate after the build
        conn.execute(text("UPDATE segment SET duplicate_of = :o WHERE id = :g"), {"o": other, "g": gold})
    result = cli(settings, api, "eval", "retrieve", "--json")
    assert result.exit_code == exitcodes.INCOMPLETE, result.output
    [summary] = json_lines(result)
    questions = rows(engine, "SELECT COUNT(*) FROM benchmark_question")[0][0]
    assert summary["errors"] == 1 and summary["questions"] == questions - 1
    assert "GoldMissing" in summary["error_messages"][0]
    ranked = {i for (i,) in rows(engine, "SELECT item_id FROM ranking WHERE run_id = :r", r=summary["run_id"])}
    assert item_id not in ranked and len(ranked) == questions - 1
    assert rows(engine, "SELECT item_id FROM retrieval_error") == [(item_id,)]


# -- an older store --------------------------------------------------------------------------------------------


def test_an_older_store_moves_error_judgments_out_and_stamps_each_run_with_its_options_hash(
        selected: Path, tmp_path: Path, api: FakeAPI) -> None:
    from playlisteval.store.migrations import migrate

    settings = _fresh(selected, tmp_path, api)
    engine = open_store(settings)
    options = JudgeOptions.from_settings(settings, frames=4)
    [(pair_id, a_is_better), (other, other_side)] = rows(engine, "SELECT pair_id, a_is_better FROM benchmark_pair "
                                                                 "ORDER BY pair_id LIMIT 2")
    with engine.begin() as conn:  # what the code before issue 9 wrote: a failed call as a 0.5 judgment
        conn.execute(text("INSERT INTO judge_run (benchmark_id, judge, evidence, scope, swapped, settings, created_at, "
                          "modality, finished_at, options_hash) VALUES (1, 'openai/x', 'retrieved', 'domain', 0, "
                          ":s, 0, 'transcript', 1, '')"), {"s": json.dumps(options.as_settings())})
        run_id = conn.execute(text("SELECT max(id) FROM judge_run")).scalar_one()
        conn.execute(text("INSERT INTO judgment (run_id, pair_id, a_is_better, verdict, score, raw, evidence, outcome, "
                          "call_id) VALUES (:r, :p, :a, NULL, 0.5, 'PermanentModelError: boom', '{}', 'error', 0), "
                          "(:r, :q, :b, 'A', 1.0, '[[A]]', '{}', 'verdict', 0)"),
                     {"r": run_id, "p": pair_id, "a": a_is_better, "q": other, "b": other_side})
        conn.execute(text("DELETE FROM schema_migration WHERE name IN ('0201_judgment_errors_moved', "
                          "'0203_judge_run_options_stamped')"))
    migrate(engine)
    assert rows(engine, "SELECT pair_id, error FROM judge_error") == [(pair_id, "PermanentModelError: boom")]
    assert rows(engine, "SELECT pair_id FROM judgment WHERE run_id = :r", r=run_id) == [(other,)]
    assert rows(engine, "SELECT options_hash FROM judge_run WHERE id = :r", r=run_id) == [(options.options_hash,)]
