"""Issue 40 item 6, verdict health: a judge that never gives a verdict is flagged — never read as a 50 % judge.

The judge is the real OpenAI-compatible provider against the local wire fake (tests/provider_fakes.py),
run through the real CLI on a small sim-built benchmark: replies without [[A]] / [[B]], refusals, and
replies that are always [[A]]. Each run is then looked at where a run is shown: `eval judge` (its exit
status and warning), `eval runs`, the leaderboard, the sweeps table, the report and the viewer.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from starlette.testclient import TestClient

from playlisteval.actors.build_run import build
from playlisteval.analytics import Analytics
from playlisteval.analytics.rate_sections import sweeps
from playlisteval.analytics.rates import Bootstrap
from playlisteval.analytics.verdict_health import run_health
from playlisteval.cli import main
from playlisteval.commands import exitcodes
from playlisteval.config import Settings
from playlisteval.select.sampling import select_benchmark
from playlisteval.store import forget_engines, open_store
from playlisteval.view.app import make_app
from tests.eval_helpers import indexed_seeded_store
from tests.helpers import QUIET_SIM, env_for, project
from tests.provider_fakes import CHAT, Canned, FakeAPI, chat_body, fake_api
from tests.view_helpers import TOKEN, sources

OVERRIDES: dict[str, object] = dict(
    index__embedder="hash", eval__materialize_frames=False, eval__frames=8, eval__modality="transcript",
    eval__workers=1, select__difficulty_evidence="oracle", select__questions_per_domain=0,
    select__pairs_per_domain=10, runner__max_attempts=1, runner__backoff_base_s=0.01, **QUIET_SIM)
JUDGE = "openai/judge-test"
PRICES = '\n[prices."openai/judge-test"]\ninput = 1.0\noutput = 2.0\n'
NO_VERDICT = "Both answers describe the scene; I cannot tell which one is better."


@pytest.fixture(scope="module")
def selected(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three sim-built questions and the benchmark the sim weak judges drew from them."""
    root = tmp_path_factory.mktemp("health")
    settings = project(root, **OVERRIDES)
    indexed_seeded_store(settings, 3)
    build(settings)
    assert select_benchmark(project(root, **OVERRIDES)).pairs >= 6
    forget_engines()
    return root


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAPI]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-verdict-health-0000")
    with fake_api() as server:
        server.content = NO_VERDICT
        yield server


def _fresh(source: Path, tmp_path: Path, api: FakeAPI) -> Settings:
    root = tmp_path / "proj"
    project(root, **OVERRIDES)
    with (root / "playlisteval.toml").open("a") as f:
        f.write(PRICES)
    with sqlite3.connect(source / "playlisteval.db") as a, sqlite3.connect(root / "playlisteval.db") as b:
        a.backup(b)
    settings = project(root, **OVERRIDES)
    settings.providers.openai_base_url = f"{api.url}/v1"
    return settings


def cli(settings: Settings, api: FakeAPI, *args: str, **extra: object) -> Result:
    env = env_for(**OVERRIDES, **extra, providers__openai_base_url=f"{api.url}/v1")
    return CliRunner().invoke(main, ["--project", str(settings.root), *args], env=env, catch_exceptions=False)


def json_lines(result: Result) -> list[dict[str, Any]]:
    return [json.loads(line) for line in result.output.splitlines() if line.startswith("{")]


def test_a_judge_without_verdicts_is_flagged_in_eval_judge_runs_leaderboard_sweeps_report_and_viewer(
        selected: Path, tmp_path: Path, api: FakeAPI) -> None:
    settings = _fresh(selected, tmp_path, api)
    shown = cli(settings, api, "eval", "judge", "--judge", JUDGE)
    # every pair judged, yet not a result: the run's own exit status, and a warning naming it and its share
    assert shown.exit_code == exitcodes.FLAGGED, shown.output
    [main_run] = json_lines(cli(settings, api, "eval", "judge", "--judge", JUDGE, "--json"))
    n = main_run["pairs"]
    assert main_run["state"] == "finished" and main_run["no_verdict"] == n and main_run["accuracy"] == 0.5
    health = main_run["health"]
    assert health["no_verdict_share"] == 1.0 and health["no_verdict_flagged"] and health["flagged"]
    assert health["a_share"] is None and not health["one_letter_flagged"]  # no verdict at all: no letter either
    said = f"{n}/{n} no verdict (over 20 %)"
    assert health["health"] == f"unhealthy: {said}"
    assert f"UNHEALTHY JUDGE RUN {main_run['run_id']} ({JUDGE}): {said}" in " ".join(shown.output.split())
    # a sweep of the same judge (other frames): the sweeps table flags it, beside its main run's flag
    sweep = cli(settings, api, "eval", "judge", "--judge", JUDGE, "--frames", "4", "--json")
    assert sweep.exit_code == exitcodes.FLAGGED
    [sweep_run] = json_lines(sweep)
    with Analytics(open_store(settings), settings) as an:
        assert run_health(an)[sweep_run["run_id"]].flagged
        section = sweeps(an, None, Bootstrap.of(settings))
        [row] = [r for r in section.tables[0][1].rows if r[0] == str(sweep_run["run_id"])]
        headers = section.tables[0][1].headers
        assert row[headers.index("Verdict health")] == f"unhealthy: {said}"
        assert row[headers.index("Main run health")] == f"unhealthy: {said}"
        assert row[headers.index("Verdicts")] == f"{n}/{n} no verdict"
    # the leaderboard: the judge marked, its health named, and in the JSON rows
    board = cli(settings, api, "leaderboard")
    assert board.exit_code == 0 and f"{JUDGE} !" in board.output
    assert f"retrieved unhealthy: {said}" in " ".join(board.output.split())
    [row] = [r for r in json.loads(cli(settings, api, "leaderboard", "--json").output)["rows"]]
    assert row["flagged"] and row["health"] == f"retrieved unhealthy: {said}" and row["no_verdict_share_retrieved"] == 1
    # eval runs
    listed = cli(settings, api, "eval", "runs")
    assert "50.0% !" in listed.output and f"! run {main_run['run_id']} ({JUDGE}): unhealthy: {said}" in listed.output
    assert all(r["health"]["flagged"] for r in json_lines(cli(settings, api, "eval", "runs", "--json")))
    # the report: the leaderboard's and the sweeps' rows, and the notes
    out = tmp_path / "report.html"
    assert cli(settings, api, "report", str(out), "--quiet").exit_code == 0
    page = out.read_text()
    assert page.count(f"unhealthy: {said}") >= 3 and "Flagged unhealthy" in page
    # the viewer: the leaderboard's warning and table, and the runs page
    forget_engines()
    client = TestClient(make_app(settings, TOKEN, sources(settings)))
    assert client.get(f"/?token={TOKEN}", follow_redirects=False).status_code == 303
    leaderboard = client.get("/leaderboard").text
    assert 'id="unhealthy"' in leaderboard and f"unhealthy: {said}" in leaderboard
    runs = client.get("/runs").text
    assert runs.count(f"unhealthy: {said}") >= 2 and 'class="unhealthy"' in runs
    # the threshold is a setting: allowed every reply without a verdict, the same run is a plain result
    allowed = cli(settings, api, "eval", "judge", "--judge", JUDGE, "--json", analytics__max_no_verdict_share=1.0)
    assert allowed.exit_code == exitcodes.DONE and not json_lines(allowed)[0]["health"]["flagged"]


def test_refusals_ties_and_one_letter_answers_are_counted_apart(selected: Path, tmp_path: Path, api: FakeAPI) -> None:
    settings = _fresh(selected, tmp_path, api)
    api.content = "Model A names what the frames show. [[A]]"
    api.queue(CHAT, *[Canned(body=chat_body(None, refusal="I can't help with that.")) for _ in range(2)])
    result = cli(settings, api, "eval", "judge", "--judge", JUDGE, "--json")
    [run] = json_lines(result)
    health, n = run["health"], run["pairs"]
    assert (health["refusals"], health["no_verdict"], health["verdicts_a"], health["verdicts_b"]) == (2, 2, n - 2, 0)
    assert health["refusal_share"] == pytest.approx(2 / n) and health["a_share"] == 1.0
    # every verdict A: flagged and warned about, but no exit status of its own (a position-biased judge is a
    # finding); 2 of ≥ 6 replies without a verdict may or may not pass the 20 %: the exit says which
    assert health["one_letter_flagged"] and f"{n - 2}/{n - 2} verdicts A" in health["health"]
    assert result.exit_code == (exitcodes.FLAGGED if 2 / n > 0.2 else exitcodes.DONE), result.output
    assert "UNHEALTHY JUDGE RUN" in result.output  # on stderr, after the JSON line
    assert health["verdicts_mix"] == f"2/{n} no verdict (2 refusals) · A 100 %"
    # a tie (a reward model's equal scores) is a no verdict of its own kind, counted apart from refusals; made
    # here by hand (the sim reward model ties too rarely), so read in memory: the analytics file takes a stored
    # judgment for final and would keep the copy it has
    with open_store(settings).begin() as conn:
        conn.exec_driver_sql("UPDATE judgment SET verdict = NULL, score = 0.5, outcome = 'tie' WHERE id = "
                             f"(SELECT max(id) FROM judgment WHERE run_id = {int(run['run_id'])})")
    with Analytics(open_store(settings), settings, file=False) as an:
        tied = run_health(an, [run["run_id"]])[run["run_id"]]
    assert (tied.ties, tied.refusals, tied.no_verdict, tied.verdicts_a) == (1, 2, 3, n - 3)
    assert tied.verdicts_mix == f"3/{n} no verdict (2 refusals, 1 tie) · A 100 %"
