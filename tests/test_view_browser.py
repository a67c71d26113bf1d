"""`playlisteval view` in a real browser (issue 22, deliverable 5): Playwright for Python driving Debian's
chromium (/usr/bin/chromium; Playwright's own browser download cannot work offline), as
tests/test_human_browser.py does. The printed link signs the browser in; a pair card shows the gold's
citations as links that open the cited range of the clip, the four graded answers, and the frames each
judge was served on its timeline (the images load); the filters narrow the pair list; a page opened
without the token is refused, and the page runs under the strict CSP without a violation."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from playlisteval.config import Settings
from playlisteval.store import forget_engines, open_store
from playlisteval.view.app import make_app
from tests.conftest import free_port
from tests.view_helpers import JUDGES, TOKEN, sources, viewed_project

playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright is in the dev extra")
pytestmark = pytest.mark.slow

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--autoplay-policy=no-user-gesture-required"]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Settings, str]]:
    settings = viewed_project(tmp_path_factory.mktemp("view-browser") / "proj")
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(make_app(settings, TOKEN, sources(settings)), host="127.0.0.1", port=port,
                                           log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    for _ in range(200):
        if server.started:
            break
        time.sleep(0.05)
    yield settings, f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)
    forget_engines()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: `make test` installs Debian's chromium (scripts/ensure-system.sh)")
    with playwright_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield chromium
        chromium.close()


def first_pair(settings: Settings) -> tuple[int, list[list[float]]]:
    from sqlalchemy import text

    with open_store(settings).connect() as conn:
        pair_id = conn.execute(text("SELECT MIN(pair_id) FROM benchmark_pair")).scalar_one()
        served = conn.execute(text("SELECT evidence FROM judgment WHERE pair_id = :p ORDER BY run_id"),
                              {"p": pair_id}).scalars().all()
    records = [json.loads(e) if isinstance(e, str) else e for e in served]
    return int(pair_id), [r.get("frames", []) for r in records]  # a shortcut judge is served nothing


def test_a_page_without_the_token_is_refused(served: tuple[Settings, str], browser: Any) -> None:
    _settings, base = served
    context = browser.new_context()
    page = context.new_page()
    for path in ("/", "/pairs", "/pairs/1", "/leaderboard"):
        response = page.goto(f"{base}{path}")
        assert response is not None and response.status == 403, path
        assert "Refused" in page.inner_text("h1")
    response = page.goto(f"{base}/join/not-the-token")
    assert response is not None and response.status == 403
    context.close()


def test_a_pair_card_shows_the_gold_citations_the_four_answers_and_the_served_frames(
        served: tuple[Settings, str], browser: Any, tmp_path: Path) -> None:
    settings, base = served
    pair_id, frames = first_pair(settings)
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    violations: list[str] = []
    page.on("console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None)
    page.goto(f"{base}/join/{TOKEN}")
    assert page.url == f"{base}/" and "Benchmarks" in page.content()

    page.goto(f"{base}/pairs")
    page.click(f'tr[data-pair="{pair_id}"] a')
    assert page.url.startswith(f"{base}/pairs/{pair_id}")
    assert page.inner_text("#question").strip()

    citations = page.locator("#gold a.citation")
    assert citations.count() >= 4  # C1: at least two chunks cited per segment
    assert all(re.fullmatch(r"clip [12] @ \d+:\d\d–\d+:\d\d", t) for t in citations.all_inner_texts())
    assert page.locator("#graded article.answer").count() == 4
    assert sorted(int(r) for r in page.locator("#graded article.answer").evaluate_all(
        "els => els.map(e => e.dataset.rating)")) == [1, 2, 3, 4]
    assert page.locator("#graded mark").count() > 0  # differences from the gold marked

    judgments = page.locator("#judgments article.judgment")
    assert judgments.count() == len(JUDGES)
    first = judgments.first
    assert frames[0] and first.locator("a.served-frame").count() == len(frames[0])
    thumbs = first.locator("details.thumbs[open] img.frame")
    assert thumbs.count() > 0
    thumbs.first.scroll_into_view_if_needed()
    page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=thumbs.first.element_handle(),
                           timeout=20_000)
    # the viewport only: a full-page screenshot resizes the page and Chromium restores the scroll position
    # later; on a loaded machine (CI) that came between the next click's mouse-down and mouse-up, and the
    # click missed its button (seen: scrollY 458 -> 238 between mousedown and mouseup)
    page.screenshot(path=str(tmp_path / "card.png"))
    assert (tmp_path / "card.png").stat().st_size > 20_000

    with page.expect_navigation():
        citations.first.click()
    assert "/clip/" in page.url
    video = page.locator("#clip")
    video.evaluate("v => { v.muted = true; return v.play(); }")
    start = float(video.get_attribute("data-start") or 0)
    page.wait_for_function("s => { const v = document.getElementById('clip'); return v.readyState >= 2 && "
                           "v.currentTime >= s - 0.5; }", arg=start, timeout=20_000)
    assert not video.evaluate("v => v.error") and video.evaluate("v => v.videoWidth") > 0
    assert not violations, violations
    context.close()


def test_the_filters_narrow_the_pair_list(served: tuple[Settings, str], browser: Any) -> None:
    _settings, base = served
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{base}/join/{TOKEN}")
    page.goto(f"{base}/pairs")
    everything = page.locator("#pairs tr[data-pair]").count()
    page.select_option("#pair-filters select[name=judge]", JUDGES[0])
    page.check("#pair-filters input[name=wrong]")
    with page.expect_navigation():
        page.click("#pair-filters button")
    assert "wrong=1" in page.url
    wrong = page.locator("#pairs tr[data-pair]").count()
    assert 0 < wrong < everything
    for cell in page.locator("#pairs tr[data-pair] td:nth-child(6)").all_inner_texts():
        right, judged = (int(x) for x in cell.split("/"))
        assert right < judged  # some judgment of it was not right
    context.close()
