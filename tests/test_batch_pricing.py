"""Batch and cached-input prices (issue 15): what the ledger charges, and `cost estimate` three ways."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from playlisteval.cli import main
from playlisteval.config import Price, load_settings, write_project
from playlisteval.models import pricing
from playlisteval.models.batch.estimate import mode_costs, totals
from playlisteval.models.estimate import project_cost
from playlisteval.models.request import Usage

PAPER = {"B": "gemini/gemini-3-flash-preview", "C2_transcript_answer": "gemini/gemini-3-flash-preview",
         "C2_transcript_verify": "openai/gpt-5.4-mini", "C2_parametric_answer_a": "gemini/gemini-3-flash-preview",
         "C2_parametric_verify_a": "openai/gpt-5.4", "C2_parametric_answer_b": "openai/gpt-5.4-mini",
         "C2_parametric_verify_b": "gemini/gemini-3.1-pro-preview", "C3": "qwen/qwen3.7-plus",
         "D1": "gemini/gemini-3-flash-preview", "D3_first": "gemini/gemini-3.1-pro-preview",
         "D3_second": "openai/gpt-5.4", "D4": "qwen/qwen3.7-plus",
         "F_first": "vllm/Qwen/Qwen3-VL-30B-A3B-Instruct", "F_second": "vllm/OpenGVLab/InternVL3_5-8B"}


def test_cached_input_batch_discount_and_storage_are_charged() -> None:
    price = Price(input=2.0, output=10.0, thinking=10.0, batch_discount=0.5, cached_input=0.2, cache_storage=4.0)
    usage = Usage(input_tokens=1_000_000, cached_input_tokens=600_000, output_tokens=100_000, thinking_tokens=50_000)
    online = 0.4 * 2.0 + 0.6 * 0.2 + 0.1 * 10.0 + 0.05 * 10.0
    assert pricing.usd(price, usage) == pytest.approx(online)
    # in a batch the fresh tokens are half price; the cached input keeps its own price (never both discounts)
    assert pricing.usd(price, usage, batch=True) == pytest.approx((online - 0.6 * 0.2) / 2 + 0.6 * 0.2)
    assert pricing.storage_usd(price, 500_000, 1800) == pytest.approx(0.5 * 4.0 * 0.5)
    # no cached-input price: cached tokens cost the input price; no discount: a batch costs the same
    plain = Price(input=2.0, output=10.0)
    assert pricing.usd(plain, usage) == pytest.approx(2.0 + 1.0)
    assert pricing.usd(plain, usage, batch=True) == pricing.usd(plain, usage)
    # GPU time is never discounted
    gpu = Price(gpu_hour=4.0, batch_discount=0.5)
    assert pricing.usd(gpu, Usage(gpu_seconds=3600), batch=True) == pytest.approx(4.0)
    with pytest.raises(ValueError):
        Price(batch_discount=1.0)  # "free" is not a discount


def test_cost_estimate_shows_online_batch_and_batch_with_cache(tmp_path: Path) -> None:
    write_project(tmp_path)
    settings = load_settings(tmp_path, environ={})
    settings.models.update(PAPER)
    costs = {c.role.role: c for c in mode_costs(settings, project_cost(settings, 100))}
    for role in ("B", "D1", "C2_transcript_verify", "D3_second"):  # Gemini and OpenAI: half by batch
        assert costs[role].batched and costs[role].batch == pytest.approx(costs[role].online / 2)
    assert costs["C3"].batched and costs["C3"].batch == pytest.approx(costs["C3"].online / 2)  # DashScope's too
    assert not costs["F_first"].batched and costs["F_first"].batch == costs["F_first"].online  # GPU time: no batch
    assert costs["D1"].cached_tokens > 0 and costs["D1"].cached < costs["D1"].batch  # the generator's clips
    assert costs["D4"].cached_tokens > 0 and costs["D4"].cached < costs["D4"].batch  # C3's clips
    assert costs["F_first"].cached_tokens == 0  # a local model has no cached-input price: nothing saved
    online, batch, cached = totals(list(costs.values()))
    assert cached < batch < online
    result = CliRunner().invoke(main, ["--project", str(tmp_path), "cost", "estimate", "--seeds", "100"],
                                env={f"PLAYLISTEVAL_MODELS__{r}": s for r, s in PAPER.items()})
    assert result.exit_code == 0, result.output
    assert "by batch with context caching" in result.output and f"{online:.4f} USD" in result.output
    assert f"{batch:.4f} by batch ({batch / online:.2f}× online)" in result.output
    assert "† no batch price" in result.output
