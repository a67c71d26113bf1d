"""Live calls, one tiny call per provider (pytest --run-api; each skipped without its key or server).

Models can be chosen with PLAYLISTEVAL_LIVE_<PROVIDER>_MODEL; a vLLM test needs
PLAYLISTEVAL_PROVIDERS__VLLM_BASE_URL and PLAYLISTEVAL_LIVE_VLLM_MODEL, an hf test PLAYLISTEVAL_LIVE_HF_MODEL
(a local folder or a cached hub id). Each call carries a 2-second clip (one frame at 0.5 fps) and a
strict schema, and must come back parsed and priced on the ledger.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from playlisteval.models.request import GenerationSettings, ModelRequest, TextPart, VideoPart
from tests.helpers import project
from tests.provider_fakes import ledger, make_video, runner_for

LIVE = [
    ("gemini", ("GEMINI_API_KEY", "GOOGLE_API_KEY"), "gemini-3-flash-preview"),
    ("openai", ("OPENAI_API_KEY",), "gpt-5.4-mini"),
    ("qwen", ("DASHSCOPE_API_KEY",), "qwen3.7-plus"),
    ("vllm", ("PLAYLISTEVAL_LIVE_VLLM_MODEL",), ""),
    ("hf", ("PLAYLISTEVAL_LIVE_HF_MODEL",), ""),
]


@pytest.mark.api
@pytest.mark.parametrize(("provider", "needs", "default"), LIVE, ids=[p for p, _, _ in LIVE])
def test_one_tiny_live_call(provider: str, needs: tuple[str, ...], default: str, tmp_path: Path) -> None:
    if not any(os.environ.get(n) for n in needs):
        pytest.skip(f"set {' or '.join(needs)} to call {provider} live")
    model = os.environ.get(f"PLAYLISTEVAL_LIVE_{provider.upper()}_MODEL", default)
    settings = project(tmp_path / "proj")
    if provider == "vllm" and os.environ.get("PLAYLISTEVAL_PROVIDERS__VLLM_BASE_URL"):
        settings.providers.vllm_base_url = os.environ["PLAYLISTEVAL_PROVIDERS__VLLM_BASE_URL"]
    video = make_video(tmp_path / "tiny.mp4", seconds=3, size="320x240")
    request = ModelRequest(
        role="C2_transcript_answer", response_schema="TextAnswer",
        settings=GenerationSettings(max_output_tokens=2000),
        parts=[VideoPart(path=str(video), start=0.0, end=2.0, fps=0.5, size=(320, 240), audio=False,
                         label="Clip 1"),
               TextPart(text="In one short sentence: what kind of picture is this clip? Give your reasoning "
                             "as the explanation and the sentence as the answer.")],
    )
    runner = runner_for(settings)
    response = runner.call(request, model=f"{provider}/{model}")
    assert response.parsed is not None, response.malformed_reason
    row = ledger(runner.engine)[-1]
    assert row.status == "ok" and row.input_tokens > 0
    if provider in ("gemini", "openai", "qwen") and settings.price_for(f"{provider}/{model}").input:
        assert row.usd > 0
