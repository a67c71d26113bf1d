"""Vectors in the store and their search (SPEC A5, A8).

Stored vectors are little-endian float32 blobs with the hash of the exact text they were computed
from, so re-indexing recomputes only what changed. The HNSW index is a rebuildable artifact built
from stored vectors; small corpora are searched exactly (brute force is faster there and exact).
"""

from __future__ import annotations

import hashlib
import os
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from playlisteval.index.blas import one_blas_thread
from playlisteval.logs import get_logger

log = get_logger(__name__)

_DTYPE = np.dtype("<f4")

#: HNSW indexes this process built and read back from disk ("built" / "loaded"): what shows that a
#: later process answers from the saved index instead of rebuilding it (also logged as hnsw.built /
#: hnsw.loaded with the seconds each took)
HNSW_EVENTS: Counter[str] = Counter()


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


def _top_k_row(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` highest scores, best first, ties broken by index: O(n) partition, then a
    sort of only the candidates (every score tied with the k-th is a candidate, so ties stay exact)."""
    n = scores.shape[0]
    if k < n:
        kth = np.argpartition(-scores, k - 1)[:k]
        candidates = np.flatnonzero(scores >= scores[kth].min())
    else:
        candidates = np.arange(n)
    order = np.lexsort((candidates, -scores[candidates]))[:k]
    return candidates[order].astype(np.int64)


#: a matrix up to this many values (64 MiB of float32) is multiplied by one query on one BLAS thread
ONE_THREAD_MAX = 1 << 24


@contextmanager
def _one_blas_thread(values: int) -> Iterator[None]:
    """OpenBLAS limited to one thread for one matrix-vector product of a small matrix. On a busy machine
    waking its second thread cost more than the product: 3,000 x 384 took 0.1 ms on one thread, 7.7 ms
    on two (load 1.7); `python -m bench retrieval` (load 4-17): one thread won up to 10,000 x 1024
    (12 ms against 23 ms), the threads from about 20,000 x 1024 (50,000 x 1024: 60 ms against 91 ms),
    hence ``ONE_THREAD_MAX``. A controller made once: threadpoolctl's ``threadpool_limits`` costs 0.2 ms
    per call, the controller's ``limit`` 3 us (index/blas.py keeps one)."""
    if values > ONE_THREAD_MAX:
        yield
        return
    with one_blas_thread():
        yield


def exact_search(matrix: np.ndarray, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(row indices, scores) of the ``k`` rows with the highest inner product, best first.

    Ties break by row index, so results are deterministic.
    """
    k = min(k, matrix.shape[0])
    if k <= 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
    with _one_blas_thread(matrix.size):
        scores = matrix @ np.asarray(query, dtype=np.float32)
    rows = _top_k_row(scores, k)
    return rows, scores[rows].astype(np.float32)


def exact_search_many(matrix: np.ndarray, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``exact_search`` for a batch of queries (one row each) with one matrix product:
    ((q, k) row indices, (q, k) scores)."""
    queries = np.atleast_2d(np.asarray(queries, dtype=np.float32))
    k = min(k, matrix.shape[0])
    if k <= 0 or queries.shape[0] == 0:
        return (np.zeros((queries.shape[0], 0), dtype=np.int64), np.zeros((queries.shape[0], 0), dtype=np.float32))
    scores = queries @ matrix.T
    rows = np.stack([_top_k_row(row, k) for row in scores])
    return rows, np.take_along_axis(scores, rows, axis=1).astype(np.float32)


def matrix_key(matrix: np.ndarray, *params: object) -> str:
    """What an index built over ``matrix`` depends on: its bytes, shape and the build parameters."""
    digest = hashlib.sha256(np.ascontiguousarray(matrix, dtype=_DTYPE).data)
    digest.update(repr((matrix.shape, params)).encode())
    return digest.hexdigest()[:32]


def search_ef(k: int, rows: int = 0) -> int:
    """HNSW's search breadth for top-``k`` over ``rows`` vectors: ef must exceed k, recall@64 needs far
    more than 2k, and the breadth a given recall needs grows with the index.

    Measured with bench/hnsw_peers.py's vectors (x 1024, 333 tight clusters, M 16, ef_construction 200,
    one query thread, load < 1): at 20k rows ef 256 gave recall@64 0.9994 (ef 128, the former
    max(2k, 64): 0.965); at 50k ef 256 0.9935. At 100k, over three graphs (hnswlib's random_seed 0, 1,
    100): ef 256 0.94-0.96, ef 500 0.985-0.9996, ef 800 0.9945-0.9996, ef 1000 0.9996 (2.1 ms p50); what
    is missed is a whole query's neighbours, one query in 200 stuck in the wrong cluster. So ef is also
    one per 100 rows: 1000 at 100k. Issue 26 asks recall@64 >= 0.99; exact search of one query costs
    ~5.8 ms at 100k x 1024 even in a batch.
    """
    return max(4 * k, 256, -(-rows // 100))


class VectorIndex:
    """Top-k inner-product search over unit-norm rows: exact up to ``exact_max`` rows, HNSW above.

    hnswlib's "ip" space is used rather than "cosine": rows are already unit-norm, and a zero row
    (a chunk with no text) then scores 0 instead of dividing by zero.
    """

    def __init__(self, matrix: np.ndarray, exact_max: int = 20000, m: int = 16,
                 ef_construction: int = 200, seed: int = 0, cache_dir: Path | None = None) -> None:
        self.matrix = np.ascontiguousarray(matrix, dtype=np.float32)
        self.size, self.dim = self.matrix.shape if self.matrix.ndim == 2 else (0, 0)
        self._hnsw = None
        self.loaded_from: Path | None = None  # the saved index this one was read from, if any
        if self.size > exact_max:
            self._hnsw = self._load_or_build(m, ef_construction, seed, cache_dir)

    def _load_or_build(self, m: int, ef_construction: int, seed: int, cache_dir: Path | None) -> Any:
        """An HNSW index is costly to build (a minute at 100k x 1024) and a pure function of the vectors
        and parameters: it is saved under ``cache_dir`` keyed by both, and read back when they match."""
        import hnswlib  # built from source; imported only when a corpus is large enough to need it

        t0 = time.perf_counter()
        index = hnswlib.Index(space="ip", dim=self.dim)
        path = cache_dir / f"hnsw-{matrix_key(self.matrix, m, ef_construction, seed)}.bin" if cache_dir else None
        if path is not None and path.exists():
            try:
                index.load_index(str(path), max_elements=self.size)
                if index.get_current_count() == self.size:
                    self.loaded_from = path
                    HNSW_EVENTS["loaded"] += 1
                    log.info("hnsw.loaded", rows=self.size, dim=self.dim, path=str(path),
                             seconds=round(time.perf_counter() - t0, 3))
                    return index
            except RuntimeError as exc:  # a truncated or foreign file: rebuild it
                log.warning("hnsw.unreadable", path=str(path), error=str(exc))
            index = hnswlib.Index(space="ip", dim=self.dim)
        index.init_index(max_elements=self.size, M=m, ef_construction=ef_construction, random_seed=seed)
        index.add_items(self.matrix, np.arange(self.size))
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_name(f"{path.name}.{os.getpid()}.tmp")  # written whole, then renamed
            index.save_index(str(partial))
            os.replace(partial, path)
        HNSW_EVENTS["built"] += 1
        log.info("hnsw.built", rows=self.size, dim=self.dim, path=str(path) if path else None,
                 seconds=round(time.perf_counter() - t0, 3))
        return index

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
        self._hnsw.set_ef(search_ef(k, self.size))
        labels, distances = self._hnsw.knn_query(np.asarray(query, dtype=np.float32)[None, :], k=k)
        return labels[0].astype(np.int64), (1.0 - distances[0]).astype(np.float32)

    def search_many(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(q, k) row indices and scores for a batch of queries, best first."""
        queries = np.atleast_2d(np.asarray(queries, dtype=np.float32))
        k = min(k, self.size)
        if self._hnsw is None or k <= 0:
            return exact_search_many(self.matrix, queries, k)
        self._hnsw.set_ef(search_ef(k, self.size))
        labels, distances = self._hnsw.knn_query(queries, k=k)
        return labels.astype(np.int64), (1.0 - distances).astype(np.float32)
