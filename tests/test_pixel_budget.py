"""The pixel budget reaches the models that take frames as images (issue 20, deliverable 6; paper Table 18):
OpenAI's images, Qwen's frame lists and hf's processor inputs are shrunk to ``max_pixels`` or the media
resolution's ``[providers] pixel_budgets`` before they are sent; without a budget they go as extracted."""

from __future__ import annotations

import base64
import io
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from PIL import Image

from playlisteval.config import Settings
from playlisteval.models.providers.pixel_budget import budget_of, fit_path, fit_size
from playlisteval.models.request import GenerationSettings, ImagePart, ModelRequest, TextPart, VideoPart
from tests.helpers import project
from tests.provider_fakes import CHAT, FakeAPI, fake_api, make_video, runner_for


@pytest.fixture
def api() -> Iterator[FakeAPI]:
    with fake_api() as server:
        yield server


@pytest.fixture(scope="module")
def video(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_video(tmp_path_factory.mktemp("media") / "clip.mp4", seconds=6, size="160x120")


@pytest.fixture
def settings(tmp_path: Path, api: FakeAPI, monkeypatch: pytest.MonkeyPatch) -> Settings:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-pixels")
    monkeypatch.setenv("DASHSCOPE_API_KEY", "sk-test-pixels")
    s = project(tmp_path / "proj", runner__backoff_base_s=0.01)
    s.media.dir = str(tmp_path / "media")
    s.providers.openai_base_url = f"{api.url}/v1"
    s.providers.qwen_base_url = f"{api.url}/v1"
    s.providers.pixel_budgets = {"low": 1200, "medium": 4800, "high": 19200}
    return s


def clip_request(video: Path, **settings: Any) -> ModelRequest:
    return ModelRequest(role="C2_transcript_answer", response_schema="TextAnswer",
                        settings=GenerationSettings(**settings), parts=[
                            TextPart(text="What is shown?"),
                            VideoPart(path=str(video), start=0.0, end=4.0, fps=1.0, size=(160, 120))])


def sizes(urls: list[str]) -> list[tuple[int, int]]:
    return [Image.open(io.BytesIO(base64.b64decode(u.split(",", 1)[1]))).size for u in urls]


def test_fit_size_keeps_the_aspect_within_the_budget() -> None:
    assert fit_size(160, 120, 1200) == (40, 30)
    assert fit_size(160, 120, 100_000) == (160, 120)  # fits already: unchanged
    w, h = fit_size(1000, 7, 500)
    assert w * h <= 500 and h >= 1


def test_the_budget_is_max_pixels_else_the_media_resolutions(settings: Settings) -> None:
    req = ModelRequest(role="G", parts=[TextPart(text="x")])
    assert budget_of(settings, req) is None
    assert budget_of(settings, req.model_copy(update={"settings": GenerationSettings(media_resolution="low")})) == 1200
    both = GenerationSettings(media_resolution="low", max_pixels=3000)
    assert budget_of(settings, req.model_copy(update={"settings": both})) == 3000


def test_openai_frames_are_shrunk_to_the_budget_and_recorded(settings: Settings, api: FakeAPI, video: Path) -> None:
    plain = runner_for(settings).call(clip_request(video), model="openai/gpt-5.4-mini")
    low = runner_for(settings).call(clip_request(video, media_resolution="low"), model="openai/gpt-5.4-mini")
    first, second = (r.json["messages"][0]["content"] for r in api.requests(CHAT))
    full = sizes([c["image_url"]["url"] for c in first if c["type"] == "image_url"])
    small = sizes([c["image_url"]["url"] for c in second if c["type"] == "image_url"])
    assert full == [(160, 120)] * 4 and "max_pixels" not in plain.raw["frames"][0]
    assert small == [(40, 30)] * 4 and low.raw["frames"][0]["max_pixels"] == 1200


def test_qwen_frame_lists_and_image_parts_follow_max_pixels(settings: Settings, api: FakeAPI, video: Path,
                                                            tmp_path: Path) -> None:
    still = tmp_path / "still.png"
    Image.new("RGB", (200, 100), "red").save(still)
    req = clip_request(video, max_pixels=4800)
    req = req.model_copy(update={"parts": [*req.parts, ImagePart(path=str(still), timestamp=1.0)]})
    runner_for(settings).call(req, model="qwen/qwen3.7-plus")
    content = api.requests(CHAT)[0].json["messages"][0]["content"]
    [frames] = [c["video"] for c in content if c["type"] == "video"]
    [image] = [c["image_url"]["url"] for c in content if c["type"] == "image_url"]
    assert sizes(frames) == [(80, 60)] * 4
    [(w, h)] = sizes([image])
    assert w * h <= 4800 and abs(w / h - 2.0) < 0.1 and still.exists()  # the user's file is left as it was


def test_hf_frames_reach_the_processor_within_the_budget(settings: Settings, video: Path) -> None:
    from playlisteval.models.providers.hf import HFProvider

    provider = HFProvider(settings)
    loaded: Any = SimpleNamespace(sees_images=True)
    content, images, _ = provider._content(loaded, "tiny", clip_request(video, media_resolution="medium"))
    shown = [c["image"].size for c in content if c["type"] == "image"]
    assert images == 4 and shown == [(80, 60)] * 4
    content, _, _ = provider._content(loaded, "tiny", clip_request(video))
    assert [c["image"].size for c in content if c["type"] == "image"] == [(160, 120)] * 4


def test_a_shrunk_frame_is_cached_by_content(settings: Settings, tmp_path: Path) -> None:
    src = tmp_path / "a.png"
    Image.new("RGB", (100, 100), "blue").save(src)
    once, twice = fit_path(settings, src, 2500), fit_path(settings, src, 2500)
    assert once == twice != src and Image.open(once).size == (50, 50)
    assert fit_path(settings, src, None) == src and fit_path(settings, src, 20000) == src
