"""The transformers provider's loading and calling code, on tiny randomly initialised models built here
(a causal LM, a reward model and a LLaVA-style vision model; no hub, no download)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from playlisteval.config import Settings
from playlisteval.errors import PermanentModelError, ProviderNotAvailable
from playlisteval.models.request import ImagePart, ModelRequest, TextPart, VideoPart
from tests.helpers import project
from tests.provider_fakes import ledger, make_video, runner_for

pytest.importorskip("transformers")

WORDS = ["[UNK]", "[PAD]", "[EOS]", "<image>", *"abcdefghijklmnopqrstuvwxyz0123456789{}[]:,\"@"]


def _tokenizer() -> Any:
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {w: i for i, w in enumerate(WORDS)}
    core = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    tok = PreTrainedTokenizerFast(tokenizer_object=core, unk_token="[UNK]", pad_token="[PAD]", eos_token="[EOS]",
                                  extra_special_tokens={"image_token": "<image>"})
    tok.chat_template = ("{% for m in messages %}{% if m['content'] is string %}{{ m['content'] }}{% else %}"
                         "{% for c in m['content'] %}{% if c['type'] == 'image' %}<image> {% else %}{{ c['text'] }} "
                         "{% endif %}{% endfor %}{% endif %}{% endfor %}")
    return tok


def _text_config(**extra: Any) -> Any:
    from transformers import LlamaConfig

    return LlamaConfig(vocab_size=len(WORDS), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                       num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=2048, pad_token_id=1,
                       eos_token_id=2, **extra)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    import torch
    from transformers import (
        CLIPImageProcessor,
        CLIPVisionConfig,
        LlamaForCausalLM,
        LlamaForSequenceClassification,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
    )

    root = tmp_path_factory.mktemp("tiny")
    torch.manual_seed(0)
    tok = _tokenizer()
    paths = {name: root / name for name in ("lm", "reward", "vlm")}
    LlamaForCausalLM(_text_config()).save_pretrained(paths["lm"])
    tok.save_pretrained(paths["lm"])
    LlamaForSequenceClassification(_text_config(num_labels=1)).save_pretrained(paths["reward"])
    tok.save_pretrained(paths["reward"])
    vision = CLIPVisionConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                              image_size=28, patch_size=14, projection_dim=16)
    config = LlavaConfig(vision_config=vision, text_config=_text_config(), image_token_index=WORDS.index("<image>"),
                         vision_feature_layer=-1)
    LlavaForConditionalGeneration(config).save_pretrained(paths["vlm"])
    processor = LlavaProcessor(image_processor=CLIPImageProcessor(size={"shortest_edge": 28},
                                                                  crop_size={"height": 28, "width": 28}),
                               tokenizer=tok, patch_size=14, vision_feature_select_strategy="default",
                               chat_template=tok.chat_template, num_additional_image_tokens=1)
    processor.save_pretrained(paths["vlm"])
    paths["video"] = make_video(root / "v.mp4", seconds=6, size="96x72")
    return paths


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    s = project(tmp_path / "proj")
    s.providers.hf_max_new_tokens = 6
    s.providers.hf_device = "cpu"
    return s


def text_request(**kw: Any) -> ModelRequest:
    return ModelRequest(role="G", parts=[TextPart(text="a b c")], **kw)


def test_a_causal_lm_loads_and_answers_through_the_runner(settings: Settings, tiny: dict[str, Path]) -> None:
    from playlisteval.models.hf import HFProvider

    provider = HFProvider(settings)
    assert "is a text model" in provider.check(str(tiny["lm"]))
    runner = runner_for(settings)
    runner.registry.register("hf", provider)
    response = runner.call(text_request(response_schema="TextAnswer"), model=f"hf/{tiny['lm']}")
    assert response.malformed  # a random model writes no JSON: the runner repaired, then reported
    rows = ledger(runner.engine)
    assert [r.status for r in rows] == ["malformed"] * 3
    assert all(r.input_tokens > 0 and 1 <= r.output_tokens <= 6 for r in rows)  # hf_max_new_tokens
    assert all(r.gpu_seconds == 0 and r.usd == 0 for r in rows)  # CPU: no GPU time charged
    assert provider.load(str(tiny["lm"])) is provider.load(str(tiny["lm"]))  # loaded once, kept


def test_a_reward_model_returns_its_score(settings: Settings, tiny: dict[str, Path]) -> None:
    from playlisteval.models.hf import HFProvider

    provider = HFProvider(settings)
    first = provider.complete(str(tiny["reward"]), text_request(), None, timeout=30)
    again = provider.complete(str(tiny["reward"]), text_request(), None, timeout=30)
    score = json.loads(first.text)["score"]
    assert isinstance(score, float) and first.raw["score"] == score == json.loads(again.text)["score"]


def test_a_vision_model_sees_video_as_frames_within_its_image_limit(settings: Settings,
                                                                    tiny: dict[str, Path]) -> None:
    from playlisteval.models.hf import HFProvider

    settings.providers.image_limits["hf/*"] = 3
    provider = HFProvider(settings)
    assert "is a vision model" in provider.check(str(tiny["vlm"]))
    req = ModelRequest(role="G", parts=[TextPart(text="a b"), VideoPart(path=str(tiny["video"]), start=0, end=5,
                                                                        fps=1, size=(64, 48), label="clip")])
    reply = provider.complete(str(tiny["vlm"]), req, None, timeout=30)
    assert reply.raw["images"] == 3 and reply.usage.output_tokens >= 1


def test_text_models_refuse_images_and_missing_models_are_permanent(settings: Settings,
                                                                    tiny: dict[str, Path]) -> None:
    from playlisteval.models.hf import HFProvider

    provider = HFProvider(settings)
    image = ModelRequest(role="G", parts=[ImagePart(path=str(tiny["video"])), TextPart(text="a")])
    with pytest.raises(PermanentModelError, match="text-only"):
        provider.complete(str(tiny["lm"]), image, None, timeout=30)
    with pytest.raises(PermanentModelError, match="cannot load"):
        provider.complete(str(tiny["lm"].parent / "absent"), text_request(), None, timeout=30)


def test_missing_transformers_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from playlisteval.models import hf

    monkeypatch.setitem(sys.modules, "transformers", None)  # import now raises ImportError
    with pytest.raises(ProviderNotAvailable, match=r"playlisteval\[gpu\]"):
        hf._transformers()


@pytest.mark.gpu
def test_on_a_gpu_calls_are_charged_gpu_time(settings: Settings, tiny: dict[str, Path]) -> None:
    from playlisteval.models.hf import HFProvider

    settings.providers.hf_device = "auto"
    provider = HFProvider(settings)
    reply = provider.complete(str(tiny["lm"]), text_request(), None, timeout=30)
    loaded = provider.load(str(tiny["lm"]))
    assert loaded.device.startswith("cuda") and str(next(loaded.model.parameters()).dtype) == "torch.bfloat16"
    assert reply.usage.gpu_seconds > 0
