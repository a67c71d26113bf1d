"""Frames as specified (issue 20, deliverable 7): a request whose frames pass a model's image limit is
subsampled by the configured rule with the fps asked and sent on record (warned about, kept with the cached
answer), or fails naming the fps it would have had — never a silent drop."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from playlisteval.config import Settings
from playlisteval.errors import PermanentModelError
from playlisteval.models.request import ModelRequest, TextPart, VideoPart
from tests.helpers import project
from tests.provider_fakes import CHAT, FakeAPI, fake_api, make_video, runner_for


@pytest.fixture
def api() -> Iterator[FakeAPI]:
    with fake_api() as server:
        yield server


@pytest.fixture(scope="module")
def video(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_video(tmp_path_factory.mktemp("media") / "long.mp4", seconds=20, size="160x120")


@pytest.fixture
def settings(tmp_path: Path, api: FakeAPI, monkeypatch: pytest.MonkeyPatch) -> Settings:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-frames")
    s = project(tmp_path / "proj", runner__backoff_base_s=0.01)
    s.media.dir = str(tmp_path / "media")
    s.providers.openai_base_url = f"{api.url}/v1"
    s.providers.image_limits["openai/*"] = 5  # 16 s at 1 fps would be 16 frames
    return s


def clip_request(video: Path) -> ModelRequest:
    return ModelRequest(role="C2_transcript_answer", response_schema="TextAnswer", parts=[
        TextPart(text="What is shown?"), VideoPart(path=str(video), start=2.0, end=18.0, fps=1.0, size=(80, 60))])


def test_subsampling_records_and_warns_the_fps_asked_and_sent(settings: Settings, api: FakeAPI, video: Path) -> None:
    with capture_logs() as logs:
        response = runner_for(settings).call(clip_request(video), model="openai/gpt-5.4-mini")
    images = [c for c in api.requests(CHAT)[0].json["messages"][0]["content"] if c["type"] == "image_url"]
    assert len(images) == 5
    [record] = response.raw["frames"]
    assert record == {"part": 1, "fps_asked": 1.0, "fps_sent": round(5 / 16, 4), "frames": 5, "limit": 5,
                      "subsampled": True, "sent_as": "images"}
    [warning] = [e for e in logs if e["event"] == "frames.subsampled"]
    assert "1 fps asked, 0.312 sent" in warning["clips"] and warning["limit"] == 5
    again = runner_for(settings).call(clip_request(video), model="openai/gpt-5.4-mini")
    assert again.cached and again.raw["frames"] == response.raw["frames"]  # kept with the cached answer


def test_within_the_limit_the_clip_goes_at_its_fps(settings: Settings, api: FakeAPI, video: Path) -> None:
    settings.providers.image_limits["openai/*"] = 100
    response = runner_for(settings).call(clip_request(video), model="openai/gpt-5.4-mini")
    [record] = response.raw["frames"]
    assert record["fps_sent"] == 1.0 and record["frames"] == 16 and not record["subsampled"]


def test_the_error_rule_fails_the_call_naming_the_fps(settings: Settings, api: FakeAPI, video: Path) -> None:
    settings.providers.frame_limit_rule = "error"
    with pytest.raises(PermanentModelError, match=r"limit of 5 images .*1 fps asked, 0.312 sent"):
        runner_for(settings).call(clip_request(video), model="openai/gpt-5.4-mini")
    assert api.requests(CHAT) == []  # nothing was sent
