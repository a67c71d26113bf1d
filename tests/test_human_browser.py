"""The annotation app in a real browser (issue 12 item 6): Playwright for Python driving Debian's
chromium (/usr/bin/chromium, installed by scripts/ensure-system.sh; Playwright's own browser download
cannot work offline). An annotator opens their invitation link, plays a clip, steps through the answers'
differences, submits a choice with a reason, and the rating is in the store; a second annotator sees only
their own progress; submissions without a valid token or CSRF token, or with a short reason, are refused."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from sqlalchemy import text

from playlisteval.config import Settings
from playlisteval.human.app import make_app
from playlisteval.store import forget_engines, open_store
from tests.conftest import free_port
from tests.human_helpers import REASON, cli, study_project

playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright is in the dev extra")
pytestmark = pytest.mark.slow

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--autoplay-policy=no-user-gesture-required"]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Settings, str]]:
    settings = study_project(tmp_path_factory.mktemp("browser") / "proj")
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(make_app(settings), host="127.0.0.1", port=port, log_level="warning"))
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


def invite(settings: Settings, name: str) -> str:
    import json

    return str(json.loads(cli(settings, "human", "invite", name, "--json").output)["token"])


def stored(settings: Settings, who: str) -> list[Any]:
    with open_store(settings).connect() as conn:
        return list(conn.execute(text("SELECT task_id, choice, reason, source FROM human_rating WHERE annotator = :w"),
                                 {"w": who}))


def test_an_annotator_plays_a_clip_steps_through_differences_and_submits(served: tuple[Settings, str],
                                                                       browser: Any, tmp_path: Path) -> None:
    settings, base = served
    token = invite(settings, "alice")
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(f"{base}/join/{token}")
    assert page.url == f"{base}/task"
    assert "signed in as alice" in page.inner_text("header") and "0 of" in page.inner_text("header")
    task_id = int(page.get_attribute("#rating-form", "action").rsplit("/", 1)[1])

    video = page.locator("video").first
    assert page.locator("video").count() >= 2
    video.evaluate("v => { v.muted = true; return v.play(); }")
    page.wait_for_function("() => document.querySelector('video').currentTime > 0.5", timeout=20_000)
    assert video.evaluate("v => v.videoWidth") > 0 and not video.evaluate("v => v.error")

    total = int(page.get_attribute(".answers", "data-changes"))
    assert total >= 2  # a degraded answer differs from the gold in several places
    page.click("#next-diff")
    assert page.inner_text("#diff-position") == f"difference 1 of {total}"
    assert page.locator("#answer-a mark.current").count() >= 1 and page.locator("#answer-b mark.current").count() >= 1
    page.click("#next-diff")
    assert page.inner_text("#diff-position") == f"difference 2 of {total}"
    assert {m.get_attribute("data-diff") for m in page.locator("mark.current").all()} == {"1"}
    page.click("#prev-diff")
    assert page.inner_text("#diff-position") == f"difference 1 of {total}"
    page.uncheck("#show-diff")
    assert "plain" in page.get_attribute(".answers", "class")
    page.check("#show-diff")
    page.click("#next-diff")

    assert page.is_disabled("#send")
    page.check("input[name=choice][value=B]")
    page.fill("#reason", "Too short.")
    assert page.inner_text("#word-count") == "2" and page.is_disabled("#send")
    page.fill("#reason", REASON)
    assert page.is_enabled("#send")
    # the viewport only: a full-page screenshot resizes the page and Chromium restores the scroll position
    # later; on a loaded machine (CI) that came between the next click's mouse-down and mouse-up, and the
    # click missed its button (seen: scrollY 458 -> 238 between mousedown and mouseup)
    page.screenshot(path=str(tmp_path / "task.png"))
    assert (tmp_path / "task.png").stat().st_size > 20_000
    with page.expect_navigation():
        page.click("#send")
    assert page.url == f"{base}/task" and "1 of" in page.inner_text("header")
    assert [(r.task_id, r.choice, r.reason, r.source) for r in stored(settings, "alice")] == \
        [(task_id, "B", REASON, "app")]
    page.close()


def test_a_second_token_sees_only_its_own_progress(served: tuple[Settings, str], browser: Any) -> None:
    settings, base = served
    first = browser.new_context()
    page = first.new_page()
    page.goto(f"{base}/join/{invite(settings, 'carol')}")
    page.check("input[name=choice][value=A]")
    page.fill("#reason", REASON)
    with page.expect_navigation():
        page.click("#send")
    second = browser.new_context()
    other = second.new_page()
    other.goto(f"{base}/join/{invite(settings, 'dave')}")
    header = other.inner_text("header")
    assert "signed in as dave" in header and "0 of" in header and "carol" not in other.content()
    mine = second.request.get(f"{base}/progress").json()
    assert mine["annotator"] == "dave" and mine["done"] == 0
    assert first.request.get(f"{base}/progress").json()["done"] == 1
    first.close()
    second.close()


def test_submissions_without_token_or_csrf_or_reason_are_refused(served: tuple[Settings, str], browser: Any) -> None:
    settings, base = served
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{base}/join/{invite(settings, 'erin')}")
    action = page.get_attribute("#rating-form", "action")
    csrf = page.get_attribute("input[name=csrf]", "value")
    stranger = browser.new_context()  # no invitation cookie at all
    assert stranger.request.post(f"{base}{action}", form={"choice": "A", "reason": REASON, "csrf": csrf}).status == 401
    stranger.close()
    assert context.request.post(f"{base}{action}", form={"choice": "A", "reason": REASON}).status == 403
    # a page whose token was tampered with: the server refuses it
    page.check("input[name=choice][value=A]")
    page.fill("#reason", REASON)
    page.evaluate("() => { document.querySelector('input[name=csrf]').value = 'forged'; }")
    with page.expect_navigation():
        page.click("#send")
    assert "Refused" in page.inner_text("h1")
    # the browser's check bypassed: the server still wants 20 words
    page.goto(f"{base}/task")
    page.check("input[name=choice][value=A]")
    page.fill("#reason", "short")
    with page.expect_navigation():
        page.evaluate("() => document.getElementById('rating-form').submit()")  # no checks, no button
    assert "at least 20 are required" in page.inner_text("#error")
    assert stored(settings, "erin") == []
    context.close()


def test_three_annotators_in_the_browser_and_an_import_give_krippendorffs_alpha(served: tuple[Settings, str],
                                                                              browser: Any, tmp_path: Path) -> None:
    """Done-when of issue 12: invite ×3, annotate through the browser, import a generated CSV, report."""
    import csv
    import json

    import krippendorff
    import numpy as np

    settings, base = served
    for name in ("ann", "ben", "cat"):
        context = browser.new_context()
        page = context.new_page()
        page.goto(f"{base}/join/{invite(settings, name)}")
        page.check("input[name=choice][value=A]")
        page.fill("#reason", REASON)
        with page.expect_navigation():
            page.click("#send")
        context.close()
    with open_store(settings).connect() as conn:
        tasks = conn.execute(text("SELECT id, intended_slot FROM human_task ORDER BY id")).all()
    path = tmp_path / "crowd.csv"
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["task_id", "annotator", "choice", "reason"])
        for i, (task_id, slot) in enumerate(tasks):
            for j in range(3):
                writer.writerow([task_id, f"crowd{j}", slot if (i + j) % 4 else "AB"[slot == "A"], REASON])
    cli(settings, "human", "import", str(path))
    out = json.loads(cli(settings, "human", "report", "--json").output)
    with open_store(settings).connect() as conn:
        rated = conn.execute(text("SELECT r.task_id, r.annotator, r.choice, t.intended_slot, t.attention_check "
                                  "FROM human_rating r JOIN human_task t ON t.id = r.task_id")).all()
    failed = {r.annotator for r in rated if r.attention_check and r.choice != r.intended_slot}
    valid = [r for r in rated if r.annotator not in failed and not r.attention_check]
    assert {"ann", "ben", "cat"} & {r.annotator for r in rated} == {"ann", "ben", "cat"}
    who = sorted({r.annotator for r in valid})
    units = sorted({r.task_id for r in valid})
    matrix = np.full((len(who), len(units)), np.nan)
    for r in valid:
        matrix[who.index(r.annotator), units.index(r.task_id)] = 0.0 if r.choice == "A" else 1.0
    assert out["alpha"] == pytest.approx(krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal"),
                                         abs=1e-9)
    assert out["n_ratings"] == len(valid)
    assert out["agree_with_intended"] == pytest.approx(sum(r.choice == r.intended_slot for r in valid) / len(valid))
