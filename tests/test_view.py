"""`playlisteval view` over HTTP (issue 22, deliverable 5): the token (refused without it, a cookie with it),
the annotation app's security headers, model text escaped, paged lists that cover every pair once and stay
fast at 10k items, the pair card's citations, graded answers and served frames, the summary pages' numbers
being the analytics' own, and the command's --json and busy-port exit."""

from __future__ import annotations

import json
import os
import re
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from http.cookiejar import CookieJar
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import text
from starlette.testclient import TestClient

from playlisteval.cli import main
from playlisteval.commands.funnel import funnel
from playlisteval.config import Settings
from playlisteval.prompts.citations import parse_citations
from playlisteval.store import forget_engines, open_store
from playlisteval.store.states import GATE_ORDER
from playlisteval.view.app import make_app
from tests.helpers import env_for
from tests.human_helpers import OVERRIDES
from tests.view_helpers import JUDGES, TOKEN, sources, viewed_project

pytestmark = pytest.mark.slow
EVIL = "<script>alert('pwned')</script>"


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Settings]:
    yield viewed_project(tmp_path_factory.mktemp("view") / "proj")
    forget_engines()


@pytest.fixture(scope="module")
def client(settings: Settings) -> TestClient:
    c = TestClient(make_app(settings, TOKEN, sources(settings)))
    assert c.get(f"/?token={TOKEN}", follow_redirects=False).status_code == 303
    return c


def rows(settings: Settings, sql: str, **params: object) -> list[tuple[object, ...]]:
    with open_store(settings).connect() as conn:
        return [tuple(r) for r in conn.execute(text(sql), params)]


def test_a_request_without_the_token_is_refused(settings: Settings) -> None:
    anon = TestClient(make_app(settings, TOKEN, sources(settings)))
    for path in ("/", "/pairs", "/pairs/1", "/items/1", "/leaderboard", "/frame/1/0.000", "/video/1",
                 "/static/view.css"):
        response = anon.get(path, follow_redirects=False)
        assert response.status_code == 403, path
        assert "needs its token" in response.text
        assert "default-src 'none'" in response.headers["content-security-policy"]
    assert anon.get("/pairs?token=wrong", follow_redirects=False).status_code == 403
    anon.cookies.set("playlisteval_view", "wrong")
    assert anon.get("/").status_code == 403


def test_the_token_link_sets_a_cookie_and_drops_the_token(settings: Settings) -> None:
    c = TestClient(make_app(settings, TOKEN, sources(settings)))
    response = c.get(f"/pairs?domain=Education&token={TOKEN}", follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"] == "/pairs?domain=Education"
    cookie = response.headers["set-cookie"]
    assert f"playlisteval_view={TOKEN}" in cookie and "HttpOnly" in cookie and "samesite=strict" in cookie.lower()
    page = c.get("/pairs?domain=Education")
    assert page.status_code == 200 and "Pairs of" in page.text
    joined = TestClient(make_app(settings, TOKEN, sources(settings)))
    response = joined.get(f"/join/{TOKEN}", follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"] == "/" and "HttpOnly" in \
        response.headers["set-cookie"]
    assert joined.get("/pairs").status_code == 200
    assert TestClient(make_app(settings, TOKEN, sources(settings))).get("/join/nope").status_code == 403
    assert page.headers["x-frame-options"] == "DENY" and "script-src 'self'" in page.headers["content-security-policy"]


def test_model_text_is_escaped_everywhere(settings: Settings, client: TestClient) -> None:
    pair_id, item_id, set_id, qa_id = rows(settings, "SELECT p.id, p.item_id, p.set_id, ds.qa_id FROM benchmark_pair "
                                                     "AS bp JOIN pair AS p ON p.id = bp.pair_id JOIN distractor_set AS"
                                                     " ds ON ds.id = p.set_id ORDER BY p.id LIMIT 1")[0]
    engine = open_store(settings)
    with engine.begin() as conn:
        old_q = conn.execute(text("SELECT question FROM qa WHERE id = :q"), {"q": qa_id}).scalar_one()
        old_a = conn.execute(text("SELECT text FROM answer WHERE set_id = :s AND rating = 1"),
                             {"s": set_id}).scalar_one()
        conn.execute(text("UPDATE qa SET question = :t WHERE id = :q"), {"t": f"Why {EVIL}?", "q": qa_id})
        conn.execute(text("UPDATE answer SET text = text || :t WHERE set_id = :s AND rating = 1"),
                     {"t": f" {EVIL}", "s": set_id})
        conn.execute(text("UPDATE judgment SET raw = :t WHERE pair_id = :p"), {"t": f"Verdict: A {EVIL}", "p": pair_id})
    try:
        for path in (f"/pairs/{pair_id}", "/pairs", f"/items/{item_id}", "/items"):
            page = client.get(path).text
            assert "&lt;script&gt;alert(&#39;pwned&#39;)&lt;/script&gt;" in page, path
            assert "<script>alert" not in page and "<script" not in page, path  # no script tag at all: CSP-clean
    finally:
        with engine.begin() as conn:
            conn.execute(text("UPDATE qa SET question = :t WHERE id = :q"), {"t": old_q, "q": qa_id})
            conn.execute(text("UPDATE answer SET text = :t WHERE set_id = :s AND rating = 1"),
                         {"t": old_a, "s": set_id})


def _listed(client: TestClient, path: str, attr: str) -> list[int]:
    seen: list[int] = []
    url: str | None = path
    while url:
        page = client.get(url).text
        seen += [int(x) for x in re.findall(rf'data-{attr}="(\d+)"', page)]
        nxt = re.search(r'id="next-page" href="([^"]+)"', page)
        url = nxt.group(1).replace("&amp;", "&") if nxt else None
    return seen


def test_paging_shows_every_pair_once_and_filters_narrow_it(settings: Settings, client: TestClient) -> None:
    every = [r[0] for r in rows(settings, "SELECT pair_id FROM benchmark_pair ORDER BY pair_id")]
    assert len(every) > 14
    assert _listed(client, "/pairs?size=7", "pair") == every
    first = client.get("/pairs?size=7").text
    assert f"1–7 of {len(every)}" in first and f"page 1 of {-(-len(every) // 7)}" in first
    domain = rows(settings, "SELECT name FROM domain ORDER BY name")[0][0]
    in_domain = [r[0] for r in rows(settings, "SELECT bp.pair_id FROM benchmark_pair AS bp JOIN pair AS p ON p.id = "
                                              "bp.pair_id JOIN item AS i ON i.id = p.item_id JOIN seed AS s ON s.id = "
                                              "i.seed_id JOIN domain AS d ON d.id = s.domain_id WHERE d.name = :d "
                                              "ORDER BY bp.pair_id", d=domain)]
    assert 0 < len(in_domain) < len(every)
    assert _listed(client, f"/pairs?size=5&domain={domain}", "pair") == in_domain
    wrong = [r[0] for r in rows(settings, "SELECT DISTINCT j.pair_id FROM judgment AS j JOIN judge_run AS r ON "
                                          "r.id = j.run_id WHERE r.judge = :j AND j.score < 1 ORDER BY j.pair_id",
                                j=JUDGES[0])]
    assert wrong and len(wrong) < len(every)
    assert _listed(client, f"/pairs?size=9&wrong=1&judge={JUDGES[0]}", "pair") == wrong
    items = [r[0] for r in rows(settings, "SELECT id FROM item ORDER BY id")]
    assert _listed(client, "/items?size=4", "item") == items
    assert client.get("/pairs?page=-3&size=abc").status_code == 200  # bad paging arguments are clamped


def test_the_pair_card_links_citations_into_the_clips_and_shows_answers_and_served_frames(
        settings: Settings, client: TestClient) -> None:
    pair_id, set_id, seed_id = rows(settings, "SELECT p.id, p.set_id, i.seed_id FROM benchmark_pair AS bp JOIN pair AS"
                                              " p ON p.id = bp.pair_id JOIN item AS i ON i.id = p.item_id "
                                              "ORDER BY p.id LIMIT 1")[0]
    page = client.get(f"/pairs/{pair_id}").text
    gold = rows(settings, "SELECT text FROM answer WHERE set_id = :s AND rating = 5", s=set_id)[0][0]
    segs = dict(rows(settings, "SELECT 1, segment1_id FROM seed WHERE id = :s UNION ALL SELECT 2, segment2_id FROM "
                               "seed WHERE id = :s", s=seed_id))
    starts = {n: rows(settings, "SELECT video_id, start FROM segment WHERE id = :g", g=g)[0] for n, g in segs.items()}
    cited = parse_citations(gold).citations
    links = re.findall(r'<a class="citation" data-video="(\d+)" data-start="([\d.]+)"', page)
    assert cited and len(links) == len(cited)
    assert [(int(v), float(t)) for v, t in links] == [(starts[c.clip][0], starts[c.clip][1] + c.start) for c in cited]
    assert len(re.findall(r'<article class="answer[^"]*" data-rating="(\d)"', page)) == 4
    assert page.count("<mark data-diff") > 0 and "degraded " in page  # differences and causal records
    judged = rows(settings, "SELECT run_id, evidence FROM judgment WHERE pair_id = :p ORDER BY run_id", p=pair_id)
    assert len(judged) == len(JUDGES)
    served = json.loads(judged[0][1])["frames"]
    article = page.split(f'<article class="judgment" data-run="{judged[0][0]}">', 1)[1].split("</article>", 1)[0]
    ticks = re.findall(r'<a class="served-frame" href="/frame/(\d+)/([\d.]+)">', article)
    assert sorted((int(v), round(float(t), 3)) for v, t in ticks) == sorted((int(v), round(t, 3)) for v, t in served)
    frame = client.get(f"/frame/{ticks[0][0]}/{ticks[0][1]}")
    assert frame.status_code == 200 and frame.headers["content-type"] == "image/jpeg"
    assert frame.content[:2] == b"\xff\xd8"
    clip = client.get(f"/clip/{links[0][0]}?start={links[0][1]}")
    assert clip.status_code == 200 and f'src="/video/{links[0][0]}#t=' in clip.text
    video = client.get(f"/video/{links[0][0]}", headers={"Range": "bytes=0-99"})
    assert video.status_code == 206 and len(video.content) == 100 and video.headers["content-type"] == "video/mp4"
    assert "F_first" in page and ("Weak judges" in page)


def test_media_is_served_only_for_videos_the_store_names(client: TestClient) -> None:
    assert client.get("/frame/999999/1.000").status_code == 404
    assert client.get("/frame/1/-5").status_code == 404 and client.get("/frame/1/nan").status_code == 404
    assert client.get("/frame/1/999999").status_code == 404  # past the video's end
    assert client.get("/video/999999").status_code == 404
    assert client.get("/frame/1/..%2F..%2Fetc%2Fpasswd").status_code == 404
    assert client.get("/pairs/999999").status_code == 404 and client.get("/items/999999").status_code == 404


def test_summary_pages_show_the_analytics_numbers(settings: Settings, client: TestClient) -> None:
    board = json.loads(CliRunner().invoke(main, ["--project", str(settings.root), "leaderboard", "--json"],
                                          env=env_for(**OVERRIDES), catch_exceptions=False).output)
    page = client.get("/leaderboard").text
    for row in board["rows"]:
        ci = row["retrieved_ci"]
        shown = f"{100 * ci['estimate']:.1f} [{100 * ci['low']:.1f}, {100 * ci['high']:.1f}]"
        assert shown in page, (row["judge"], shown)
    assert "SIMULATED" in page and "intervals over questions" in page
    runs = client.get("/runs").text
    for run_id, judge in rows(settings, "SELECT id, judge FROM judge_run ORDER BY id"):
        assert f'data-run="{run_id}"' in runs and str(judge) in runs
    assert "main" in runs
    data = funnel(settings, top=50)
    page = client.get("/funnel").text
    order = re.findall(r'<tr data-gate="([^"]+)">', page)
    assert order == list(data["gates"]) and order[:len(GATE_ORDER)] == list(GATE_ORDER)
    for gate, g in data["gates"].items():
        for kind, n in g["reasons"].items():
            assert f"{n} × {kind}" in page, (gate, kind)


def test_ten_thousand_items_page_fast(settings: Settings, tmp_path: Path) -> None:
    """10k items and 10k benchmark pairs (rows copied from the real ones): a deep page and a filtered one
    each answer in well under a second."""
    import shutil

    from tests.helpers import project

    shutil.copytree(settings.root, tmp_path / "big", ignore=shutil.ignore_patterns("media", "analytics.duckdb*"))
    big = project(tmp_path / "big", **OVERRIDES)
    with sqlite3.connect(big.root / "playlisteval.db") as db:
        vec, video = db.execute("SELECT vector, video_id FROM segment LIMIT 1").fetchone()
        top = db.execute("SELECT max(id) FROM segment").fetchone()[0]
        n = 10_000
        db.executemany("INSERT INTO segment (id, video_id, idx, embedder, start, \"end\", first_chunk, last_chunk, "
                       "vector) VALUES (?, ?, ?, 'bulk', 0, 60, 0, 1, ?)",
                       [(top + k + 1, video, k, vec) for k in range(n)])
        seed0 = db.execute("SELECT max(id) FROM seed").fetchone()[0]
        db.executemany("INSERT INTO seed (id, domain_id, segment1_id, segment2_id, similarity) "
                       "VALUES (?, 1, ?, ?, 0.5)",
                       [(seed0 + k + 1, top + k + 1, top + ((k + 1) % n) + 1) for k in range(n)])
        item0 = db.execute("SELECT max(id) FROM item").fetchone()[0]
        state, qa, ds = db.execute("SELECT i.state, i.current_qa_id, i.current_set_id FROM item AS i "
                                   "WHERE i.current_set_id IS NOT NULL LIMIT 1").fetchone()
        db.executemany("INSERT INTO item (id, seed_id, state, phase1_attempts, phase2_attempts, phase2_on_question, "
                       "current_qa_id, current_set_id, lease_renewed_at, claims, version, created_at, updated_at) "
                       "VALUES (?, ?, ?, 1, 1, 0, ?, ?, 0, 0, 1, 0, 0)",
                       [(item0 + k + 1, seed0 + k + 1, state, qa, ds) for k in range(n)])
        pair0 = db.execute("SELECT max(id) FROM pair").fetchone()[0]
        db.executemany("INSERT INTO pair (id, item_id, set_id, better_rating, worse_rating, gap, kept) "
                       "VALUES (?, ?, ?, 5, 4, 1, 1)", [(pair0 + k + 1, item0 + k + 1, ds) for k in range(n)])
        db.executemany("INSERT INTO benchmark_pair (benchmark_id, pair_id, a_is_better) VALUES (1, ?, 1)",
                       [(pair0 + k + 1,) for k in range(n)])
    c = TestClient(make_app(big, TOKEN, sources(big)))
    c.get(f"/?token={TOKEN}")
    for path in ("/items?page=190&size=50", "/items?gate=C1&domain=Education", "/pairs?page=190&size=50",
                 f"/pairs?wrong=1&judge={JUDGES[0]}&page=2"):
        c.get(path)  # warm
        began = time.perf_counter()
        page = c.get(path)
        took = time.perf_counter() - began
        assert page.status_code == 200 and took < 1.0, (path, took)
    total = n + item0
    assert f"9451–9500 of {total}" in c.get("/items?page=190&size=50").text
    forget_engines()


def test_busy_port_is_one_line_and_exit_2_before_any_url(settings: Settings) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = CliRunner().invoke(main, ["--project", str(settings.root), "view", "--port", str(port), "--json"],
                                    env=env_for(**OVERRIDES), catch_exceptions=False)
    assert result.exit_code == 2
    assert "http" not in result.stdout and "token" not in result.stdout
    assert result.output.strip().count("\n") == 0 and "in use" in result.output and str(port) in result.output


def test_view_json_prints_a_link_that_serves(settings: Settings) -> None:
    env = {**os.environ, **env_for(**OVERRIDES)}
    server = subprocess.Popen([sys.executable, "-m", "playlisteval.cli", "--project", str(settings.root), "view",
                               "--port", "0", "--json"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              start_new_session=True, text=True)
    try:
        assert server.stdout is not None
        got = json.loads(server.stdout.readline())
        assert set(got) >= {"url", "link", "token", "host", "port"} and got["host"] == "127.0.0.1"
        assert got["link"] == f"{got['url']}join/{got['token']}"
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(CookieJar()))
        page = opener.open(got["link"] + "", timeout=30)
        assert page.status == 200 and "playlisteval" in page.read().decode()
        assert opener.open(f"{got['url']}pairs", timeout=30).status == 200  # the cookie does the rest
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"{got['url']}pairs", timeout=30)
        assert refused.value.code == 403
    finally:
        server.terminate()
        server.wait(timeout=20)


def test_a_causal_record_reads_as_short_lines() -> None:
    from playlisteval.view.card import _record_lines

    record = {"attribute_degradations": [{"attribute_name": "Colour accuracy", "degradation_by_elements": [
        {"element": "pink -> cyan", "impact": "not shown", "modality": "visual_only"}]}],
        "constant_attributes": [{"attribute_name": "Shape identity", "stability_by_elements": []}, "Signage text"],
        "upgraded_attributes": []}
    assert _record_lines(record) == ["degraded Colour accuracy: pink -> cyan (visual_only) — not shown",
                                     "kept: Shape identity, Signage text"]
    assert _record_lines(None) == [] and _record_lines({}) == []


def test_the_same_pages_from_postgresql(settings: Settings, pg_url: str, tmp_path: Path) -> None:
    """The store copied row for row into PostgreSQL: every list and card the viewer reads is the same."""
    from dataclasses import asdict

    from sqlalchemy import MetaData, select

    from playlisteval.view import listing
    from playlisteval.view.card import pair_card
    from tests.helpers import project

    lite = open_store(settings)
    pg_settings = project(tmp_path / "pg", store__url=pg_url, **OVERRIDES)
    pg = open_store(pg_settings)  # migrated: the same schema
    source, target = MetaData(), MetaData()
    read_by_the_viewer = {"domain", "playlist", "video", "segment", "seed", "item", "qa", "distractor_set", "answer",
                          "gate_result", "pair", "benchmark", "benchmark_pair", "judge_run", "judgment", "judge_error"}
    source.reflect(lite, only=list(read_by_the_viewer))  # (not the ledger's groups: an index SQLAlchemy skips)
    target.reflect(pg, only=list(read_by_the_viewer))
    copied = [t for t in target.sorted_tables if t.name in read_by_the_viewer]  # counters are kept by triggers
    with lite.connect() as read, pg.begin() as write:
        for table in reversed(copied):
            write.execute(table.delete())  # rows a migration seeds (spend totals) come from the copy instead
        for table in copied:
            shared = [c.name for c in table.columns if c.name in source.tables[table.name].columns]
            got = [dict(zip(shared, r, strict=True)) for r in read.execute(
                select(*(source.tables[table.name].c[c] for c in shared)))]
            if got:
                write.execute(table.insert(), got)
    f = listing.Filters(judge=JUDGES[0], wrong=True)
    for engine_a, engine_b in ((lite, pg),):
        assert listing.benchmarks(engine_a) == listing.benchmarks(engine_b)
        for page in (1, 2):
            every = listing.Filters()
            assert listing.pairs(engine_a, 1, every, page, 7) == listing.pairs(engine_b, 1, every, page, 7)
            assert listing.items(engine_a, listing.Filters(gate="C1"), page, 3) == \
                listing.items(engine_b, listing.Filters(gate="C1"), page, 3)
        assert listing.pairs(engine_a, 1, f, 1, 50) == listing.pairs(engine_b, 1, f, 1, 50)
        pair_id = listing.pairs(engine_a, 1, f, 1, 1).rows[0]["id"]
        a, b = pair_card(engine_a, pair_id, 1), pair_card(engine_b, pair_id, 1)
        assert a is not None and b is not None
        assert [asdict(c) for c in a.pop("clips")] == [asdict(c) for c in b.pop("clips")]
        ja, jb = a.pop("judgments"), b.pop("judgments")
        timelines = [[[asdict(t) for t in j.pop("timeline")] for j in side] for side in (ja, jb)]
        assert timelines[0] == timelines[1] and any(timelines[0])
        assert ja == jb and a == b
    with TestClient(make_app(pg_settings, TOKEN, sources(pg_settings))) as c:
        c.get(f"/?token={TOKEN}")
        assert c.get(f"/pairs/{pair_id}").status_code == 200 and c.get("/pairs?wrong=1").status_code == 200
    forget_engines()
