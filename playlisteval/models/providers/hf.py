"""Local models through transformers, for reward models and judges a vLLM server cannot serve (SPEC G7).

transformers is imported only when a model is first loaded (extra ``gpu``). The model's config, or its
``[judges."hf/…"]`` declaration, decides how it is used (hf_kind.py): a ``*ForSequenceClassification`` model,
or one declared ``kind = "reward"``, is a reward model (SPEC G7): it scores one answer at a time — the reward
prompt (prompts/reward.py) cut into the user's turn and the assistant's answer, with the frames when its
config has a vision tower (a remote-code scorer gets them through its declared ``score_method``) — and the
reply is its score as ``{"score": x}``; any other prompt sent to it is a permanent error, never a score. A
vision-language model (``*ForConditionalGeneration`` / image-text-to-text) sees video as frames capped by the
model's image limit; another known generative head is a text-only causal LM; any other architecture is an
error, never a guess. Models are loaded once per process and kept; a lock per model serialises generation on
it. A GPU is used when there is one (``hf_device``); a call is charged its latency in GPU-seconds only when
it ran on a GPU.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from typing import Any

from PIL import Image
from pydantic import BaseModel

from playlisteval.config import Settings
from playlisteval.errors import PermanentModelError, ProviderNotAvailable
from playlisteval.models.providers.hf_kind import declaration_of, kind_of, method_of, read_config, score_with
from playlisteval.models.providers.media_parts import framed, frames_record, image_limit
from playlisteval.models.providers.pixel_budget import fit_images
from playlisteval.models.providers.wire import mmss, strict_json_schema
from playlisteval.models.request import AudioPart, ImagePart, ModelRequest, ProviderReply, TextPart, Usage, VideoPart
from playlisteval.prompts.reward import REWARD_TEMPLATE, split_turns


def _transformers() -> Any:
    try:
        import transformers
    except ImportError as exc:
        raise ProviderNotAvailable(
            f"hf: transformers is not installed (pip install 'playlisteval[gpu]'): {exc}") from exc
    return transformers


@dataclass
class Loaded:
    kind: str  # "text", "vision" or "reward"
    model: Any
    tokenizer: Any  # a tokenizer, or the processor of a vision model (or of a vision reward model)
    device: str
    lock: threading.Lock
    sees_images: bool = False  # a vision model, or a reward model with a vision tower
    score: Any = None  # a remote-code reward model's own scoring method (hf_kind.score_with)


class HFProvider:
    name = "hf"
    key_env: tuple[str, ...] = ()

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._models: dict[str, Loaded] = {}
        self._kinds: dict[str, str] = {}  # model → its kind, read from its config (is_reward_model)
        self._lock = threading.Lock()

    # -- loading -----------------------------------------------------------------------------------
    def device(self) -> str:
        import torch

        wanted = self.settings.providers.hf_device
        if wanted == "auto":
            return "cuda" if torch.cuda.is_available() else "cpu"
        return wanted

    def dtype(self, device: str) -> Any:
        import torch

        wanted = self.settings.providers.hf_dtype
        if wanted == "auto":
            return torch.bfloat16 if device.startswith("cuda") else torch.float32
        return getattr(torch, wanted)

    def load(self, model_id: str) -> Loaded:
        with self._lock:
            if model_id in self._models:
                return self._models[model_id]
            tf = _transformers()
            device = self.device()
            declared = declaration_of(self.settings, model_id)
            config = read_config(tf, model_id, declared)
            kind = kind_of(config, model_id, declared)
            score = None
            try:
                options = {"dtype": self.dtype(device), "trust_remote_code": declared.trust_remote_code}
                remote = {"trust_remote_code": declared.trust_remote_code}
                sees = kind == "vision" or (kind == "reward" and getattr(config, "vision_config", None) is not None)
                if kind == "reward" and declared.score_method:  # its own class (auto_map), scored by its method
                    model = tf.AutoModel.from_pretrained(model_id, **options)
                    score, sees = method_of(model, model_id, declared), True
                    tokenizer = tf.AutoTokenizer.from_pretrained(model_id, **remote)
                    if getattr(model, "tokenizer", "") is None:  # XComposer-style: the method tokenizes itself
                        model.tokenizer = tokenizer
                elif kind == "reward":
                    model = tf.AutoModelForSequenceClassification.from_pretrained(model_id, **options)
                    tokenizer = (tf.AutoProcessor if sees else tf.AutoTokenizer).from_pretrained(model_id, **remote)
                elif kind == "vision":
                    model = tf.AutoModelForImageTextToText.from_pretrained(model_id, **options)
                    tokenizer = tf.AutoProcessor.from_pretrained(model_id, **remote)
                else:
                    model = tf.AutoModelForCausalLM.from_pretrained(model_id, **options)
                    tokenizer = tf.AutoTokenizer.from_pretrained(model_id, **remote)
            except (OSError, ValueError, KeyError) as exc:
                raise PermanentModelError(f"hf: cannot load {model_id}: {str(exc)[:300]}") from exc
            model.to(device).eval()
            loaded = Loaded(kind, model, tokenizer, device, threading.Lock(), sees_images=sees, score=score)
            self._models[model_id] = loaded
            return loaded

    # -- the call ----------------------------------------------------------------------------------
    def complete(self, model: str, request: ModelRequest, schema: type[BaseModel] | None,
                 timeout: float) -> ProviderReply:
        import torch

        loaded = self.load(model)
        started = time.monotonic()
        with loaded.lock, torch.inference_mode():
            if loaded.kind == "reward":
                reply = self._score(loaded, model, request)
            else:
                reply = self._generate(loaded, model, request, schema)
        if loaded.device.startswith("cuda"):
            reply.usage.gpu_seconds = time.monotonic() - started
        return reply

    def _score(self, loaded: Loaded, model: str, request: ModelRequest) -> ProviderReply:
        """One answer's reward: the user's turn (frames first, when the model takes images) and the
        answer as the assistant's turn, through the model's chat template; the score is the single logit
        (or, for a two-label head, the second label's margin over the first)."""
        if request.template != REWARD_TEMPLATE:
            raise PermanentModelError(f"hf/{model} is a reward model: it scores one answer at a time "
                                      f"({REWARD_TEMPLATE}), it cannot answer a {request.template or 'free'} prompt")
        if any(isinstance(p, AudioPart) for p in request.parts):
            raise PermanentModelError(f"hf/{model}: audio input is not supported by this provider")
        visual = any(isinstance(p, VideoPart | ImagePart) for p in request.parts)
        if visual and not loaded.sees_images:
            raise PermanentModelError(f"hf/{model} is a text-only reward model: it cannot take the frames; "
                                      "judge it with a text-only modality (--modality transcript)")
        try:
            user, answer = split_turns(request.text())
        except ValueError as exc:
            raise PermanentModelError(f"hf/{model}: {exc}") from exc
        images = 0
        if loaded.score is not None:
            paths = self._frame_paths(model, request)
            score = score_with(loaded.score, model, user, answer, paths)
            return ProviderReply(text=json.dumps({"score": score}), usage=Usage(input_tokens=0, output_tokens=0),
                                 finish_reason="stop", raw={"score": score, "images": len(paths), "method": True})
        if loaded.sees_images:
            content, images, _ = self._content(loaded, model, request.model_copy(
                update={"parts": [p for p in request.parts if not isinstance(p, TextPart)]}))
            messages = [{"role": "user", "content": [*content, {"type": "text", "text": user}]},
                        {"role": "assistant", "content": [{"type": "text", "text": answer}]}]
            inputs = loaded.tokenizer.apply_chat_template(messages, tokenize=True, return_dict=True,
                                                          return_tensors="pt")
        else:
            tok = loaded.tokenizer
            if getattr(tok, "chat_template", None):
                prompt = tok.apply_chat_template([{"role": "user", "content": user},
                                                  {"role": "assistant", "content": answer}], tokenize=False)
            else:
                prompt = f"{user}\n\n{answer}"
            inputs = tok(prompt, return_tensors="pt")
        inputs = inputs.to(loaded.device)
        logits = loaded.model(**inputs).logits[0].float()
        if logits.numel() == 1:
            score = float(logits[0].item())
        elif logits.numel() == 2:
            score = float((logits[1] - logits[0]).item())
        else:
            raise PermanentModelError(f"hf/{model}: a reward model needs one or two labels, it has {logits.numel()}")
        usage = Usage(input_tokens=int(inputs["input_ids"].shape[1]), output_tokens=0)
        return ProviderReply(text=json.dumps({"score": score}), usage=usage, finish_reason="stop",
                             raw={"score": score, "images": images})

    def _generate(self, loaded: Loaded, model: str, request: ModelRequest,
                  schema: type[BaseModel] | None) -> ProviderReply:
        content, images, frames = self._content(loaded, model, request)
        if schema is not None:  # no constrained decoding here: the schema goes into the prompt
            content.append({"type": "text", "text": "Reply with one JSON object that follows this JSON schema:\n"
                            + json.dumps(strict_json_schema(schema), separators=(",", ":"))})
        if loaded.kind == "vision":
            messages = [{"role": "user", "content": content}]
            inputs = loaded.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True,
                                                          return_dict=True, return_tensors="pt")
            tokenizer = loaded.tokenizer.tokenizer
        else:
            text = "\n".join(c["text"] for c in content)
            tokenizer = loaded.tokenizer
            if getattr(tokenizer, "chat_template", None):
                text = tokenizer.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True,
                                                     tokenize=False)
            inputs = tokenizer(text, return_tensors="pt")
        inputs = inputs.to(loaded.device)
        g = request.settings
        limit = g.max_output_tokens or self.settings.providers.hf_max_new_tokens
        options: dict[str, Any] = {"max_new_tokens": limit, "do_sample": bool(g.temperature)}
        if g.temperature:
            options["temperature"] = g.temperature
        if g.top_p is not None:
            options["top_p"] = g.top_p
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        output = loaded.model.generate(**inputs, pad_token_id=pad, **options)
        n_in = int(inputs["input_ids"].shape[1])
        new = output[0, n_in:]
        reply = tokenizer.decode(new, skip_special_tokens=True)
        finish = "length" if len(new) >= limit else "stop"
        usage = Usage(input_tokens=n_in, output_tokens=int(len(new)))
        # issue 42: frames only here — the fps each clip got (frames sent / seconds covered) goes with the call
        return ProviderReply(text=reply, usage=usage, finish_reason=finish,
                             raw={"images": images, **({"frames": frames} if frames else {})})

    def _content(self, loaded: Loaded, model: str,
                 request: ModelRequest) -> tuple[list[dict[str, Any]], int, list[dict[str, Any]]]:
        visual = any(isinstance(p, VideoPart | ImagePart) for p in request.parts)
        if visual and not loaded.sees_images:
            raise PermanentModelError(f"hf/{model} is a text-only model: it cannot take images or video")
        if any(isinstance(p, AudioPart) for p in request.parts):
            raise PermanentModelError(f"hf/{model}: audio input is not supported by this provider")
        request = fit_images(self.settings, request)  # issue 20 (Table 18): images within the pixel budget too
        videos = framed(self.settings, request, f"hf/{model}") if visual else {}
        content: list[dict[str, Any]] = []
        images = 0
        for i, part in enumerate(request.parts):
            if isinstance(part, TextPart):
                content.append({"type": "text", "text": part.text})
            elif isinstance(part, VideoPart):
                video = videos[i]
                if part.label:
                    content.append({"type": "text", "text": f"{part.label}:"})
                for t, path in zip(video.times, video.paths, strict=True):
                    content.append({"type": "text", "text": f"[{mmss(t - part.start)}]"})
                    content.append({"type": "image", "image": Image.open(path).convert("RGB")})
                    images += 1
            elif isinstance(part, ImagePart):
                if part.timestamp is not None:
                    content.append({"type": "text", "text": f"[frame @ {mmss(part.timestamp)}]"})
                content.append({"type": "image", "image": Image.open(part.path).convert("RGB")})
                images += 1
        return content, images, frames_record(videos, image_limit(self.settings, f"hf/{model}")) if videos else []

    def _frame_paths(self, model: str, request: ModelRequest) -> list[str]:
        """The frames' files, in order, within the model's image cap — what a remote-code scorer takes."""
        request = fit_images(self.settings, request)
        videos = framed(self.settings, request, f"hf/{model}")
        paths: list[str] = []
        for i, part in enumerate(request.parts):
            if isinstance(part, VideoPart):
                paths.extend(str(p) for p in videos[i].paths)
            elif isinstance(part, ImagePart):
                paths.append(str(part.path))
        return paths

    def is_reward_model(self, model: str) -> bool:
        """Whether the model is a reward model: declared, or a ``*ForSequenceClassification`` config (read, not
        loaded: a judge run asks this before its first call). A model that is not there, whose kind cannot be
        told, or that contradicts its declaration is a permanent error; a declared scoring method is loaded and
        checked here, so a run fails before its first pair."""
        declared = declaration_of(self.settings, model)
        if declared.score_method:
            return self.load(model).kind == "reward"
        # under the loading lock: transformers' lazy module can fail an attribute looked up by several
        # threads at its first import ("module 'transformers' has no attribute 'AutoConfig'")
        with self._lock:
            if model in self._models:
                return self._models[model].kind == "reward"
            if model in self._kinds:
                return self._kinds[model] == "reward"
            tf = _transformers()
            self._kinds[model] = kind_of(read_config(tf, model, declared), model, declared)
            return self._kinds[model] == "reward"

    # -- models check ------------------------------------------------------------------------------
    def check(self, model: str) -> str:
        tf = _transformers()
        declared = declaration_of(self.settings, model)
        kind = kind_of(read_config(tf, model, declared), model, declared)
        return f"transformers {tf.__version__}; {model} is a {kind} model; device {self.device()}"

