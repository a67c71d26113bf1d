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
    from playlisteval.models.providers.hf import HFProvider

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


def reward_request(answer: str, **kw: Any) -> ModelRequest:
    prompt = TextPart(text=f"Question: a b\n\nCandidate answer:\n{answer}")
    return ModelRequest(role="G", parts=[*kw.pop("media", []), prompt], template="g7_reward.j2", **kw)


def test_a_reward_model_scores_each_answer_on_its_own(settings: Settings, tiny: dict[str, Path]) -> None:
    """SPEC G7 (issue 20): one score per answer, the same answer the same score, another answer another."""
    from playlisteval.models.providers.hf import HFProvider

    provider = HFProvider(settings)
    assert provider.is_reward_model(str(tiny["reward"])) and not provider.is_reward_model(str(tiny["lm"]))
    first = provider.complete(str(tiny["reward"]), reward_request("c d e"), None, timeout=30)
    again = provider.complete(str(tiny["reward"]), reward_request("c d e"), None, timeout=30)
    other = provider.complete(str(tiny["reward"]), reward_request("x y z 1 2 3"), None, timeout=30)
    score = json.loads(first.text)["score"]
    assert isinstance(score, float) and first.raw["score"] == score == json.loads(again.text)["score"]
    assert json.loads(other.text)["score"] != score
    assert first.usage.input_tokens > 0 and first.usage.output_tokens == 0


def test_a_reward_model_refuses_a_pairwise_prompt_and_frames_it_cannot_see(settings: Settings,
                                                                           tiny: dict[str, Path]) -> None:
    """Never a score it did not compute: the G4 prompt (both answers) or frames to a text-only reward model are
    permanent errors, which the judge run records as errors (not 0.5)."""
    from playlisteval.models.providers.hf import HFProvider

    provider = HFProvider(settings)
    with pytest.raises(PermanentModelError, match="scores one answer at a time"):
        provider.complete(str(tiny["reward"]), text_request(template="g4_judge.j2"), None, timeout=30)
    frame = ImagePart(path=str(tiny["video"]), timestamp=1.0)
    with pytest.raises(PermanentModelError, match="text-only reward model"):
        provider.complete(str(tiny["reward"]), reward_request("c d", media=[frame]), None, timeout=30)
    with pytest.raises(PermanentModelError, match="cannot read"):
        provider.is_reward_model(str(tiny["reward"]) + "-missing")


def test_a_vision_model_sees_video_as_frames_within_its_image_limit(settings: Settings,
                                                                    tiny: dict[str, Path]) -> None:
    from playlisteval.models.providers.hf import HFProvider

    settings.providers.image_limits["hf/*"] = 3
    provider = HFProvider(settings)
    assert "is a vision model" in provider.check(str(tiny["vlm"]))
    req = ModelRequest(role="G", parts=[TextPart(text="a b"), VideoPart(path=str(tiny["video"]), start=0, end=5,
                                                                        fps=1, size=(64, 48), label="clip")])
    reply = provider.complete(str(tiny["vlm"]), req, None, timeout=30)
    assert reply.raw["images"] == 3 and reply.usage.output_tokens >= 1
    # issue 42: 5 s at 1 fps thinned to 3 frames — the fps the clip got is recorded with the call
    assert reply.raw["frames"] == [{"part": 1, "fps_asked": 1.0, "fps_sent": 0.6, "frames": 3, "limit": 3,
                                    "subsampled": True, "sent_as": "images"}]


def test_text_models_refuse_images_and_missing_models_are_permanent(settings: Settings,
                                                                    tiny: dict[str, Path]) -> None:
    from playlisteval.models.providers.hf import HFProvider

    provider = HFProvider(settings)
    image = ModelRequest(role="G", parts=[ImagePart(path=str(tiny["video"])), TextPart(text="a")])
    with pytest.raises(PermanentModelError, match="text-only"):
        provider.complete(str(tiny["lm"]), image, None, timeout=30)
    with pytest.raises(PermanentModelError, match="cannot load"):
        provider.complete(str(tiny["lm"].parent / "absent"), text_request(), None, timeout=30)


def test_missing_transformers_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from playlisteval.models.providers import hf

    monkeypatch.setitem(sys.modules, "transformers", None)  # import now raises ImportError
    with pytest.raises(ProviderNotAvailable, match=r"playlisteval\[gpu\]"):
        hf._transformers()


@pytest.mark.gpu
def test_on_a_gpu_calls_are_charged_gpu_time(settings: Settings, tiny: dict[str, Path]) -> None:
    from playlisteval.models.providers.hf import HFProvider

    settings.providers.hf_device = "auto"
    provider = HFProvider(settings)
    reply = provider.complete(str(tiny["lm"]), text_request(), None, timeout=30)
    loaded = provider.load(str(tiny["lm"]))
    assert loaded.device.startswith("cuda") and str(next(loaded.model.parameters()).dtype) == "torch.bfloat16"
    assert reply.usage.gpu_seconds > 0


@pytest.fixture(scope="module")
def vision_reward(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny Gemma-3 reward model (vision tower + a one-label head) and its processor, saved locally."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import (
        Gemma3Config,
        Gemma3ForSequenceClassification,
        Gemma3ImageProcessor,
        Gemma3Processor,
        Gemma3TextConfig,
        PreTrainedTokenizerFast,
        SiglipVisionConfig,
    )

    words = [*WORDS, "<start_of_image>", "<end_of_image>", "<image_soft_token>", "<bos>"]
    vocab = {w: i for i, w in enumerate(words)}
    core = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    tok = PreTrainedTokenizerFast(tokenizer_object=core, unk_token="[UNK]", pad_token="[PAD]", eos_token="[EOS]",
                                  bos_token="<bos>", extra_special_tokens={
                                      "image_token": "<image_soft_token>", "boi_token": "<start_of_image>",
                                      "eoi_token": "<end_of_image>"})
    tok.chat_template = ("{% for m in messages %}{% for c in m['content'] %}{% if c['type'] == 'image' %}"
                         "<start_of_image> {% else %}{{ c['text'] }} {% endif %}{% endfor %}{% endfor %}")
    text = Gemma3TextConfig(vocab_size=len(words), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                            num_attention_heads=2, num_key_value_heads=1, head_dim=8, max_position_embeddings=4096,
                            pad_token_id=1, eos_token_id=2, bos_token_id=vocab["<bos>"], sliding_window=64)
    vision = SiglipVisionConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                                image_size=28, patch_size=14)
    config = Gemma3Config(vision_config=vision, text_config=text, mm_tokens_per_image=4, num_labels=1,
                          image_token_index=vocab["<image_soft_token>"], boi_token_index=vocab["<start_of_image>"],
                          eoi_token_index=vocab["<end_of_image>"])
    torch.manual_seed(0)
    root = tmp_path_factory.mktemp("vision-reward")
    Gemma3ForSequenceClassification(config).save_pretrained(root / "rm")
    # without torchvision transformers falls back to its PIL image processor (and says so)
    Gemma3Processor(image_processor=Gemma3ImageProcessor(size={"height": 28, "width": 28}), tokenizer=tok,
                    chat_template=tok.chat_template, image_seq_length=4).save_pretrained(root / "rm")
    return root


def test_a_vision_reward_model_scores_the_answer_with_the_frames(settings: Settings, vision_reward: Path) -> None:
    """SPEC G7 (issue 20): a reward model with a vision tower takes the frames; the score moves with them."""
    from PIL import Image

    from playlisteval.models.providers.hf import HFProvider

    frame_path = vision_reward / "frame.jpg"
    Image.new("RGB", (96, 72), (200, 30, 30)).save(frame_path)
    frame = ImagePart(path=str(frame_path), timestamp=1.0)
    provider = HFProvider(settings)
    model = str(vision_reward / "rm")
    assert provider.is_reward_model(model)
    seen = provider.complete(model, reward_request("c d e", media=[frame]), None, timeout=60)
    blind = provider.complete(model, reward_request("c d e"), None, timeout=60)
    other = provider.complete(model, reward_request("x y z", media=[frame]), None, timeout=60)
    assert seen.raw["images"] == 1 and blind.raw["images"] == 0
    assert seen.usage.input_tokens > blind.usage.input_tokens  # the image's tokens were read
    scores = {json.loads(r.text)["score"] for r in (seen, blind, other)}
    assert len(scores) == 3
