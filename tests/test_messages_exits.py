"""Issue 22, deliverable 6: messages and exit codes that do not mislead.

Each test drives the real command (click's CliRunner) or the real runner against the local wire fakes
(tests/provider_fakes.py) and checks what the user is told and the exit code a script reads.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from playlisteval.cli import main
from playlisteval.commands import exitcodes
from playlisteval.config import Settings
from playlisteval.errors import PermanentModelError, ProviderDown, TransientModelError
from playlisteval.models.failstreak import STREAK, FailStreak, failure_kind
from playlisteval.store import open_store
from tests.helpers import env_for, project
from tests.provider_fakes import CHAT, FakeAPI
from tests.test_eval_errors_runs import JUDGE, OVERRIDES, PRICES, _copy_store, api, built, fail, rows, selected

__all__ = ["api", "built", "selected"]  # the fixtures, shared with the judge-error tests


def _judging(source: Path, tmp_path: Path, api: FakeAPI, **extra: object) -> tuple[Settings, dict[str, str]]:
    """A copy of the selected benchmark's project judged by openai/judge-test at the fake (or ``extra``'s)
    address, and the environment of its commands."""
    root = tmp_path / "proj"
    env_over = {**OVERRIDES, "providers__openai_base_url": f"{api.url}/v1", **extra}
    project(root, **env_over)
    with (root / "playlisteval.toml").open("a") as f:
        f.write(PRICES)
    _copy_store(source, root)
    return project(root, **env_over), env_for(**env_over)


def _run(settings: Settings, env: dict[str, str], *args: str) -> Result:
    return CliRunner().invoke(main, ["--project", str(settings.root), *args], env=env, catch_exceptions=False)


# -- a provider that fails the same way N times in a row stops the run -------------------------------------


def test_only_connection_and_auth_failures_are_counted() -> None:
    assert failure_kind(TransientModelError("openai/m: connection error: Connection refused")) == "connection"
    assert failure_kind(PermanentModelError("openai/m: Error code: 401 - bad key")) == "auth 401"
    assert failure_kind(PermanentModelError("gemini/m: HTTP 403 PERMISSION_DENIED: no")) == "auth 403"
    assert failure_kind(PermanentModelError("openai/m: Error code: 400 - bad image")) is None
    assert failure_kind(TransientModelError("openai/m: Error code: 429 - slow down")) is None
    streak = FailStreak()
    refused = TransientModelError("x: connection error: refused")
    streak.failed("openai", refused, 3)
    streak.failed("openai", PermanentModelError("x: Error code: 401"), 3)  # another kind: the count restarts
    streak.failed("openai", refused, 3)
    streak.failed("openai", refused, 3)
    with pytest.raises(ProviderDown, match=r"3 tries in a row failed the same way \(connection\)"):
        streak.failed("openai", refused, 3)
    streak.ok("openai")
    assert streak.count("openai") == 0
    streak.failed("openai", refused, 0)  # 0: never stops
    streak.failed("openai", refused, 0)


def test_a_judge_whose_key_is_refused_stops_the_run_after_n_tries(selected: Path, tmp_path: Path,
                                                                    api: FakeAPI) -> None:
    settings, env = _judging(selected, tmp_path, api, runner__stop_after_same_failures=3, runner__max_attempts=6)
    pairs = rows(open_store(settings), "SELECT COUNT(*) FROM benchmark_pair")[0][0]
    assert pairs > 3
    api.queue(CHAT, *[fail(401, "Incorrect API key provided", "invalid_api_key") for _ in range(pairs)])
    result = _run(settings, env, "eval", "judge", "--judge", JUDGE)
    assert result.exit_code == exitcodes.INCOMPLETE, result.output
    # not one try per pair: the tries sent together at the start (issue 43: [runner] concurrency_start of them go
    # at once) may all fail, then no further try is sent
    assert 3 <= len(api.requests(CHAT)) <= 3 + settings.runner.concurrency_start - 1
    said = " ".join(result.output.split())  # the terminal's line breaks aside
    assert "3 tries in a row failed the same way (auth 401)" in said
    assert "stopped asking: the provider is not available" in said and "Incorrect API key" in said


def test_a_refused_connection_stops_the_run_early(selected: Path, tmp_path: Path, api: FakeAPI) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    extra = dict(runner__stop_after_same_failures=4, runner__max_attempts=6, runner__backoff_base_s=0.0,
                 runner__backoff_max_s=0.0, providers__openai_base_url=dead)
    settings, env = _judging(selected, tmp_path, api, **extra)
    result = _run(settings, env, "eval", "judge", "--judge", JUDGE)
    assert result.exit_code == exitcodes.INCOMPLETE, result.output
    assert "4 tries in a row failed the same way (connection)" in " ".join(result.output.split())
    engine = open_store(settings)
    tried = rows(engine, "SELECT COUNT(*) FROM model_call WHERE status = 'error' AND error NOT LIKE 'not sent:%'")[0][0]
    # four tries, plus those already in flight with them (issue 43: up to [runner] concurrency_start go at once),
    # then the pass stopped; a try that waited for a slot meanwhile is not sent
    assert 4 <= tried <= 4 + settings.runner.concurrency_start - 1
    assert STREAK.count("openai") == tried


# -- Ctrl-C, a broker or a store that cannot be reached ---------------------------------------------------


def _dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_ctrl_c_during_index_says_run_index_again_and_exits_130(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import playlisteval.actors.indexing as indexing

    def interrupted(*_a: object, **_k: object) -> None:
        raise KeyboardInterrupt

    project(tmp_path)
    monkeypatch.setattr(indexing, "index_collection", interrupted)
    result = CliRunner().invoke(main, ["--project", str(tmp_path), "index"], catch_exceptions=False)
    said = " ".join(result.output.split())
    assert result.exit_code == exitcodes.INTERRUPTED == 130
    assert "run `playlisteval index` again" in said and "resume" not in said


def test_ctrl_c_during_build_still_points_to_resume() -> None:
    from playlisteval.commands.outcomes import interrupted_hint

    assert "`playlisteval resume`" in interrupted_hint("build")
    assert "resume" not in interrupted_hint("select") and "`playlisteval select …` again" in interrupted_hint("select")


def test_exit_130_and_5_are_in_the_build_commands_help() -> None:
    shown = " ".join(CliRunner().invoke(main, ["build", "--help"]).output.split())
    assert "130 interrupted" in shown and "5 another build holds the items" in shown


def test_a_redis_broker_that_is_down_is_one_line(selected: Path, tmp_path: Path, api: FakeAPI) -> None:
    dead = f"redis://127.0.0.1:{_dead_port()}/0"
    settings, env = _judging(selected, tmp_path, api, broker__url=dead)
    result = _run(settings, env, "eval", "judge", "--judge", JUDGE)
    assert result.exit_code == exitcodes.ERROR
    said = " ".join(result.output.split())
    assert "cannot reach the Redis broker" in said and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) <= 3  # one message, wrapped by the terminal's width
    worker = _run(settings, env, "worker")
    assert worker.exit_code == exitcodes.ERROR and "cannot reach the Redis broker" in " ".join(worker.output.split())


def test_a_store_that_cannot_be_reached_is_one_line(tmp_path: Path) -> None:
    project(tmp_path)
    url = f"postgresql+psycopg://postgres:secret@127.0.0.1:{_dead_port()}/nothing"
    result = CliRunner().invoke(main, ["--project", str(tmp_path), "status"],
                                env=env_for(store__url=url), catch_exceptions=False)
    said = " ".join(result.output.split())
    assert result.exit_code == exitcodes.ERROR and "cannot open or migrate the store" in said
    assert "Connection refused" in said and "sqlalche.me" not in said and "secret" not in said
    assert len(result.output.strip().splitlines()) <= 3


def test_a_worker_logs_a_line_per_unit_at_the_default_verbosity(redis_url: str, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import structlog

    import playlisteval.actors.workers as workers

    def serve(app: object) -> None:  # the real serve blocks; what it logs per unit is structlog info
        structlog.get_logger("playlisteval.actors.evaluation").info("job.done", job=1, kind="judge")

    project(tmp_path)
    monkeypatch.setattr(workers, "serve", serve)
    result = CliRunner().invoke(main, ["--project", str(tmp_path), "worker"], env=env_for(broker__url=redis_url),
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "job.done" in result.output


# -- cost estimate: usage errors and a true reason for no seeds -------------------------------------------


@pytest.mark.parametrize("args", [["--seeds", "-5"], ["--seeds", "0"], ["--segment-minutes", "0"],
                                  ["--segment-minutes", "-1"]])
def test_cost_estimate_refuses_counts_that_mean_nothing(tmp_path: Path, args: list[str]) -> None:
    project(tmp_path)
    result = CliRunner().invoke(main, ["--project", str(tmp_path), "cost", "estimate", *args])
    assert result.exit_code == exitcodes.USAGE and "Invalid value" in result.output


def test_cost_estimate_without_seeds_says_why_not_run_index(tmp_path: Path) -> None:
    from sqlalchemy import text

    from tests.helpers import seeded_store

    empty = tmp_path / "empty"
    project(empty)
    said = " ".join(CliRunner().invoke(main, ["--project", str(empty), "cost", "estimate"]).output.split())
    assert "the collection is empty" in said
    indexed = tmp_path / "indexed"
    engine = seeded_store(project(indexed), 2)
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM seed"))
    result = CliRunner().invoke(main, ["--project", str(indexed), "cost", "estimate"])
    said = " ".join(result.output.split())
    assert result.exit_code == exitcodes.ERROR
    assert "passed the similarity band" in said and "run `playlisteval index`" not in said


# -- --json on eval drop and retry-failed ---------------------------------------------------------------


def test_eval_drop_and_retry_failed_speak_json(selected: Path, tmp_path: Path, api: FakeAPI) -> None:
    import json

    api.content = "[[A]]"
    settings, env = _judging(selected, tmp_path, api)
    assert _run(settings, env, "eval", "judge", "--judge", JUDGE).exit_code == exitcodes.DONE
    engine = open_store(settings)
    [(run_id, judged)] = rows(engine, "SELECT run_id, COUNT(*) FROM judgment GROUP BY run_id")
    dropped = _run(settings, env, "eval", "drop", str(run_id), "--yes", "--json")
    assert dropped.exit_code == 0, dropped.output
    out = json.loads(dropped.output)
    assert (out["run_id"], out["judge"], out["judgments"], out["deleted"]) == (run_id, JUDGE, judged, True)
    assert rows(engine, "SELECT COUNT(*) FROM judgment") == [(0,)]
    retried = _run(settings, env, "retry-failed", "--json")
    out = json.loads(retried.output)
    assert retried.exit_code == out["exit_code"] == exitcodes.DONE
    assert out["retried"] == 0 and out["items"] == [] and sum(out["states"].values()) > 0


# -- names, empty inputs, a report path through a file --------------------------------------------------


def _add(root: Path, *args: str) -> Result:
    return CliRunner().invoke(main, ["--project", str(root), "add", *args], catch_exceptions=False)


def test_a_domain_with_a_path_separator_is_refused_at_add_and_in_a_manifest(tmp_path: Path) -> None:
    project(tmp_path)
    folder = tmp_path / "P1"
    folder.mkdir()
    (folder / "v.mp4").write_bytes(b"")
    result = _add(tmp_path, "Edu/cation", str(folder))
    assert result.exit_code == exitcodes.USAGE and "'Edu/cation' contains a path separator" in result.output
    manifest = tmp_path / "m.csv"
    manifest.write_text("domain,playlist,path\nHistory,P,P1/v.mp4\nEdu\\cation,P,P1/v.mp4\n")
    result = _add(tmp_path, "--manifest", str(manifest))
    said = " ".join(result.output.split())
    assert result.exit_code == exitcodes.ERROR and "entry 2: domain name 'Edu\\\\cation'" in said
    rows_now = rows(open_store(project(tmp_path)), "SELECT COUNT(*) FROM domain")
    assert rows_now == [(0,)]  # nothing was added, not even the good row


def test_an_empty_folder_or_manifest_at_add_is_a_note_and_exit_3(tmp_path: Path) -> None:
    project(tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    result = _add(tmp_path, "Education", str(empty))
    said = " ".join(result.output.split())
    assert result.exit_code == exitcodes.INCOMPLETE and "was added or is in the collection" in said
    manifest = tmp_path / "m.csv"
    manifest.write_text("domain,playlist,path\n")
    result = _add(tmp_path, "--manifest", str(manifest), "--json")
    said = " ".join(result.output.split())
    assert result.exit_code == exitcodes.INCOMPLETE and "was added or is in the collection" in said


def test_report_into_a_path_through_a_file_names_the_file(tmp_path: Path) -> None:
    project(tmp_path)
    (tmp_path / "afile").write_text("x")
    result = CliRunner().invoke(main, ["--project", str(tmp_path), "report", str(tmp_path / "afile" / "r.html")])
    said = " ".join(result.output.split())
    assert result.exit_code == exitcodes.USAGE and "afile is a file, not a folder" in said
    assert "File exists" not in said


# -- a second build while another works on the items ----------------------------------------------------


def test_a_second_build_says_another_build_holds_the_items_and_exits_busy(built: Path, tmp_path: Path) -> None:
    import json
    import subprocess
    import time

    from sqlalchemy import text

    root = tmp_path / "second"
    project(root, **OVERRIDES)
    _copy_store(built, root)
    settings = project(root, **OVERRIDES)
    engine = open_store(settings)
    other = subprocess.Popen(["sleep", "60"])  # the first build: alive on this machine, not this process
    try:
        from playlisteval.store import identity

        process = f"{socket.gethostname()}:{other.pid}:{identity.place()}.00000000"  # store/identity.py
        owner = f"{process}/lease-1"
        with engine.begin() as conn:
            conn.execute(text("UPDATE item SET state = 'qa_generated', lease_owner = :o, lease_expires = :e, "
                              "lease_renewed_at = :r"), {"o": owner, "e": time.time() + 600, "r": time.time()})
        n = rows(engine, "SELECT COUNT(*) FROM item")[0][0]
        result = _run(settings, env_for(**OVERRIDES), "build")
        said = " ".join(result.output.split())
        assert result.exit_code == exitcodes.BUSY == 5, result.output
        assert f"{n} item(s) unfinished: another build holds them" in said and f"{process}: {n} leased" in said
        assert "left unfinished" not in said
        as_json = _run(settings, env_for(**OVERRIDES), "build", "--json")
        assert as_json.exit_code == exitcodes.BUSY and json.loads(as_json.stdout)["exit_code"] == exitcodes.BUSY
    finally:
        other.kill()
        other.wait()
    # the holder is gone: its items are this build's to resume, and the build takes them
    assert rows(engine, "SELECT COUNT(*) FROM item WHERE state = 'qa_generated'")[0][0] == n
    again = _run(settings, env_for(**OVERRIDES), "build")
    assert again.exit_code != exitcodes.BUSY, again.output


def test_a_piped_judge_run_with_v_logs_a_line_per_question(selected: Path, tmp_path: Path, api: FakeAPI) -> None:
    import json

    api.content = "[[A]]"
    settings, env = _judging(selected, tmp_path, api)
    questions = rows(open_store(settings), "SELECT COUNT(DISTINCT p.item_id) FROM benchmark_pair b "
                                           "JOIN pair p ON p.id = b.pair_id")[0][0]
    result = CliRunner().invoke(main, ["--project", str(settings.root), "-v", "eval", "judge", "--judge", JUDGE],
                                env={**env, "PLAYLISTEVAL_LOG_JSON": "1"}, catch_exceptions=False)
    assert result.exit_code == exitcodes.DONE, result.output
    lines = [json.loads(line) for line in result.stderr.splitlines() if line.startswith("{")]
    done = [e for e in lines if e.get("event") == "job.done" and e.get("kind") == "judge"]
    assert len(done) == questions > 1 and len({e["item"] for e in done}) == questions
    assert any(e.get("event") == "progress" and e.get("step") == "eval" for e in lines)
