"""Issue 42, deliverable 4: video goes as video where the API takes it, so C3, D4 and H2 get their SPEC fps;
where only frames can go, the fps they amount to is recorded, and `funnel`, `show` and the report say it.

The wire test: C3 (SPEC 0.5 fps) on Qwen, through the real openai SDK, to a local server speaking chat
completions, for two 30-minute segments of a real (tiny) video made with ffmpeg. Each segment arrives as one
DashScope ``video`` part of 900 frames at fps 0.5 — not 1800 image parts, and not thinned to the 512 images
the request's image limit would have allowed (0.14 fps, the issue's complaint).
"""

from __future__ import annotations

import json
import random
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from playlisteval.analytics.report import _fps_rows
from playlisteval.build.gates import c3_grounding
from playlisteval.build.inputs import Clip
from playlisteval.build.story import _calls as story_calls
from playlisteval.cli import main
from playlisteval.commands.funnel import funnel
from playlisteval.config import Settings
from playlisteval.errors import PermanentModelError
from playlisteval.models.providers.openai_servers import QwenProvider, VLLMProvider
from playlisteval.models.request import ModelRequest, TextPart, VideoPart
from playlisteval.models.runner import Runner
from playlisteval.store import forget_engines, open_store
from playlisteval.store.engine import read_core
from playlisteval.view.app import Sources, make_app
from tests.helpers import project
from tests.provider_fakes import CHAT, FakeAPI, fake_api, runner_for

SEGMENT_S = 1800.0  # 30 minutes
GROUNDED = {"query_grounding_explanation": "both hops are shown", "query_grounded": "Yes",
            "answer_grounding_explanation": "the answer follows", "answer_grounded": "Yes"}
QA = {"question": "What links the two?", "answer": "The square.", "hop_1": "a square", "hop_2": "it turns",
      "bridge": "the square"}


@pytest.fixture(scope="module")
def hour(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real 61-minute H.264 video, tiny (64x48 at 0.5 fps): 1800 frames read in seconds."""
    path = tmp_path_factory.mktemp("media") / "hour.mp4"
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=64x48:rate=1/2",
                    "-t", "3660", "-c:v", "libx264", "-preset", "ultrafast", "-g", "30", "-pix_fmt", "yuv420p",
                    str(path)], check=True, capture_output=True)
    return path


@pytest.fixture
def api() -> Iterator[FakeAPI]:
    with fake_api() as server:
        server.content = json.dumps(GROUNDED)
        yield server


@pytest.fixture(scope="module")
def derived(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One media folder for the module: frames and clips are content-keyed, so tests share them safely."""
    return tmp_path_factory.mktemp("derived")


@pytest.fixture
def settings(tmp_path: Path, api: FakeAPI, derived: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Settings]:
    monkeypatch.setenv("DASHSCOPE_API_KEY", "test-dashscope-key")
    s = project(tmp_path / "proj", models__C3="qwen/qwen3.7-plus", runner__backoff_base_s=0.01)
    s.media.dir = str(derived)
    s.providers.qwen_base_url = f"{api.url}/compatible-mode/v1"
    s.providers.vllm_base_url = f"{api.url}/vllm/v1"
    s.build.verify_size = (64, 48)  # the source's own size: frames are not scaled up for the test
    yield s
    forget_engines()


@dataclass
class Ctx:
    """What a gate is given (build/gates/context.py's GateContext), without a build around it."""

    settings: Settings
    runner: Runner
    item_id: int = 1
    prompts_dir: str | None = None

    @property
    def engine(self) -> Engine:
        return self.runner.engine

    def rng(self, *salt: object) -> random.Random:
        return random.Random(repr(salt))


def clips(video: Path) -> tuple[Clip, Clip]:
    """Two 30-minute segments of the same video, 10 s apart."""
    return (Clip(1, 1, 1, 1, str(video), 0.0, SEGMENT_S, ((0.0, "a square appears"),)),
            Clip(2, 2, 1, 1, str(video), SEGMENT_S + 10, 2 * SEGMENT_S + 10, ((0.0, "the square turns"),)))


def content(api: FakeAPI) -> list[dict[str, Any]]:
    (seen,) = api.requests(CHAT)
    body = seen.json
    assert body["model"] == "qwen3.7-plus"
    return list(body["messages"][0]["content"])


def test_c3_on_qwen_goes_as_video_at_half_an_fps_and_the_funnel_says_so(settings: Settings, api: FakeAPI,
                                                                        hour: Path) -> None:
    verdict = c3_grounding.check(Ctx(settings, runner_for(settings)), QA, clips(hour), attempt=1)
    assert verdict.passed, verdict.reason
    parts = content(api)
    videos = [p for p in parts if p["type"] == "video"]
    assert len(videos) == 2 and not [p for p in parts if p["type"] == "image_url"]  # no frame as an image part
    for v in videos:
        assert v["fps"] == 0.5 and len(v["video"]) == 900  # 30 min at 0.5 fps, every frame of the SPEC's rate
        assert all(url.startswith("data:image/jpeg;base64,") for url in v["video"][:3])
    texts = [p["text"] for p in parts if p["type"] == "text"]
    assert "Video 1:" in texts and "Video 2:" in texts  # each segment introduced, then its transcript

    fps = funnel(settings)["fps"]["C3"]
    assert (fps["sent_min"], fps["sent_max"], fps["asked"], fps["spec"]) == (0.5, 0.5, [0.5], 0.5)
    assert fps["sent_as"] == ["frame_list"] and fps["calls"] == 1 and fps["thinned"] == 0
    assert funnel(settings)["fps"]["D4"]["calls"] == 0
    shown = CliRunner().invoke(main, ["--project", str(settings.root), "funnel"], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    assert "C3 0.5 fps of 0.5 asked (SPEC 0.5) as frame_list, 1 call(s)" in shown.output
    assert "D4: no fps recorded (SPEC 0.5)" in shown.output
    as_json = CliRunner().invoke(main, ["--project", str(settings.root), "funnel", "--json"])
    assert json.loads(as_json.output)["fps"]["C3"]["sent_as"] == ["frame_list"]
    viewer = TestClient(make_app(settings, "tok-0123456789abcdef", Sources(funnel=lambda: funnel(settings))))
    assert viewer.get("/?token=tok-0123456789abcdef", follow_redirects=False).status_code == 303
    page = viewer.get("/funnel").text
    assert '<li data-gate="C3">C3 0.5 fps of 0.5 asked (SPEC 0.5) as frame_list, 1 call(s)</li>' in page
    report = {r["role"]: r for r in _fps_rows(SimpleNamespace(engine=open_store(settings)))}  # type: ignore[arg-type]
    assert (report["C3"]["got"], report["C3"]["SPEC fps"], report["C3"]["sent as"]) == ("0.5", 0.5, "frame_list")
    assert report["H"]["SPEC fps"] == 2.0 and report["H"]["calls"] == 0 and report["H"]["got"] is None


def test_a_frame_list_past_the_models_cap_is_thinned_and_funnel_and_show_give_the_fps_it_got(
        settings: Settings, api: FakeAPI, hour: Path) -> None:
    settings.providers.qwen_max_frames = 512  # Qwen2.5-VL's cap: 512 of 900 frames a segment
    c3_grounding.check(Ctx(settings, runner_for(settings), item_id=7), QA, clips(hour), attempt=1)
    assert [len(p["video"]) for p in content(api) if p["type"] == "video"] == [512, 512]
    fps = funnel(settings)["fps"]["C3"]
    assert fps["sent_min"] == fps["sent_max"] == round(512 / SEGMENT_S, 4) and fps["thinned"] == 1
    assert fps["text"] == "C3 0.284 fps of 0.5 asked (SPEC 0.5) as frame_list, 1 call(s), thinned in 1"
    with read_core(open_store(settings)) as s:
        (call,) = story_calls(s, 7)  # the calls table of `show 7` and of the viewer's item page
    assert call["role"] == "C3" and call["fps"] == "0.284 fps of 0.5 asked (frame_list, thinned)"


def test_c3_on_qwen_as_a_video_file_carries_dashscopes_fps(settings: Settings, api: FakeAPI, hour: Path) -> None:
    settings.providers.qwen_video = "video_url"
    c3_grounding.check(Ctx(settings, runner_for(settings)), QA, clips(hour), attempt=1)
    files = [p for p in content(api) if p["type"] == "video_url"]
    assert len(files) == 2 and all(f["fps"] == 0.5 for f in files)
    assert all(f["video_url"]["url"].startswith("data:video/mp4;base64,") for f in files)
    fps = funnel(settings)["fps"]["C3"]
    assert fps["sent_as"] == ["video"] and fps["sent_min"] == fps["sent_max"] == 0.5


def test_a_video_file_over_the_apis_inline_bound_is_refused_naming_the_clip(settings: Settings, api: FakeAPI,
                                                                            hour: Path) -> None:
    settings.providers.qwen_video = "video_url"
    settings.providers.qwen_video_max_mb = 0.001
    request = ModelRequest(role="C3", parts=[TextPart(text="?"), VideoPart(
        path=str(hour), start=0.0, end=60.0, fps=0.5, size=(64, 48), audio=False)])
    with pytest.raises(PermanentModelError, match=r"clip of .*hour\.mp4 \[0s–60s\] is .* MB as base64, over the "
                                                  r"0\.001 MB"):
        QwenProvider(settings).complete("qwen3.7-plus", request, None, 5.0)
    assert api.requests(CHAT) == []  # nothing was sent


def test_vllm_samples_its_video_url_at_the_requests_fps(settings: Settings, api: FakeAPI, hour: Path) -> None:
    settings.providers.vllm_video = "video_url"
    part = VideoPart(path=str(hour), start=0.0, end=60.0, fps=0.5, size=(64, 48), audio=False)
    request = ModelRequest(role="C3", parts=[TextPart(text="?"), part], response_schema="Grounding")
    response = runner_for(settings).call(request, model="vllm/Qwen/Qwen3-VL-30B-A3B-Instruct")
    body = api.requests(CHAT)[0].json
    assert body["mm_processor_kwargs"] == {"fps": 0.5, "do_sample_frames": True}
    assert [p["type"] for p in body["messages"][0]["content"]].count("video_url") == 1
    assert response.raw["frames"] == [{"part": 1, "fps_asked": 0.5, "fps_sent": 0.5, "frames": 30, "limit": None,
                                       "subsampled": False, "sent_as": "video"}]
    two = request.model_copy(update={"parts": [*request.parts, part.model_copy(update={"fps": 2.0})]})
    with pytest.raises(PermanentModelError, match="the clips ask 0.5, 2 fps"):
        VLLMProvider(settings).complete("Qwen/Qwen3-VL-30B-A3B-Instruct", two, None, 5.0)
