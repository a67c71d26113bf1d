"""Qwen3-VL-Embedding through transformers: the paper's retriever (SPEC A5, R).

One vector per chunk from its sampled frames (at most ``vl_max_frames`` images in time order, each
resized to between ``vl_min_pixels`` and ``vl_max_pixels`` pixels) and its transcript together; one
vector per query from its text. The model is the Qwen3-VL backbone: the input is a chat-formatted
conversation (an instruction as the system turn, the content as the user turn, then the assistant
prefix) and the embedding is the hidden state of its last token, L2-normalised; Matryoshka
truncation keeps the first ``dims`` dimensions and renormalises.

Weights load only from a local folder (``[index] vl_model``): nothing is downloaded. On CPU the 2B
model is far too slow for real collections; run it on a GPU worker (`playlisteval worker` serves the
"index" queue). The loading and pooling code is tested on a tiny random model built in the test.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from playlisteval.config import IndexSettings
from playlisteval.errors import ConfigError
from playlisteval.index.rows import ChunkInput, normalize_rows

CHUNK_INSTRUCTION = "Represent the user's input."
QUERY_INSTRUCTION = "Retrieve the video segments that show and say what the question asks about."
_PATCH = 32  # Qwen3-VL: 16-px patches merged 2x2, so frame sides are multiples of 32


def frame_size(width: int, height: int, min_pixels: int, max_pixels: int) -> tuple[int, int]:
    """(w, h): the aspect ratio kept, sides multiples of 32, area within [min_pixels, max_pixels]."""
    w = max(_PATCH, round(width / _PATCH) * _PATCH)
    h = max(_PATCH, round(height / _PATCH) * _PATCH)
    if w * h > max_pixels:
        scale = math.sqrt(width * height / max_pixels)
        w = max(_PATCH, math.floor(width / scale / _PATCH) * _PATCH)
        h = max(_PATCH, math.floor(height / scale / _PATCH) * _PATCH)
    elif w * h < min_pixels:
        scale = math.sqrt(min_pixels / (width * height))
        w = math.ceil(width * scale / _PATCH) * _PATCH
        h = math.ceil(height * scale / _PATCH) * _PATCH
    return w, h


def pick_frames(frames: list[Image.Image], limit: int) -> list[Image.Image]:
    """At most ``limit`` frames spread evenly, and an even count (the model pairs frames in time)."""
    if len(frames) > limit:
        keep = np.linspace(0, len(frames) - 1, limit).round().astype(int)
        frames = [frames[i] for i in keep]
    if len(frames) % 2:
        frames = frames + frames[-1:]
    return frames


class QwenVLEmbedder:
    """Qwen3-VL-Embedding (2B: 2048 dims, 8B: 4096) from a local folder; lazy, thread-safe loading."""

    needs_frames = True

    def __init__(self, model_path: str, *, dims: int = 0, max_frames: int = 16, min_pixels: int = 4096,
                 max_pixels: int = 691200, max_tokens: int = 32000, device: str = "auto",
                 dtype: str = "auto", chunk_s: float = 30.0) -> None:
        if not model_path:
            raise ConfigError("embedder qwen3-vl-embedding needs [index] vl_model: a local folder of its weights")
        path = Path(model_path).expanduser()
        if not (path / "config.json").is_file():
            raise ConfigError(f"[index] vl_model {model_path!r} is not a model folder (no config.json)")
        self.path, self.max_frames, self.chunk_s = path, max(2, max_frames), chunk_s
        self.min_pixels, self.max_pixels, self.max_tokens = min_pixels, max_pixels, max_tokens
        self.device_setting, self.dtype_setting = device, dtype
        self.name = "qwen3-vl-embedding"
        self._lock = threading.Lock()
        self._model: Any = None
        self._tokenizer: Any = None
        self._images: Any = None
        import json

        hidden = int(json.loads((path / "config.json").read_text()).get("text_config", {}).get("hidden_size", 0))
        if hidden <= 0:
            raise ConfigError(f"{path}/config.json has no text_config.hidden_size")
        self.full_dim = hidden
        self.dim = dims if 0 < dims <= hidden else hidden
        self.recipe = f"frames<={self.max_frames}/px={min_pixels}-{max_pixels}/dim={self.dim}"

    @classmethod
    def from_settings(cls, settings: IndexSettings, device: str = "auto", dtype: str = "auto") -> QwenVLEmbedder:
        # Matryoshka truncation (embedding_dims) is applied by get_embedder's wrapper, under its own name
        return cls(settings.vl_model, max_frames=settings.vl_max_frames,
                   min_pixels=settings.vl_min_pixels, max_pixels=settings.vl_max_pixels,
                   max_tokens=settings.vl_max_tokens, device=device, dtype=dtype, chunk_s=settings.chunk_s)

    # -- loading ------------------------------------------------------------------------------------
    def _load(self) -> tuple[Any, Any, Any]:
        """(model, tokenizer, image processor). The image processor is the PIL one: Qwen3VLProcessor's
        video processor needs torchvision, which has no CPU wheel matching the pinned torch here."""
        with self._lock:
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                import torch
                from transformers import AutoTokenizer, Qwen3VLModel
                from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

                device = self.device_setting
                if device == "auto":
                    device = "cuda" if torch.cuda.is_available() else "cpu"
                dtype = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}.get(
                    self.dtype_setting, torch.bfloat16 if device.startswith("cuda") else torch.float32)
                self._tokenizer = AutoTokenizer.from_pretrained(str(self.path), local_files_only=True)
                self._tokenizer.padding_side = "left"  # the last position is then every row's last token
                self._images = Qwen2VLImageProcessorPil.from_pretrained(str(self.path), local_files_only=True)
                model: Any = Qwen3VLModel.from_pretrained(str(self.path), dtype=dtype, local_files_only=True)
                self._model = model.to(device).eval()
        return self._model, self._tokenizer, self._images

    # -- inputs -------------------------------------------------------------------------------------
    def _prompt(self, instruction: str, text: str, frames: int) -> str:
        vision = "<|vision_start|><|image_pad|><|vision_end|>" * frames
        return (f"<|im_start|>system\n{instruction}<|im_end|>\n"
                f"<|im_start|>user\n{vision}{text}<|im_end|>\n<|im_start|>assistant\n")

    def _frames(self, frames: list[Image.Image]) -> list[Image.Image]:
        frames = pick_frames(frames, self.max_frames)
        w, h = frame_size(frames[0].width, frames[0].height, self.min_pixels, self.max_pixels)
        return [f.convert("RGB").resize((w, h), Image.Resampling.BICUBIC) for f in frames]

    def _forward(self, prompts: list[str], images: list[Image.Image]) -> np.ndarray:
        """Last-token states of ``prompts``; ``images`` fill their image slots in order, row by row."""
        import torch

        model, tokenizer, processor = self._load()
        extra: dict[str, Any] = {}
        if images:
            vision = processor(images=images, size={"shortest_edge": self.min_pixels,
                                                    "longest_edge": self.max_pixels}, return_tensors="pt")
            grid = vision["image_grid_thw"]
            counts = iter((grid.prod(dim=-1) // processor.merge_size ** 2).tolist())
            pad = "<|image_pad|>"
            # each image slot becomes as many pad tokens as the image has merged patches
            prompts = [_expand(p, pad, counts) for p in prompts]
            extra = {"pixel_values": vision["pixel_values"], "image_grid_thw": grid}
        batch = tokenizer(prompts, padding=True, return_tensors="pt")
        if batch["input_ids"].shape[1] > self.max_tokens:
            raise ConfigError(f"a chunk needs {batch['input_ids'].shape[1]} tokens, over vl_max_tokens "
                              f"{self.max_tokens}: lower vl_max_pixels or frames_per_chunk")
        inputs = {"input_ids": batch["input_ids"], "attention_mask": batch["attention_mask"], **extra}
        if images:
            image_id = tokenizer.convert_tokens_to_ids("<|image_pad|>")
            inputs["mm_token_type_ids"] = (batch["input_ids"] == image_id).int()
        inputs = {k: v.to(model.device) for k, v in inputs.items()}
        if "pixel_values" in inputs:
            inputs["pixel_values"] = inputs["pixel_values"].to(model.dtype)
        with torch.inference_mode():
            hidden = model(**inputs).last_hidden_state
        mask = inputs["attention_mask"]
        last = mask.shape[1] - 1 - torch.flip(mask, dims=[1]).argmax(dim=1)  # last real token per row
        pooled = hidden[torch.arange(hidden.shape[0], device=hidden.device), last].float().cpu().numpy()
        return normalize_rows(normalize_rows(pooled)[:, : self.dim])

    # -- the Embedder interface -----------------------------------------------------------------------
    def embed_texts(self, texts: list[str]) -> np.ndarray:
        """Query vectors (text only, with the retrieval instruction)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._forward([self._prompt(QUERY_INSTRUCTION, t, 0) for t in texts], [])

    def embed_chunks(self, chunks: list[ChunkInput]) -> np.ndarray:
        """Chunk vectors from frames + transcript, one forward pass per batch; a chunk with neither
        gets a zero row."""
        out = np.zeros((len(chunks), self.dim), dtype=np.float32)
        rows = [i for i, c in enumerate(chunks) if c.frames or c.transcript.strip()]
        if not rows:
            return out
        prompts, images = [], []
        for i in rows:
            frames = self._frames(chunks[i].frames) if chunks[i].frames else []
            prompts.append(self._prompt(CHUNK_INSTRUCTION, chunks[i].transcript, len(frames)))
            images.extend(frames)
        out[rows] = self._forward(prompts, images)
        return out


def _expand(prompt: str, pad: str, counts: Iterator[int]) -> str:
    parts = prompt.split(pad)
    return parts[0] + "".join(pad * next(counts) + part for part in parts[1:])
