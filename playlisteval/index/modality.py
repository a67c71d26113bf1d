"""Retriever input modalities (issue 20, deliverable 8; SPEC R4, paper Table 2, Figs 5 and 8).

A retriever ablation changes what a chunk's vector is made from — the audio transcript, the on-screen
text, both, the frames, frames with text — or how many frames it reads, or how wide the vector is. Each
such recipe gets its own embedder *name*, so its vectors sit in ``chunk_vector`` beside the default ones
and never mix with them (the name is part of every vector's key and content hash):

    ``minilm~transcript``            MiniLM over the transcript only
    ``hash~ocr``                     the hashing baseline over on-screen text only
    ``minilm:128~transcript``        the same, truncated to 128 dims (Matryoshka, the width of Fig. 8)
    ``qwen3-vl-embedding~frames~f8`` the visual embedder over 8 frames per chunk and no text

A modality equal to the embedder's own (``text`` for text embedders, ``frames+transcript`` for the visual
one) is no variant: the name stays the plain embedder's, and the default vectors are reused.

A name is self-describing, so every process (a worker, a later `search`) resolves it without the store; the
user-facing names of variants (``--variant text-only``) live in the store (index/variants.py). A frame
modality over an embedder that reads text only is a configuration error, never a silent fall back to text.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from playlisteval.errors import ConfigError
from playlisteval.index.rows import ChunkInput, Embedder

#: every modality, with what it reads
MODALITIES: dict[str, str] = {
    "transcript": "the audio transcript only",
    "ocr": "the on-screen text only",
    "text": "transcript and on-screen text (text embedders' default)",
    "frames": "the frames only (a visual embedder)",
    "frames+transcript": "frames and transcript (the visual embedder's default)",
    "frames+text": "frames, transcript and on-screen text (a visual embedder)",
}
FRAME_MODALITIES = frozenset({"frames", "frames+transcript", "frames+text"})
#: embedders that read frames (their default modality is frames+transcript)
VISUAL_EMBEDDERS = frozenset({"qwen3-vl-embedding"})
SEPARATOR = "~"

#: how a text embedder turns chunk inputs into rows (embedders.embed_chunks, handed in to avoid an import circle)
Combine = Callable[[Embedder, list[ChunkInput], float], np.ndarray]


@dataclass(frozen=True)
class Recipe:
    """What a variant's vectors are made from: ``base`` is an embedder name (``minilm``, ``minilm:128``)."""

    base: str
    modality: str
    frames: int = 0  # frames per chunk read by a visual embedder; 0 = [index] vl_max_frames

    @property
    def model(self) -> str:
        return self.base.partition(":")[0]

    @property
    def dims(self) -> int:
        suffix = self.base.partition(":")[2]
        return int(suffix) if suffix.isdigit() else 0

    @property
    def name(self) -> str:
        """The embedder name its vectors are stored under (the plain base name for the default recipe)."""
        if self.modality == default_modality(self.model) and not self.frames:
            return self.base
        return SEPARATOR.join([self.base, self.modality, *([f"f{self.frames}"] if self.frames else [])])


def default_modality(model: str) -> str:
    return "frames+transcript" if model.partition(":")[0] in VISUAL_EMBEDDERS else "text"


def make_recipe(base: str, modality: str | None = None, frames: int = 0, dims: int = 0) -> Recipe:
    """A checked recipe; ``dims`` > 0 truncates ``base`` (which must then carry no dims of its own)."""
    model, _, own_dims = base.partition(":")
    if dims:
        if own_dims and int(own_dims or 0) != dims:
            raise ConfigError(f"embedder {base!r} already has {own_dims} dims; --dims {dims} disagrees")
        base = f"{model}:{dims}"
    modality = modality or default_modality(model)
    if modality not in MODALITIES:
        raise ConfigError(f"unknown modality {modality!r}; known: {', '.join(MODALITIES)}")
    if modality in FRAME_MODALITIES and model not in VISUAL_EMBEDDERS:
        raise ConfigError(f"modality {modality!r} reads frames, and embedder {model!r} reads text only: use a "
                          f"visual embedder ({', '.join(sorted(VISUAL_EMBEDDERS))}, weights in [index] vl_model)")
    if frames and modality not in FRAME_MODALITIES:
        raise ConfigError(f"--frames-per-chunk {frames}: modality {modality!r} reads no frames")
    if frames and frames < 2:
        raise ConfigError(f"--frames-per-chunk {frames}: a visual embedder reads at least 2 frames per chunk")
    return Recipe(base, modality, frames)


def parse(name: str) -> Recipe:
    """The recipe of an embedder name (``minilm~transcript``); a plain name is its embedder's default."""
    base, *rest = name.split(SEPARATOR)
    modality = rest[0] if rest else None
    frames = 0
    if len(rest) > 2 or (len(rest) == 2 and not (rest[1].startswith("f") and rest[1][1:].isdigit())):
        raise ConfigError(f"embedder {name!r}: expected EMBEDDER~MODALITY or EMBEDDER~MODALITY~fN")
    if len(rest) == 2:
        frames = int(rest[1][1:])
    return make_recipe(base, modality, frames)


def describe(name: str) -> dict[str, object]:
    """What a retriever run's embedder name says (the report's retriever, modality, frames, dims columns)."""
    try:
        recipe = parse(name)
    except ConfigError:
        return {"retriever": name, "modality": "", "frames_per_chunk": None, "dims": None}
    return {"retriever": recipe.model, "modality": recipe.modality, "frames_per_chunk": recipe.frames or None,
            "dims": recipe.dims or None}


class ModalityEmbedder:
    """Another embedder reading only one modality of each chunk: queries are embedded as the inner one does."""

    def __init__(self, inner: Embedder, recipe: Recipe, ocr_weight: float, combine: Combine) -> None:
        visual = bool(getattr(inner, "needs_frames", False))
        if recipe.modality in FRAME_MODALITIES and not visual:
            raise ConfigError(f"modality {recipe.modality!r} needs an embedder that reads frames; "
                              f"{inner.name!r} reads text only")
        self.inner, self.modality, self.name, self.dim = inner, recipe.modality, recipe.name, inner.dim
        self.frames_per_chunk = recipe.frames
        self.needs_frames = recipe.modality in FRAME_MODALITIES
        self.recipe = f"{getattr(inner, 'recipe', '')}|{recipe.modality}"
        self._ocr_weight, self._combine, self._visual = ocr_weight, combine, visual

    def embed_texts(self, texts: list[str]) -> np.ndarray:
        return self.inner.embed_texts(texts)

    def _input(self, chunk: ChunkInput) -> ChunkInput:
        lines = [line for line in chunk.ocr_lines if line.strip()]
        frames = chunk.frames if self.needs_frames else []
        if self.modality == "transcript":
            return ChunkInput(chunk.transcript, [], frames)
        if self.modality == "ocr":
            return ChunkInput("\n".join(lines), [], []) if self._visual else ChunkInput("", lines, [])
        if self.modality == "frames":
            return ChunkInput("", [], frames)
        if self.modality == "frames+transcript":
            return ChunkInput(chunk.transcript, [], frames)
        # text / frames+text: a visual embedder reads the lines as text after the transcript
        if self._visual:
            return ChunkInput("\n".join(p for p in (chunk.transcript.strip(), *lines) if p), [], frames)
        return ChunkInput(chunk.transcript, lines, [])

    def embed_chunks(self, chunks: list[ChunkInput]) -> np.ndarray:
        inputs = [self._input(c) for c in chunks]
        own = getattr(self.inner, "embed_chunks", None)
        if own is not None:
            return np.asarray(own(inputs), dtype=np.float32)
        return self._combine(self.inner, inputs, self._ocr_weight)
