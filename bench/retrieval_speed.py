"""Retrieval speed and quality of the HNSW index against exact search (issue 6, item 6).

For each dimension asked for (default 1024 and 4096), ``--n`` unit-norm float32 vectors with
structure: a few hundred Gaussian cluster centres, each vector a centre plus isotropic noise,
normalised (uniform noise would make every neighbour equally far, which flatters no index and
resembles no embedding). Queries are data points perturbed by more noise, so they land near the data
but are not in it. In one process:

- build time of ``VectorIndex`` (hnswlib, the project's M and ef_construction defaults), and the time to
  read the same index back from disk (what every later process pays instead of a build);
- p50 / p95 latency of one query (k = 64) through ``VectorIndex.search`` and through the exact
  baselines, queries interleaved so machine load hits all alike: ``exact_search`` (matrix-vector
  product on one BLAS thread + argpartition), the same product on all of OpenBLAS's threads, the
  previous full sort, and the batched ``exact_search_many`` (per-query cost of one batch of all
  queries); the speed-up is taken against the *best* exact baseline;
- recall@64 of HNSW: the share of exact search's top 64 that HNSW returns;
- a batch of all queries through ``VectorIndex.search_many`` against ``exact_search_many`` (what an
  evaluation that embeds all its questions at once pays per question), the two interleaved;
- time to the first answer in a *fresh process* (a subprocess that reads the vectors, makes the
  ``VectorIndex`` and answers one query) when the saved index is there, against the build and first
  answer in this process (what every process paid before indexes were saved); with ``--store``, the
  same through a project's store (bench/retrieval_store.py).

Several ``--n`` give the exact/HNSW crossover that sets ``[index] exact_search_max``.

    .venv/bin/python -m bench retrieval [--n 20000 50000 100000] [--dims 1024 384] [--queries 200]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run as a file: bench/retrieval_speed.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import tempfile

from bench.retrieval_store import store_first_answer
from playlisteval.index.vectors import VectorIndex, _top_k_row, exact_search, exact_search_many

K = 64
GEN_BLOCK = 10_000  # rows generated at a time: bounds the float64 scratch memory


def _unit(rows: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return (rows / np.maximum(norms, 1e-12)).astype(np.float32)


def clustered(n: int, dim: int, clusters: int, noise: float, rng: np.random.Generator) -> np.ndarray:
    """``n`` unit rows: centre + noise, where the noise's expected norm is ``noise`` (a centre's is 1)."""
    centres = _unit(rng.standard_normal((clusters, dim), dtype=np.float32))
    out = np.empty((n, dim), dtype=np.float32)
    scale = noise / np.sqrt(dim)
    for start in range(0, n, GEN_BLOCK):
        stop = min(n, start + GEN_BLOCK)
        which = rng.integers(0, clusters, stop - start)
        block = centres[which] + scale * rng.standard_normal((stop - start, dim), dtype=np.float32)
        out[start:stop] = _unit(block)
    return out


def queries_near(matrix: np.ndarray, count: int, noise: float, rng: np.random.Generator) -> np.ndarray:
    picked = matrix[rng.choice(matrix.shape[0], count, replace=False)]
    scale = noise / np.sqrt(matrix.shape[1])
    return _unit(picked + scale * rng.standard_normal(picked.shape, dtype=np.float32))


Search = Callable[[np.ndarray], np.ndarray]


def full_sort(matrix: np.ndarray, q: np.ndarray, k: int) -> np.ndarray:
    """The exact search this project used before: score every row, sort all of them."""
    scores = matrix @ q
    return np.lexsort((np.arange(matrix.shape[0]), -scores))[:k]


def _interleaved(searches: dict[str, Search], queries: np.ndarray) -> dict[str, tuple[list[float], list[np.ndarray]]]:
    """Each query through every search in turn, so a burst of load on the machine hits all of them."""
    out: dict[str, tuple[list[float], list[np.ndarray]]] = {name: ([], []) for name in searches}
    for q in queries:
        for name, search in searches.items():
            t0 = time.perf_counter()
            ids = search(q)
            out[name][0].append(time.perf_counter() - t0)
            out[name][1].append(ids)
    return out


def one_dim(n: int, dim: int, n_queries: int, clusters: int, noise: float, query_noise: float,
            seed: int, store: bool = False) -> dict[str, float | int]:
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    matrix = clustered(n, dim, clusters, noise, rng)
    queries = queries_near(matrix, n_queries, query_noise, rng)
    gen_s = time.perf_counter() - t0
    print(f"dim {dim}: {n} vectors generated in {gen_s:.1f} s ({matrix.nbytes / 2**30:.2f} GiB)", flush=True)

    with tempfile.TemporaryDirectory() as saved:
        t0 = time.perf_counter()
        index = VectorIndex(matrix, exact_max=0, seed=seed, cache_dir=Path(saved))  # always HNSW
        build_s = time.perf_counter() - t0
        index.search(queries[0], K)
        rebuild_first_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        reloaded = VectorIndex(matrix, exact_max=0, seed=seed, cache_dir=Path(saved))
        load_s = time.perf_counter() - t0
        if reloaded.loaded_from is None:
            raise RuntimeError("the saved HNSW index was not read back")
        fresh = first_answer_in_fresh_process(matrix, queries[0], seed, Path(saved))
        in_store = store_first_answer(matrix, queries[0], Path(saved), K) if store else {}
    print(f"dim {dim}: HNSW built in {build_s:.1f} s (first answer {rebuild_first_s:.1f} s), read back in "
          f"{load_s:.2f} s; a fresh process with the saved index answers {fresh['first_answer_s']:.2f} s after "
          f"it has the vectors; load {os.getloadavg()[0]:.2f}", flush=True)
    if in_store:
        print(f"dim {dim}: a new process over a project's store of them answers in "
              f"{in_store['store_first_answer_s']} s "
              f"(opening the store {in_store['store_open_s']} s, reading the vectors and the saved index "
              f"{in_store['store_index_s']} s); load {os.getloadavg()[0]:.2f}", flush=True)

    searches: dict[str, Search] = {
        "hnsw": lambda q: index.search(q, K)[0],
        "exact": lambda q: exact_search(index.matrix, q, K)[0],
        "full_sort": lambda q: full_sort(index.matrix, q, K),
        "exact_blas_threads": lambda q: _top_k_row(index.matrix @ q, K),
    }
    for q in queries[:3]:  # warm-up, so no side pays first-touch costs inside the figures
        for search in searches.values():
            search(q)
    timed = _interleaved(searches, queries)
    hnsw_t, hnsw_ids = timed["hnsw"]
    exact_t, exact_ids = timed["exact"]
    batched = _batches(index, queries)
    batched_ms = batched["exact"]
    recall = float(np.mean([len(set(h.tolist()) & set(e.tolist())) / len(e)
                            for h, e in zip(hnsw_ids, exact_ids, strict=True)]))
    # the cluster structure is visible in the scores: mean cosine of the 64th exact neighbour
    kth = float(np.mean([float(index.matrix[e[-1]] @ q) for e, q in zip(exact_ids, queries, strict=True)]))
    result: dict[str, float | int] = {
        "n": n, "dim": dim, "queries": n_queries, "k": K, "clusters": clusters,
        "generate_s": round(gen_s, 2), "build_s": round(build_s, 2),
        "hnsw_p50_ms": round(1000 * float(np.percentile(hnsw_t, 50)), 3),
        "hnsw_p95_ms": round(1000 * float(np.percentile(hnsw_t, 95)), 3),
        "exact_p50_ms": round(1000 * float(np.percentile(exact_t, 50)), 3),
        "exact_p95_ms": round(1000 * float(np.percentile(exact_t, 95)), 3),
        "full_sort_p50_ms": round(1000 * float(np.percentile(timed["full_sort"][0], 50)), 3),
        "exact_blas_threads_p50_ms": round(1000 * float(np.percentile(timed["exact_blas_threads"][0], 50)), 3),
        "exact_batched_ms_per_query": round(batched_ms, 3),
        "hnsw_batched_ms_per_query": round(batched["hnsw"], 3),
        "hnsw_load_s": round(load_s, 3),
        "first_answer_rebuild_s": round(rebuild_first_s, 2),
        "first_answer_saved_s": fresh["first_answer_s"],
        "fresh_process_read_vectors_s": fresh["read_vectors_s"],
        "fresh_process_wall_s": fresh["wall_s"],
        **in_store,
        "recall_at_64": round(recall, 4),
        "mean_cosine_of_64th": round(kth, 4),
    }
    single = min(result["exact_p50_ms"], result["full_sort_p50_ms"], result["exact_blas_threads_p50_ms"])
    best = min(single, result["exact_batched_ms_per_query"])
    result["speedup_vs_best_exact"] = round(best / result["hnsw_p50_ms"], 1)
    result["speedup_p50"] = round(result["exact_p50_ms"] / result["hnsw_p50_ms"], 1)
    # one query at a time (`search`): HNSW against the best one-query exact search
    result["speedup_single"] = round(single / result["hnsw_p50_ms"], 1)
    # a batch (an evaluation's questions): HNSW's batch against the exact batch
    result["speedup_batched"] = round(result["exact_batched_ms_per_query"] / result["hnsw_batched_ms_per_query"], 1)
    result["build_over_load"] = round(build_s / max(load_s, 1e-9), 1)
    result["rebuild_over_saved_first_answer"] = round(rebuild_first_s / max(fresh["first_answer_s"], 1e-9), 1)
    result["load_avg_1m"] = round(os.getloadavg()[0], 2)
    print(f"n {n} dim {dim}: HNSW p50 {result['hnsw_p50_ms']} ms; exact p50 {result['exact_p50_ms']} ms, full sort "
          f"{result['full_sort_p50_ms']} ms, with all BLAS threads {result['exact_blas_threads_p50_ms']} ms "
          f"({result['speedup_single']}x); batched exact "
          f"{result['exact_batched_ms_per_query']} ms/query, batched HNSW {result['hnsw_batched_ms_per_query']} "
          f"ms/query ({result['speedup_batched']}x); {result['speedup_vs_best_exact']}x the best exact; "
          f"recall@{K} {result['recall_at_64']}; load {result['load_avg_1m']:.2f}", flush=True)
    return result


def _batches(index: VectorIndex, queries: np.ndarray, rounds: int = 3) -> dict[str, float]:
    """ms per query of one batch of all ``queries``, exact and HNSW interleaved; the median of ``rounds``."""
    runs: dict[str, list[float]] = {"exact": [], "hnsw": []}
    index.search_many(queries[:2], K)  # warm-up
    for _ in range(rounds):
        for name, batch in (("exact", lambda: exact_search_many(index.matrix, queries, K)),
                            ("hnsw", lambda: index.search_many(queries, K))):
            t0 = time.perf_counter()
            batch()
            runs[name].append(1000 * (time.perf_counter() - t0) / len(queries))
    return {name: float(np.median(ms)) for name, ms in runs.items()}


_FRESH = """
import json, sys, time
from pathlib import Path
t0 = time.perf_counter()
import numpy as np
from playlisteval.index.vectors import VectorIndex
matrix = np.load(sys.argv[1])
query = np.load(sys.argv[2])
t1 = time.perf_counter()
index = VectorIndex(matrix, exact_max=0, seed=int(sys.argv[3]), cache_dir=Path(sys.argv[4]))
index.search(query, int(sys.argv[5]))
t2 = time.perf_counter()
print(json.dumps({"loaded": index.loaded_from is not None, "read_vectors_s": round(t1 - t0, 2),
                  "first_answer_s": round(t2 - t1, 3)}))
"""


def first_answer_in_fresh_process(matrix: np.ndarray, query: np.ndarray, seed: int, saved: Path) -> dict[str, float]:
    """A new process reads the vectors, makes the ``VectorIndex`` over them (the saved index must be read
    back, else this fails) and answers one query: the seconds from having the vectors to the answer."""
    np.save(saved / "matrix.npy", matrix)
    np.save(saved / "query.npy", query)
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", _FRESH, str(saved / "matrix.npy"), str(saved / "query.npy"),
                           str(seed), str(saved), str(K)], capture_output=True, text=True, check=True,
                          cwd=Path(__file__).resolve().parents[1])
    wall = time.perf_counter() - t0
    out = json.loads(done.stdout.strip().splitlines()[-1])
    if not out.pop("loaded"):
        raise RuntimeError("the fresh process rebuilt the HNSW index instead of reading it back")
    return {**out, "wall_s": round(wall, 2)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench retrieval", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, nargs="+", default=[100_000],
                        help="vectors per dimension, one run per value (a quick run: 10000)")
    parser.add_argument("--n-4096", type=int, default=None,
                        help="vectors for 4096 dims only, when its HNSW build is too slow at --n")
    parser.add_argument("--dims", type=int, nargs="+", default=[1024, 4096])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--clusters", type=int, default=300)
    parser.add_argument("--noise", type=float, default=1.0, help="noise norm around a unit centre")
    parser.add_argument("--query-noise", type=float, default=0.5, help="noise norm added to a data point")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--store", action="store_true",
                        help="also: a new process searching a project's store of the vectors, index saved")
    parser.add_argument("--out", type=Path, default=Path("build/bench/retrieval.json"))
    args = parser.parse_args(argv)
    runs = []
    for n_asked in args.n:
        for dim in args.dims:
            n = args.n_4096 if dim == 4096 and args.n_4096 else n_asked
            runs.append(one_dim(n, dim, args.queries, args.clusters, args.noise, args.query_noise, args.seed,
                                args.store))
    results = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                           "load_avg_1m": round(os.getloadavg()[0], 2)}, "runs": runs}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1))
    print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
