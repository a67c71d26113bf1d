"""Issue 42 items 2 and 3: a reasoning judge's thinking is never its verdict, and `eval rescore` re-reads a run.

The judge is the real OpenAI provider (the openai SDK) against a local HTTP server speaking the chat-completions
wire (tests/provider_fakes.py); the store is a small sim-built benchmark, copied per test.
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
from playlisteval.cli import main
from playlisteval.commands import exitcodes
from playlisteval.config import Settings
from playlisteval.eval.verdicts import parse_verdict
from playlisteval.models.reasoning import answer_of, message_thinking, split, thinking_of
from playlisteval.models.request import ProviderReply
from playlisteval.models.runner import Runner
from playlisteval.prompts.schemas import SCHEMAS
from playlisteval.select.sampling import select_benchmark
from playlisteval.store import open_store
from tests.eval_helpers import indexed_seeded_store
from tests.helpers import QUIET_SIM, env_for, project
from tests.provider_fakes import CHAT, Canned, FakeAPI, chat_body, fake_api

OVERRIDES: dict[str, object] = dict(
    index__embedder="hash", eval__materialize_frames=False, eval__frames=8, eval__modality="transcript",
    eval__workers=1, select__difficulty_evidence="oracle", select__questions_per_domain=0,
    select__pairs_per_domain=10, runner__max_attempts=1, runner__backoff_base_s=0.01, **QUIET_SIM)
JUDGE = "openai/judge-test"
PRICES = '\n[prices."openai/judge-test"]\ninput = 1.0\noutput = 2.0\nthinking = 2.0\n'
THINKING_A = "<think>The frames show the red kettle… [[A]] looks right…</think> The frames do not let me decide."


# -- the split itself ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("reply", "verdict"), [
    (THINKING_A, None),
    ("<think>…[[A]]…</think> I cannot tell.", None),
    ("<think>weighing both</think> [[B]]", "B"),
    ("<THINKING>[[A]]</THINKING>\nModel B is right. [[B]]", "B"),
    ("<think>[[A]] and then the tokens ran out", None),  # never closed: all of it is thinking
    ("the template opened the block: [[A]]</think> no verdict here", None),  # a lone closing tag
    ("[[A]] <think>on second thought [[B]]</think>", "A"),
    ("no thinking at all [[A]] … [[B]]", "B"),  # the last token still wins
    ("", None),
])
def test_a_verdict_is_read_from_the_answer_never_from_the_thinking(reply: str, verdict: str | None) -> None:
    assert parse_verdict(reply) == verdict


def test_the_split_keeps_both_parts() -> None:
    parts = split(THINKING_A)
    assert parts.answer == "The frames do not let me decide."
    assert "[[A]] looks right" in parts.thinking
    assert answer_of("plain") == "plain" and split("plain").thinking == ""
    assert thinking_of("<think>b</think> x", given="a") == "a\nb"


def test_json_is_read_from_the_answer_never_from_the_thinking() -> None:
    schema = SCHEMAS["TextAnswer"]
    reply = json.dumps({"explanation": "e", "answer": "in the thinking"})
    parsed, problem = Runner._parse(ProviderReply(text=f"<think>{reply}</think> sorry, no object"), schema)
    assert parsed is None and problem is not None
    answer = json.dumps({"explanation": "e", "answer": "after it"})
    parsed, problem = Runner._parse(ProviderReply(text=f"<think>{reply}</think>\n{answer}"), schema)
    assert problem is None and parsed == {"explanation": "e", "answer": "after it"}


def test_message_thinking_reads_the_reasoning_fields() -> None:
    from openai.types.chat import ChatCompletion

    body = chat_body("I cannot tell")
    body["choices"][0]["message"]["reasoning_content"] = "clearly [[A]]"
    message = ChatCompletion.model_validate(body).choices[0].message
    assert message_thinking(message) == "clearly [[A]]"
    body["choices"][0]["message"].pop("reasoning_content")
    body["choices"][0]["message"]["reasoning"] = "hm"
    assert message_thinking(ChatCompletion.model_validate(body).choices[0].message) == "hm"
    assert message_thinking(None) == ""


# -- over the wire -------------------------------------------------------------------------------------------


def test_gemini_thought_parts_are_thinking_never_the_verdict(tmp_path: Path, api: FakeAPI,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from playlisteval.models.request import ModelRequest, TextPart
    from tests.provider_fakes import GENERATE, runner_for

    monkeypatch.setenv("GEMINI_API_KEY", "fake-gemini-key-reasoning")
    settings = project(tmp_path / "proj")
    settings.providers.gemini_base_url = api.url
    body = {"candidates": [{"content": {"role": "model", "parts": [
        {"text": "Model A is right: [[A]]", "thought": True}, {"text": "I cannot tell."}]},
        "finishReason": "STOP", "index": 0}], "modelVersion": "gemini-test", "usageMetadata": api.gemini_usage}
    api.queue(GENERATE, Canned(body=body))
    response = runner_for(settings).call(ModelRequest(role="G", parts=[TextPart(text="Which is better?")]),
                                         model="gemini/gemini-test")
    assert (response.text, response.thinking) == ("I cannot tell.", "Model A is right: [[A]]")
    assert parse_verdict(response.text) is None and response.usage.thinking_tokens == 50



def _copy_store(src: Path, dst: Path) -> None:
    with sqlite3.connect(src / "playlisteval.db") as a, sqlite3.connect(dst / "playlisteval.db") as b:
        a.backup(b)


@pytest.fixture(scope="module")
def selected(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three sim-built questions with a benchmark drawn by the sim weak judges."""
    root = tmp_path_factory.mktemp("selected")
    settings = project(root, **OVERRIDES)
    indexed_seeded_store(settings, 3)
    build(settings)
    out = select_benchmark(project(root, **OVERRIDES))
    assert out.created and out.pairs >= 6
    return root


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAPI]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-reasoning-0000")
    with fake_api() as server:
        yield server


def _fresh(source: Path, tmp_path: Path) -> Settings:
    root = tmp_path / "proj"
    project(root, **OVERRIDES)
    with (root / "playlisteval.toml").open("a") as f:
        f.write(PRICES)
    _copy_store(source, root)
    return project(root, **OVERRIDES)


def cli(settings: Settings, api: FakeAPI, *args: str) -> Result:
    env = env_for(**OVERRIDES, providers__openai_base_url=f"{api.url}/v1")
    return CliRunner().invoke(main, ["--project", str(settings.root), *args], env=env, catch_exceptions=False)


def rows(engine: Engine, sql: str, **params: Any) -> list[Any]:
    with engine.connect() as conn:
        return list(conn.execute(text(sql), params))


def _judge(settings: Settings, api: FakeAPI) -> tuple[Engine, int]:
    result = cli(settings, api, "eval", "judge", "--judge", JUDGE)
    assert result.exit_code in (exitcodes.DONE, exitcodes.FLAGGED), result.output
    engine = open_store(settings)
    [(run_id,)] = rows(engine, "SELECT id FROM judge_run")
    return engine, int(run_id)


def test_a_verdict_only_in_the_thinking_is_no_verdict_on_every_pair_and_the_raw_reply_is_kept_whole(
        selected: Path, tmp_path: Path, api: FakeAPI) -> None:
    api.content = THINKING_A
    settings = _fresh(selected, tmp_path)
    engine, run_id = _judge(settings, api)
    judged = rows(engine, "SELECT verdict, outcome, score, raw FROM judgment WHERE run_id = :r", r=run_id)
    pairs = rows(engine, "SELECT COUNT(*) FROM benchmark_pair")[0][0]
    assert len(judged) == pairs and len(api.requests(CHAT)) == pairs
    assert all(v is None and o == "no_verdict" and s == 0.5 and raw == THINKING_A for v, o, s, raw in judged)
    # the thinking tokens the server reported are counted as such (completion 300 = 200 answer + 100 thinking)
    calls = rows(engine, "SELECT output_tokens, thinking_tokens FROM model_call WHERE purpose = 'eval'")
    assert calls and all(c == (200, 100) for c in calls)


def test_a_reasoning_field_is_never_the_verdict(selected: Path, tmp_path: Path, api: FakeAPI) -> None:
    settings = _fresh(selected, tmp_path)
    pairs = rows(open_store(settings), "SELECT COUNT(*) FROM benchmark_pair")[0][0]
    body = chat_body("I cannot tell", usage=api.usage)
    body["choices"][0]["message"]["reasoning_content"] = "Model A is plainly right: [[A]]"
    api.queue(CHAT, *[Canned(body=body) for _ in range(pairs)])
    engine, run_id = _judge(settings, api)
    judged = rows(engine, "SELECT verdict, outcome, raw FROM judgment WHERE run_id = :r", r=run_id)
    assert len(judged) == pairs and all(r == (None, "no_verdict", "I cannot tell") for r in judged)
    stored = rows(engine, "SELECT response FROM response_cache WHERE provider = 'openai'")
    cached = [json.loads(r) if isinstance(r, str) else r for (r,) in stored]
    assert cached and all(c["thinking"] == "Model A is plainly right: [[A]]" for c in cached)


def test_a_verdict_after_the_thinking_counts(selected: Path, tmp_path: Path, api: FakeAPI) -> None:
    api.content = "<think>A cites no scene; B cites both. [[A]]? no.</think> Model B. [[B]]"
    settings = _fresh(selected, tmp_path)
    engine, run_id = _judge(settings, api)
    verdicts = {v for (v,) in rows(engine, "SELECT verdict FROM judgment WHERE run_id = :r", r=run_id)}
    assert verdicts == {"B"}


def test_rescore_rereads_the_stored_replies_into_a_new_run_without_a_model_call(
        selected: Path, tmp_path: Path, api: FakeAPI) -> None:
    api.content = THINKING_A
    settings = _fresh(selected, tmp_path)
    engine, run_id = _judge(settings, api)
    pairs = rows(engine, "SELECT COUNT(*) FROM benchmark_pair")[0][0]
    # the run as the old parser stored it: the [[A]] of the thinking read as a verdict
    with engine.begin() as conn:
        conn.execute(text("UPDATE judgment SET verdict = 'A', outcome = 'verdict', "
                          "score = CASE WHEN a_is_better THEN 1.0 ELSE 0.0 END WHERE run_id = :r"), {"r": run_id})
    ledger_before, requests_before = rows(engine, "SELECT COUNT(*) FROM model_call")[0][0], len(api.requests(CHAT))
    result = cli(settings, api, "eval", "rescore", str(run_id), "--json")
    assert result.exit_code == exitcodes.DONE, result.output
    summary = json.loads(result.output)
    assert rows(engine, "SELECT COUNT(*) FROM model_call")[0][0] == ledger_before  # no row on the ledger
    assert len(api.requests(CHAT)) == requests_before  # no model call
    new = summary["run_id"]
    assert new != run_id and summary["rescore_of"] == run_id and summary["changes"] == {"A→none": pairs}
    assert (summary["changed"], summary["judged"], summary["missing"], summary["accuracy"]) == (pairs, pairs, 0, 0.5)
    [(raw_settings, judge)] = rows(engine, "SELECT settings, judge FROM judge_run WHERE id = :r", r=new)
    recorded = json.loads(raw_settings) if isinstance(raw_settings, str) else raw_settings
    assert recorded["rescore_of"] == run_id and judge == JUDGE
    judged = rows(engine, "SELECT verdict, outcome, raw FROM judgment WHERE run_id = :r", r=new)
    assert len(judged) == pairs and all(r == (None, "no_verdict", THINKING_A) for r in judged)
    # the original run is left as it was
    assert {v for (v,) in rows(engine, "SELECT verdict FROM judgment WHERE run_id = :r", r=run_id)} == {"A"}

    # a stored reply changed by hand: the next rescore reports that change, and replaces the earlier rescore
    [(pair_id, a_is_better)] = rows(engine, "SELECT pair_id, a_is_better FROM judgment WHERE run_id = :r "
                                            "ORDER BY pair_id LIMIT 1", r=run_id)
    with engine.begin() as conn:
        conn.execute(text("UPDATE judgment SET raw = :raw WHERE run_id = :r AND pair_id = :p"),
                     {"raw": "<think>hm</think> Model B. [[B]]", "r": run_id, "p": pair_id})
    text_out = cli(settings, api, "eval", "rescore", str(run_id))
    assert text_out.exit_code == exitcodes.DONE, text_out.output
    assert f"A→no verdict {pairs - 1}" in text_out.output and "A→B 1" in text_out.output
    assert f"replaced earlier rescore run(s) {new}" in text_out.output
    assert rows(engine, "SELECT COUNT(*) FROM judge_run")[0][0] == 2  # the run and its one rescore
    listed = cli(settings, api, "eval", "runs")
    assert listed.exit_code == exitcodes.DONE and "rescore" in listed.output, listed.output
    [(latest,)] = rows(engine, "SELECT max(id) FROM judge_run")
    [(verdict, score)] = rows(engine, "SELECT verdict, score FROM judgment WHERE run_id = :r AND pair_id = :p",
                              r=latest, p=pair_id)
    assert verdict == "B" and score == (0.0 if a_is_better else 1.0)
    assert rows(engine, "SELECT COUNT(*) FROM model_call")[0][0] == ledger_before


def test_rescore_counts_a_missing_reply_and_does_not_guess_it(selected: Path, tmp_path: Path, api: FakeAPI) -> None:
    api.content = "<think>x</think> [[A]]"
    settings = _fresh(selected, tmp_path)
    engine, run_id = _judge(settings, api)
    pairs = rows(engine, "SELECT COUNT(*) FROM benchmark_pair")[0][0]
    [(pair_id,)] = rows(engine, "SELECT pair_id FROM judgment WHERE run_id = :r ORDER BY pair_id LIMIT 1", r=run_id)
    with engine.begin() as conn:  # the reply gone, and no cached answer to find it by
        conn.execute(text("UPDATE judgment SET raw = '', call_id = 0 WHERE run_id = :r AND pair_id = :p"),
                     {"r": run_id, "p": pair_id})
    result = cli(settings, api, "eval", "rescore", str(run_id), "--json")
    assert result.exit_code == exitcodes.INCOMPLETE, result.output
    summary = json.loads(result.output.splitlines()[-1])
    assert (summary["missing"], summary["missing_pairs"], summary["judged"], summary["changed"]) == (
        1, [pair_id], pairs - 1, 0)
    assert rows(engine, "SELECT COUNT(*) FROM judgment WHERE run_id = :r AND pair_id = :p",
                r=summary["run_id"], p=pair_id)[0][0] == 0


def test_rescore_refuses_an_unknown_run(selected: Path, tmp_path: Path, api: FakeAPI) -> None:
    settings = _fresh(selected, tmp_path)
    result = CliRunner().invoke(main, ["--project", str(settings.root), "eval", "rescore", "999"],
                                env=env_for(**OVERRIDES))
    assert result.exit_code == exitcodes.ERROR and "no judge run 999" in result.output
