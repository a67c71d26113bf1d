"""Context caching (issue 15, item 4) through the real google-genai SDK against the local fake: a judge's
evidence is cached once and referenced by every call that sends it, its lifetime bounded and its cost
(writing and storage) on the ledger; the calls that read it pay the cached-input price."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image
from sqlmodel import select

from playlisteval.config import Settings
from playlisteval.models.request import ImagePart, ModelRequest, TextPart
from playlisteval.store import transaction
from playlisteval.store.tables import ContextCache
from tests.batch_wire import CACHE_CREATE
from tests.helpers import project
from tests.provider_fakes import GENERATE, FakeAPI, fake_api, ledger, runner_for

MODEL = "gemini/gemini-3-flash-preview"
FRAMES = 20  # 20 x 258 tokens: above the 4096-token minimum


@pytest.fixture
def api() -> Iterator[FakeAPI]:
    with fake_api() as server:
        server.content = "Model B names the colour the video shows. [[B]]"
        yield server


@pytest.fixture
def settings(tmp_path: Path, api: FakeAPI, monkeypatch: pytest.MonkeyPatch) -> Settings:
    monkeypatch.setenv("GEMINI_API_KEY", "fake-gemini-cache-key")
    s = project(tmp_path / "proj", runner__backoff_base_s=0.01, batch__context_cache=True)
    s.media.dir = str(tmp_path / "media")
    s.providers.gemini_base_url = api.url
    return s


@pytest.fixture
def frames(tmp_path: Path) -> list[Path]:
    out = []
    for i in range(FRAMES):
        path = tmp_path / f"f{i:02d}.jpg"
        Image.new("RGB", (32, 24), (i * 10, 40, 90)).save(path)
        out.append(path)
    return out


def judge_request(frames: list[Path], prompt: str, run_id: int = 1) -> ModelRequest:
    evidence = [ImagePart(path=str(p), timestamp=float(i)) for i, p in enumerate(frames)]
    return ModelRequest(role="G", parts=[*evidence, TextPart(text=prompt)], purpose="eval", item_id=7, run_id=run_id)


def test_evidence_is_cached_once_and_read_by_every_pair(settings: Settings, api: FakeAPI,
                                                        frames: list[Path]) -> None:
    runner = runner_for(settings)
    for pair in range(3):  # three pairs of one question: the same evidence, three prompts
        assert "[[B]]" in runner.call(judge_request(frames, f"Which answer is better? pair {pair}"), model=MODEL).text
    (create,) = api.requests(CACHE_CREATE)  # one cache for the three calls
    made = create.json
    assert made["ttl"] == "600s" and len(made["contents"][0]["parts"]) == 2 * FRAMES  # frame markers + images
    calls = api.requests(GENERATE)
    assert len(calls) == 3
    for call in calls:  # each call sends its prompt only, and names the cache
        body = call.json
        assert body["cachedContent"] == api.batch.caches[body["cachedContent"]]["name"]
        assert [p.get("text", "")[:5] for p in body["contents"][0]["parts"]] == ["Which"]
    rows = ledger(runner.engine)
    (cache_row,) = [r for r in rows if r.role == "context_cache"]
    price = settings.price_for(MODEL)
    tokens = 2 * FRAMES * 258
    assert cache_row.input_tokens == tokens and cache_row.purpose == "eval" and cache_row.run_id == 1
    storage = tokens / 1e6 * price.cache_storage * 600 / 3600
    assert cache_row.usd == pytest.approx(tokens * price.input / 1e6 + storage, rel=1e-3)
    reads = [r for r in rows if r.role == "G"]
    assert len(reads) == 3 and all(r.cached_input_tokens == tokens for r in reads)
    fresh = reads[0].input_tokens - tokens
    full = (reads[0].input_tokens * price.input + reads[0].output_tokens * price.output
            + reads[0].thinking_tokens * price.thinking) / 1e6
    assert reads[0].usd == pytest.approx(full - tokens * (price.input - (price.cached_input or 0)) / 1e6)
    assert fresh > 0


def test_an_expired_or_lost_cache_is_made_again(settings: Settings, api: FakeAPI, frames: list[Path]) -> None:
    runner = runner_for(settings)
    runner.call(judge_request(frames, "pair 0"), model=MODEL)
    with transaction(runner.engine) as s:  # its life is over: the next call makes a new one
        row = s.exec(select(ContextCache)).one()
        row.expires_at = 0.0
        s.add(row)
    runner.call(judge_request(frames, "pair 1"), model=MODEL)
    assert len(api.requests(CACHE_CREATE)) == 2
    api.batch.caches.clear()  # deleted at the provider before its time: the call fails once, then remakes it
    response = runner.call(judge_request(frames, "pair 2"), model=MODEL)
    assert "[[B]]" in response.text and len(api.requests(CACHE_CREATE)) == 3
    statuses = [r.status for r in ledger(runner.engine) if r.role == "G"]
    assert statuses == ["ok", "ok", "error", "ok"]  # the lost cache's call is on the ledger, unpaid


def test_small_evidence_and_the_setting_off_go_inline(settings: Settings, api: FakeAPI, frames: list[Path]) -> None:
    runner = runner_for(settings)
    runner.call(judge_request(frames[:3], "three frames"), model=MODEL)  # 774 tokens: below the minimum
    settings.batch.context_cache = False
    runner.call(judge_request(frames, "the setting is off"), model=MODEL)
    assert not api.requests(CACHE_CREATE)
    assert all("cachedContent" not in c.json for c in api.requests(GENERATE))
