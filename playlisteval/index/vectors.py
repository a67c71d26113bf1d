"""Vectors in the store and their search (SPEC A5, A8).

Stored vectors are little-endian float32 blobs with the hash of the exact text they were computed
from, so re-indexing recomputes only what changed. The HNSW index is a rebuildable artifact built
from stored vectors; small corpora are searched exactly (brute force is faster there and exact).
"""

from __future__ import annotations

import hashlib

import numpy as np

_DTYPE = np.dtype("<f4")


def encode(vector: np.ndarray) -> bytes:
    return np.ascontiguousarray(vector, dtype=_DTYPE).tobytes()


def decode(blob: bytes, dim: int | None = None) -> np.ndarray:
    vector = np.frombuffer(blob, dtype=_DTYPE).astype(np.float32)
    if dim is not None and vector.shape[0] != dim:
        raise ValueError(f"stored vector has {vector.shape[0]} dims, expected {dim}")
    return vector


def decode_many(blobs: list[bytes], dim: int) -> np.ndarray:
    if not blobs:
        return np.zeros((0, dim), dtype=np.float32)
    return np.stack([decode(b, dim) for b in blobs])


def content_hash(text: str, embedder: str) -> str:
    """What a vector depends on: the embedded text and the embedder that read it."""
    return hashlib.sha256(f"{embedder}\x00{text}".encode()).hexdigest()


def exact_search(matrix: np.ndarray, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(row indices, scores) of the ``k`` rows with the highest inner product, best first.

    Ties break by row index, so results are deterministic.
    """
    n = matrix.shape[0]
    k = min(k, n)
    if k <= 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
    scores = matrix @ np.asarray(query, dtype=np.float32)
    order = np.lexsort((np.arange(n), -scores))[:k]
    return order.astype(np.int64), scores[order].astype(np.float32)


class VectorIndex:
    """Top-k inner-product search over unit-norm rows: exact up to ``exact_max`` rows, HNSW above.

    hnswlib's "ip" space is used rather than "cosine": rows are already unit-norm, and a zero row
    (a chunk with no text) then scores 0 instead of dividing by zero.
    """

    def __init__(self, matrix: np.ndarray, exact_max: int = 5000, m: int = 16,
                 ef_construction: int = 200, seed: int = 0) -> None:
        self.matrix = np.ascontiguousarray(matrix, dtype=np.float32)
        self.size, self.dim = self.matrix.shape if self.matrix.ndim == 2 else (0, 0)
        self._hnsw = None
        if self.size > exact_max:
            import hnswlib  # built from source; imported only when a corpus is large enough to need it

            index = hnswlib.Index(space="ip", dim=self.dim)
            index.init_index(max_elements=self.size, M=m, ef_construction=ef_construction, random_seed=seed)
            index.add_items(self.matrix, np.arange(self.size))
            self._hnsw = index

    @property
    def exact(self) -> bool:
        return self._hnsw is None

    def search(self, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(row indices, scores), best first."""
        k = min(k, self.size)
        if k <= 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        if self._hnsw is None:
            return exact_search(self.matrix, query, k)
        self._hnsw.set_ef(max(2 * k, 64))  # recall: ef must exceed k; 64 is hnswlib's usual floor
        labels, distances = self._hnsw.knn_query(np.asarray(query, dtype=np.float32)[None, :], k=k)
        return labels[0].astype(np.int64), (1.0 - distances[0]).astype(np.float32)
