"""The annotation app over HTTP (issue 12 item 3): tokens, CSRF, escaping, validation on the server,
assignment (never the same pair twice, N per pair), clips only for one's own tasks, and a rating that
survives the server being killed right after it answered."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from http.cookiejar import CookieJar
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from starlette.testclient import TestClient

from playlisteval.config import Settings
from playlisteval.human.app import make_app
from playlisteval.store import forget_engines, open_store
from tests.conftest import free_port
from tests.helpers import env_for
from tests.human_helpers import OVERRIDES, REASON, cli, study_project


@pytest.fixture(scope="module")
def proj(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return study_project(tmp_path_factory.mktemp("app") / "proj")


def token_of(settings: Settings, name: str) -> str:
    return str(json.loads(cli(settings, "human", "invite", name, "--json").output)["token"])


def client_for(settings: Settings, token: str | None) -> TestClient:
    client = TestClient(make_app(settings), base_url="http://127.0.0.1")
    if token:
        assert client.get(f"/join/{token}", follow_redirects=False).status_code == 303
    return client


def form_of(page: str) -> tuple[int, str]:
    task_id = int(re.search(r'action="/task/(\d+)"', page).group(1))  # type: ignore[union-attr]
    csrf = re.search(r'name="csrf" value="([0-9a-f]+)"', page).group(1)  # type: ignore[union-attr]
    return task_id, csrf


def ratings(settings: Settings, who: str | None = None) -> list[Any]:
    with open_store(settings).connect() as conn:
        sql = "SELECT task_id, annotator, choice, reason FROM human_rating"
        return list(conn.execute(text(sql + (" WHERE annotator = :w" if who else "")), {"w": who}))


def test_nobody_without_a_valid_token_reads_or_writes(proj: Settings) -> None:
    anon = client_for(proj, None)
    assert anon.get("/task").status_code == 401
    assert anon.get("/progress").status_code == 401
    assert anon.get("/join/not-a-token", follow_redirects=False).status_code == 403
    assert anon.get("/clip/1/0").status_code == 401
    assert anon.post("/task/1", data={"choice": "A", "reason": REASON, "csrf": "x"}).status_code == 401
    anon.cookies.set("playlisteval_human", "forged-token")
    assert anon.get("/task").status_code == 401
    page = client_for(proj, token_of(proj, "headers")).get("/task")
    assert "default-src 'none'" in page.headers["content-security-policy"]
    assert page.headers["x-frame-options"] == "DENY"
    cookie = client_for(proj, None).get(f"/join/{token_of(proj, 'cookie')}", follow_redirects=False)
    flags = cookie.headers["set-cookie"].lower()
    assert "httponly" in flags and "samesite=strict" in flags


def test_csrf_and_the_reason_are_checked_by_the_server(proj: Settings) -> None:
    c = client_for(proj, token_of(proj, "ann"))
    task_id, csrf = form_of(c.get("/task").text)
    refused = c.post(f"/task/{task_id}", data={"choice": "A", "reason": REASON})
    assert refused.status_code == 403
    assert c.post(f"/task/{task_id}", data={"choice": "A", "reason": REASON, "csrf": "0" * 40}).status_code == 403
    short = c.post(f"/task/{task_id}", data={"choice": "A", "reason": "too short to count", "csrf": csrf})
    assert short.status_code == 422 and "at least 20 are required" in short.text
    assert "too short to count" in short.text  # what was typed is kept for the annotator
    assert c.post(f"/task/{task_id}", data={"choice": "C", "reason": REASON, "csrf": csrf}).status_code == 422
    assert ratings(proj, "ann") == []
    ok = c.post(f"/task/{task_id}", data={"choice": "B", "reason": REASON, "csrf": csrf}, follow_redirects=False)
    assert ok.status_code == 303
    assert [(r.task_id, r.choice, r.reason) for r in ratings(proj, "ann")] == [(task_id, "B", REASON)]
    again = c.post(f"/task/{task_id}", data={"choice": "A", "reason": REASON, "csrf": csrf})
    assert again.status_code == 409  # final
    assert [r.choice for r in ratings(proj, "ann")] == ["B"]
    other = client_for(proj, token_of(proj, "ben"))
    _, csrf_b = form_of(other.get("/task").text)
    stranger = other.post(f"/task/{task_id + 1000}", data={"choice": "A", "reason": REASON, "csrf": csrf_b})
    assert stranger.status_code == 404


def test_model_text_is_escaped(proj: Settings, tmp_path: Path) -> None:
    settings = study_project(tmp_path / "p")
    evil = '<script>alert("pwned")</script><img src=x onerror=alert(1)>'
    with open_store(settings).begin() as conn:
        conn.execute(text("UPDATE answer SET text = :t || text"), {"t": evil + " "})
        conn.execute(text("UPDATE qa SET question = :t || question"), {"t": evil + " "})
    c = client_for(settings, token_of(settings, "eve"))
    page = c.get("/task").text
    assert "<script>alert" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(&#34;pwned&#34;)&lt;/script&gt;" in page
    task_id, csrf = form_of(page)
    shown = c.post(f"/task/{task_id}", data={"choice": "A", "reason": evil, "csrf": csrf})
    assert shown.status_code == 422 and "<script>alert" not in shown.text  # the reason comes back escaped too
    forget_engines()


def test_an_annotator_never_sees_a_pair_twice_and_pairs_stop_at_n(tmp_path: Path) -> None:
    settings = study_project(tmp_path / "p")
    with open_store(settings).begin() as conn:  # one rating per pair in this study
        conn.execute(text("UPDATE human_study SET settings = :s"),
                     {"s": json.dumps({"annotators_per_pair": 1, "min_reason_words": 20})})
    first = client_for(settings, token_of(settings, "first"))
    seen = []
    for _ in range(100):
        page = first.get("/task").text
        if 'id="done"' in page:
            break
        task_id, csrf = form_of(page)
        assert first.get("/task").text.count(f'action="/task/{task_id}"') == 1  # a reload shows the same task
        seen.append(task_id)
        first.post(f"/task/{task_id}", data={"choice": "A", "reason": REASON, "csrf": csrf})
    with open_store(settings).connect() as conn:
        tasks = dict(conn.execute(text("SELECT id, attention_check FROM human_task")).all())
    assert sorted(seen) == sorted(tasks) and len(set(seen)) == len(seen)
    assert first.get("/progress").json() == {"annotator": "first", "done": len(tasks), "total": len(tasks)}
    second = client_for(settings, token_of(settings, "second"))
    assert second.get("/progress").json() == {"annotator": "second", "done": 0,
                                              "total": sum(1 for c in tasks.values() if c)}  # only checks left
    task_id, _ = form_of(second.get("/task").text)
    assert tasks[task_id]  # an attention check: everyone meets those
    forget_engines()


def test_clips_only_for_the_annotators_own_tasks(proj: Settings) -> None:
    a = client_for(proj, token_of(proj, "clipper"))
    task_id, _ = form_of(a.get("/task").text)
    full = a.get(f"/clip/{task_id}/0")
    assert full.status_code == 200 and full.headers["content-type"] == "video/mp4" and len(full.content) > 10_000
    part = a.get(f"/clip/{task_id}/0", headers={"Range": "bytes=0-99"})  # seeking in <video> uses ranges
    assert part.status_code == 206 and len(part.content) == 100
    assert a.get(f"/clip/{task_id}/99").status_code == 404
    b = client_for(proj, token_of(proj, "peeker"))
    b_task, _ = form_of(b.get("/task").text)
    held_by_a_only = task_id if task_id != b_task else task_id + 1
    assert b.get(f"/clip/{held_by_a_only}/0").status_code == 404


def _opener() -> urllib.request.OpenerDirector:
    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    return urllib.request.build_opener(urllib.request.HTTPCookieProcessor(CookieJar()), NoRedirect)


def test_a_rating_survives_the_server_killed_right_after_it(tmp_path: Path) -> None:
    settings = study_project(tmp_path / "p")
    token = token_of(settings, "durable")
    forget_engines()
    port = free_port()
    env = {**os.environ, **env_for(**OVERRIDES)}
    server = subprocess.Popen([sys.executable, "-m", "playlisteval.cli", "--project", str(settings.root), "human",
                               "serve", "--port", str(port)], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, start_new_session=True)
    try:
        base = f"http://127.0.0.1:{port}"
        opener = _opener()
        for _ in range(200):
            try:
                opener.open(f"{base}/join/{token}")
            except urllib.error.HTTPError as exc:
                assert exc.code == 303
                break
            except OSError:
                time.sleep(0.1)
        page = opener.open(f"{base}/task").read().decode()
        task_id, csrf = form_of(page)
        body = f"choice=A&csrf={csrf}&reason={urllib.request.quote(REASON)}".encode()
        try:
            opener.open(urllib.request.Request(f"{base}/task/{task_id}", data=body, method="POST"))
        except urllib.error.HTTPError as exc:
            assert exc.code == 303  # committed, then answered
        os.killpg(server.pid, signal.SIGKILL)
        server.wait(timeout=10)
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(timeout=10)
    assert [(r.task_id, r.choice) for r in ratings(settings, "durable")] == [(task_id, "A")]
