"""Secrets never at rest or on screen (issue 25, deliverable 2).

A provider (or a proxy in front of it) that quotes the key it was sent in an error body must not put that
key in the store, a log, the report, an export or anything a command prints: one redaction
(playlisteval/logs/redaction.py) sits at the store's cursor, the logs' processors and the CLI's streams.
"""

from __future__ import annotations

import io
import json
import logging
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog
from click.testing import CliRunner
from sqlalchemy import text
from sqlmodel import select as sa_select

from playlisteval import logs
from playlisteval.cli import main
from playlisteval.logs.redaction import KEY_ENV, MASK, RedactingStream, redact, redact_known
from playlisteval.models.providers import gemini, hf, openai_compat
from playlisteval.models.request import ProviderReply, ToolCall
from playlisteval.store import forget_engines, open_store
from playlisteval.store.engine import transaction
from playlisteval.store.redacted import carries_error_text
from playlisteval.store.tables import ResponseCache
from tests.helpers import QUIET_SIM, env_for, project, seeded_store
from tests.provider_fakes import CHAT, Canned, FakeAPI, fake_api

#: made-up key-shaped strings, assembled at run time so that no key-shaped literal sits in the repository
KEY = "sk-" + "proj-REDACTME0123456789abcdef"
GOOGLE_A = "AI" + "zaSyA-1234567890abcdefghijkl"
GOOGLE_B = "AI" + "zaSyB0987654321zyxwvutsrqponm"
HF = "hf" + "_abcdefghijklmnopqrstuv"
PLAIN_KEY = "Zq9Xv7Wt5Ur3Sp1Oq"  # a key with no provider shape: found only because it is the variable's value


# -- the function ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("raw", "hidden"), [
    (f"Incorrect API key provided: {KEY}.", KEY),
    ("Authorization: Bearer abc.DEF-123_xyz", "abc.DEF-123_xyz"),
    (f"GET https://generativelanguage.googleapis.com/v1beta/models?key={GOOGLE_A}&alt=sse",
     GOOGLE_A),
    ("request failed: ?api_key=hunter2hunter2 rejected", "hunter2hunter2"),
    ("x-goog-api-key: 0123456789abcdef", "0123456789abcdef"),
    (f"API key not valid: {GOOGLE_B}", GOOGLE_B),
    (f"token {HF} expired", HF),
])
def test_every_shape_of_secret_is_hidden(raw: str, hidden: str) -> None:
    out = redact(raw, environ={})
    assert hidden not in out and MASK in out, out


def test_the_values_of_the_key_variables_are_hidden_whatever_their_shape() -> None:
    env = {"OPENAI_API_KEY": PLAIN_KEY, "SOME_SERVICE_TOKEN": "t0k3n-value-long", "HOME": "/home/someone"}
    out = redact(f"proxy said: {PLAIN_KEY} is wrong; t0k3n-value-long; home /home/someone", environ=env)
    assert PLAIN_KEY not in out and "t0k3n-value-long" not in out
    assert "/home/someone" in out  # only secrets: an ordinary variable's value stays


def test_a_key_set_or_changed_after_a_first_look_is_hidden(monkeypatch: pytest.MonkeyPatch) -> None:
    """The process environment's secrets are kept between calls: a key set, changed or removed later is
    seen at the next call, not the one of the first look."""
    monkeypatch.delenv("PE_TEST_SERVICE_API_KEY", raising=False)
    assert redact(f"said {PLAIN_KEY}") == f"said {PLAIN_KEY}"  # the first look: no such key yet
    monkeypatch.setenv("PE_TEST_SERVICE_API_KEY", PLAIN_KEY)
    assert PLAIN_KEY not in redact(f"said {PLAIN_KEY}")
    monkeypatch.setenv("PE_TEST_SERVICE_API_KEY", PLAIN_KEY[::-1])
    assert redact(f"said {PLAIN_KEY}") == f"said {PLAIN_KEY}" and PLAIN_KEY[::-1] not in redact(PLAIN_KEY[::-1])
    monkeypatch.delenv("PE_TEST_SERVICE_API_KEY")
    assert redact(f"said {PLAIN_KEY[::-1]}") == f"said {PLAIN_KEY[::-1]}"


def test_text_without_secrets_is_left_as_it_was() -> None:
    plain = "C2.1: verifier reply unusable: no JSON object (the key point is missing)"
    assert redact(plain, environ={}) is plain or redact(plain, environ={}) == plain


def test_every_provider_key_variable_is_known_to_the_redaction() -> None:
    """The bottom layer lists the providers' variables itself (it may not import them): kept in step here."""
    classes = [gemini.GeminiProvider, *(c for c in vars(openai_compat).values()
                                        if isinstance(c, type) and hasattr(c, "key_env")), hf.HFProvider]
    names = {name for cls in classes for name in getattr(cls, "key_env", ())}
    assert names and names <= set(KEY_ENV), names - set(KEY_ENV)


def test_the_stream_and_the_log_processors_redact(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", PLAIN_KEY)
    inner = io.StringIO()
    RedactingStream(inner).write(f"error: 401 {PLAIN_KEY}\n")
    assert PLAIN_KEY not in inner.getvalue() and MASK in inner.getvalue()
    err = io.StringIO()
    monkeypatch.setattr("sys.stderr", err)
    logs.configure(0)
    structlog.get_logger("t").warning("provider said", reply=f"bad key {PLAIN_KEY}")
    logging.getLogger("dramatiq.test").warning("url ?key=%s", PLAIN_KEY)
    assert "provider said" in err.getvalue() and "url ?key=" in err.getvalue()
    assert PLAIN_KEY not in err.getvalue(), err.getvalue()


def test_only_statements_writing_error_texts_are_rewritten() -> None:
    assert carries_error_text("UPDATE item SET state=?, error=? WHERE item.id = ?")
    assert carries_error_text("INSERT INTO judge_error (run_id, pair_id, error) VALUES (?, ?, ?)")
    assert not carries_error_text("INSERT INTO chunk (video_id, idx, start, \"end\", text) VALUES (?, ?, ?, ?, ?)")
    assert not carries_error_text("SELECT item.error FROM item")


@pytest.mark.parametrize("store", ["sqlite", "postgresql"])
def test_the_store_never_holds_a_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, store: str,
                                     request: pytest.FixtureRequest) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", PLAIN_KEY)
    url = {"store__url": request.getfixturevalue("pg_url")} if store == "postgresql" else {}
    engine = open_store(project(tmp_path, **url))
    with transaction(engine) as s:
        s.execute(text("CREATE TABLE t (id INTEGER PRIMARY KEY, error TEXT)"))
        s.execute(text("INSERT INTO t (id, error) VALUES (1, :e)"), {"e": f"401: {PLAIN_KEY}"})
        s.execute(text("INSERT INTO t (id, error) VALUES (:i, :e)"),
                  [{"i": 2, "e": f"Bearer {PLAIN_KEY}"}, {"i": 3, "e": "plain"}])
        s.execute(text("UPDATE t SET error = :e WHERE id = 3"), {"e": f"quoted {PLAIN_KEY} again"})
        assert s.connection().exec_driver_sql("UPDATE t SET error = error WHERE id = 0").rowcount == 0  # no params
    with transaction(engine) as s:
        stored = [r[0] for r in s.execute(text("SELECT error FROM t ORDER BY id"))]
    assert stored == [f"401: {MASK}", f"Bearer {MASK}", f"quoted {MASK} again"]


# -- a provider that echoes the key: found nowhere ------------------------------------------------------------
def echo_401(api: FakeAPI, n: int = 400) -> None:
    body = {"error": {"message": f"Incorrect API key provided: {KEY}. You can find your API key at "
                                 f"https://example.test/keys?key={KEY}", "type": "invalid_request_error",
                      "code": "invalid_api_key"}}
    api.queue(CHAT, *[Canned(401, body) for _ in range(n)])


@pytest.fixture
def api() -> Iterator[FakeAPI]:
    with fake_api() as server:
        yield server


def dump_sqlite(path: Path) -> str:
    """Every value of every table of the store file, as text."""
    con = sqlite3.connect(path)
    try:
        out = []
        for (table,) in con.execute("SELECT name FROM sqlite_master WHERE type='table'"):
            for row in con.execute(f'SELECT * FROM "{table}"'):
                out.append(" ".join(v.decode("latin-1") if isinstance(v, bytes) else str(v) for v in row))
        return "\n".join(out)
    finally:
        con.close()


def test_a_provider_that_quotes_the_key_leaves_it_nowhere(tmp_path: Path, api: FakeAPI,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    echo_401(api)
    overrides = {**QUIET_SIM, "providers__openai_base_url": f"{api.url}/v1", "runner__backoff_base_s": 0.01,
                 "models__C2_transcript_answer": "openai/gpt-5.4-mini"}
    settings = project(tmp_path, **overrides)
    seeded_store(settings, 2)
    forget_engines()
    env = {**env_for(**overrides), "OPENAI_API_KEY": KEY}
    cli = CliRunner()

    def run(*args: str) -> str:
        result = cli.invoke(main, ["--project", str(tmp_path), *args], env=env)
        return f"{result.output}\n{getattr(result, 'stderr', '')}\n{result.exception!r}"

    printed = [run("build"), run("build", "--json"), run("status"), run("status", "--json"),
               run("show", "1"), run("show", "1", "--json"), run("-vv", "retry-failed"),
               run("report", str(tmp_path / "report.html")), run("export", str(tmp_path / "out"))]
    sent = api.requests(CHAT)
    assert sent and all(s.headers.get("authorization") == f"Bearer {KEY}" for s in sent)  # the key was used
    store = dump_sqlite(Path(settings.store_url.removeprefix("sqlite:///")))
    assert "Incorrect API key provided" in store and MASK in store  # the echo was stored, redacted
    assert "Incorrect API key provided" in "\n".join(printed)  # and shown, redacted
    files = "\n".join(p.read_text(errors="replace") for p in tmp_path.rglob("*")
                      if p.is_file() and p.suffix in (".html", ".json", ".md", ".yaml", ".jsonl", ".log", ".txt"))
    for where, textual in [("store", store), ("terminal and logs", "\n".join(printed)), ("report/export", files)]:
        assert KEY not in textual, f"the key is in the {where}"
    assert json.dumps(KEY)[1:-1] not in store


# -- a key inside a normal 200 reply (issue 44): hidden by the runner, and again by every page -------------------
def test_model_text_loses_the_known_keys_and_nothing_else(monkeypatch: pytest.MonkeyPatch) -> None:
    """``redact_known`` hides the key variables' values and the key shapes; the header and query patterns,
    which would blank ordinary prose in an answer, are not applied to model text."""
    monkeypatch.setenv("OPENAI_API_KEY", PLAIN_KEY)
    prose = "The basic idea: the bearer bonds, key=3 and token=5 on the slide; Authorization: granted."
    assert redact_known(prose) == prose
    said = f"Gateway notice: authorised with {PLAIN_KEY} (also {KEY}, {GOOGLE_A})."
    assert redact_known(said) == f"Gateway notice: authorised with {MASK} (also {MASK}, {MASK})."


def test_the_runner_stores_and_returns_a_reply_without_the_key(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The reply's text, thinking, raw body and tool-call arguments are redacted before parsing, caching and
    returning; a thought signature goes back to the provider as it came; a row cached before the fix is
    redacted when read."""
    from tests.test_runner import make, req

    monkeypatch.setenv("OPENAI_API_KEY", PLAIN_KEY)
    runner, provider, _ = make(tmp_path, [])
    signature = f"c2lnbmF0dXJl{PLAIN_KEY}"
    answer = json.dumps({"explanation": f"notice: key {PLAIN_KEY} in use", "answer": "42"})
    provider.complete = lambda *_a, **_k: ProviderReply(  # type: ignore[method-assign]
        text=answer, thinking=f"thinking about {PLAIN_KEY}", raw={"notice": f"key {PLAIN_KEY}", "n": 1},
        tool_calls=[ToolCall(id="c1", name="search", arguments={"q": PLAIN_KEY}, signature=signature)])
    got = runner.call(req())
    assert got.parsed == {"explanation": f"notice: key {MASK} in use", "answer": "42"}
    assert PLAIN_KEY not in got.model_dump_json().replace(signature, "")
    assert got.tool_calls[0].signature == signature and got.raw["n"] == 1
    with transaction(runner.engine) as s:
        [cached] = s.exec(sa_select(ResponseCache)).all()
        assert PLAIN_KEY not in json.dumps(cached.response).replace(signature, "")
        cached.response = {**cached.response, "text": f"stored before: {PLAIN_KEY}"}  # an old row
        s.add(cached)
    again = runner.call(req())
    assert again.cached and again.text == f"stored before: {MASK}"


def test_every_text_page_a_server_sends_is_redacted(monkeypatch: pytest.MonkeyPatch) -> None:
    """logs/pages.RedactKeys: HTML, JSON and plain text, whole bodies, streamed or not, content-length
    fixed; media passes as it is."""
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
    from starlette.routing import Route
    from starlette.testclient import TestClient

    from playlisteval.logs.pages import RedactKeys

    monkeypatch.setenv("DASHSCOPE_API_KEY", PLAIN_KEY)
    half = len(PLAIN_KEY) // 2

    async def chunks() -> Any:
        yield f"<p>{PLAIN_KEY[:half]}".encode()
        yield f"{PLAIN_KEY[half:]}</p>".encode()

    app = Starlette(routes=[
        Route("/html", lambda _r: HTMLResponse(f"<p>reply: {PLAIN_KEY}</p>")),
        Route("/json", lambda _r: JSONResponse({"raw": f"key {PLAIN_KEY}"})),
        Route("/stream", lambda _r: StreamingResponse(chunks(), media_type="text/html")),
        Route("/media", lambda _r: Response(PLAIN_KEY.encode(), media_type="video/mp4")),
    ], middleware=[Middleware(RedactKeys)])
    client = TestClient(app)
    for path in ("/html", "/json", "/stream"):
        got = client.get(path)
        assert got.status_code == 200 and PLAIN_KEY not in got.text and MASK in got.text, path
        if "content-length" in got.headers:
            assert int(got.headers["content-length"]) == len(got.content)
    assert client.get("/media").content == PLAIN_KEY.encode()  # not text: left alone
