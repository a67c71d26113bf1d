"""What every embedder shares: the Embedder protocol, a chunk's inputs and unit-norm rows.

Its own module so that the embedders (embedders.py) and the multimodal one (qwen_vl.py) both import it
without importing each other (no import circle inside `index`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np
from PIL import Image


@runtime_checkable
class Embedder(Protocol):
    name: str
    dim: int

    def embed_texts(self, texts: list[str]) -> np.ndarray:
        """One unit-norm float32 row per text (shape len(texts) × dim)."""
        ...


@dataclass
class ChunkInput:
    """What a chunk's vector is computed from."""

    transcript: str
    ocr_lines: list[str] = field(default_factory=list)
    frames: list[Image.Image] = field(default_factory=list)  # only for embedders that read frames


def normalize_rows(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length; an all-zero row stays zero (it has no direction)."""
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    return np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)


__all__ = ["ChunkInput", "Embedder", "normalize_rows"]
