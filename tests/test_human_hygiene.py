"""Input hygiene of the human study (issue 25, deliverable 6): a reason has a length cap in the app (422 with
the count, 413 for a body past what a capped reason can be) and in the crowd import; ``/join`` throttles
bad invitation tokens per client address (429 with Retry-After); a study's name is one printable line with
no path separator."""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text
from starlette.testclient import TestClient

from playlisteval.config import Settings
from playlisteval.human.app import JOIN_TRIES, MAX_FORM_BYTES, make_app
from playlisteval.human.design import plan_study
from playlisteval.human.errors import HumanStudyError
from playlisteval.human.throttle import Throttle
from playlisteval.human.words import MAX_REASON, reason_problem
from playlisteval.store import open_store
from tests.human_helpers import REASON, cli, study_project


@pytest.fixture(scope="module")
def proj(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return study_project(tmp_path_factory.mktemp("hygiene") / "proj")


def _signed_in(settings: Settings, name: str) -> TestClient:
    token = str(json.loads(cli(settings, "human", "invite", name, "--json").output)["token"])
    client = TestClient(make_app(settings), base_url="http://127.0.0.1")
    assert client.get(f"/join/{token}", follow_redirects=False).status_code == 303
    return client


def _form(page: str) -> tuple[int, str]:
    task_id = int(re.search(r'action="/task/(\d+)"', page).group(1))  # type: ignore[union-attr]
    csrf = re.search(r'name="csrf" value="([0-9a-f]+)"', page).group(1)  # type: ignore[union-attr]
    return task_id, csrf


def _long_reason(n: int) -> str:
    return (REASON + " ") * (n // len(REASON) + 1)


def _stored(settings: Settings, who: str) -> list[int]:
    with open_store(settings).connect() as conn:
        return [int(r[0]) for r in conn.execute(text("SELECT length(reason) FROM human_rating WHERE annotator = :w"),
                                                {"w": who})]


def test_a_reason_past_the_cap_is_refused_with_its_length_and_one_at_the_cap_is_kept(proj: Settings) -> None:
    c = _signed_in(proj, "verbose")
    task_id, csrf = _form(c.get("/task").text)
    too_long = _long_reason(MAX_REASON + 1)[: MAX_REASON + 1]
    refused = c.post(f"/task/{task_id}", data={"choice": "A", "reason": too_long, "csrf": csrf})
    assert refused.status_code == 422
    assert f"the reason is {MAX_REASON + 1:,} characters long; at most {MAX_REASON:,} are accepted" in refused.text
    assert _stored(proj, "verbose") == []
    at_cap = _long_reason(MAX_REASON)[:MAX_REASON].strip()
    ok = c.post(f"/task/{task_id}", data={"choice": "A", "reason": at_cap, "csrf": csrf}, follow_redirects=False)
    assert ok.status_code == 303 and _stored(proj, "verbose") == [len(at_cap)]


def test_a_body_past_what_a_capped_reason_can_be_is_refused_unread(proj: Settings) -> None:
    c = _signed_in(proj, "flood")
    task_id, csrf = _form(c.get("/task").text)
    huge = "x" * 1_000_000  # the 0.98-MB reason of the issue
    refused = c.post(f"/task/{task_id}", data={"choice": "A", "reason": huge, "csrf": csrf})
    assert refused.status_code == 413 and f"at most {MAX_REASON:,} characters" in refused.text

    def chunks() -> Iterator[bytes]:
        yield f"choice=A&csrf={csrf}&reason=".encode()
        for _ in range(MAX_FORM_BYTES // 10_000 + 2):
            yield b"y" * 10_000

    chunked = c.post(f"/task/{task_id}", content=chunks(),
                     headers={"content-type": "application/x-www-form-urlencoded"})
    assert chunked.status_code == 413
    assert _stored(proj, "flood") == []


def test_join_answers_429_after_too_many_bad_tokens_from_one_address(proj: Settings) -> None:
    client = TestClient(make_app(proj), base_url="http://127.0.0.1")
    for i in range(JOIN_TRIES):
        assert client.get(f"/join/guess-{i}", follow_redirects=False).status_code == 403
    blocked = client.get("/join/guess-last", follow_redirects=False)
    assert blocked.status_code == 429 and int(blocked.headers["retry-after"]) >= 1
    assert "Too many invalid invitation links" in blocked.text


def test_the_bucket_refills_and_good_tokens_cost_nothing() -> None:
    now = [0.0]
    throttle = Throttle(3, 60.0, clock=lambda: now[0])
    for _ in range(3):
        assert throttle.retry_after("1.2.3.4") == 0
        throttle.failed("1.2.3.4")
    assert throttle.retry_after("1.2.3.4") == pytest.approx(20.0)
    assert throttle.retry_after("5.6.7.8") == 0  # per address
    now[0] = 20.0
    assert throttle.retry_after("1.2.3.4") == 0  # one try back after a third of the minute


def test_the_crowd_import_refuses_a_reason_past_the_cap_naming_its_line(proj: Settings, tmp_path: Path) -> None:
    with open_store(proj).connect() as conn:
        task_id = int(conn.execute(text("SELECT id FROM human_task ORDER BY id DESC LIMIT 1")).scalar() or 0)
    path = tmp_path / "ratings.csv"
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["task_id", "annotator", "choice", "reason"])
        writer.writerow([str(task_id), "crowd-1", "B", _long_reason(MAX_REASON + 500)])
    result = cli(proj, "human", "import", str(path), code=1)
    said = " ".join(result.output.split())
    assert f"{path} line 2: the reason is" in said and f"at most {MAX_REASON:,} are accepted" in said
    assert reason_problem(REASON, 20) is None


@pytest.mark.parametrize("name", ["study\nlicense: mit", "a/b", "..", "tab\there", "esc\x1b[31m"])
def test_a_study_name_is_one_printable_line_without_a_path_separator(proj: Settings, name: str) -> None:
    with pytest.raises(HumanStudyError, match="human study name"):
        plan_study(proj, open_store(proj), name)
