"""The project's HNSW library (hnswlib) against its peers on the same vectors (issue 26, deliverable 5).

One process, one set of vectors (``--n`` x ``--dim`` unit-norm float32 rows around a few hundred
Gaussian centres, as bench/retrieval_speed.py makes them; queries are data points with more noise), the
same graph parameters for every library (M 16, ef_construction 200: the project's [index] defaults),
inner product, every core for the build:

- hnswlib (what playlisteval.index.vectors uses), faiss ``IndexHNSWFlat`` (inner product), usearch
  ``Index`` (metric ip, connectivity 16, expansion_add 200, f32);
- build seconds; one-query p50 / p95 (k 64, ef / expansion_search as VectorIndex sets it: max(256, n / 100)), the
  libraries interleaved query by query so load hits all alike; recall@64 against exact search.

A library that is not installed is named and skipped. It imports nothing of playlisteval, so it runs in
any environment that has numpy and the libraries (they are not the project's dependencies):

    python bench/hnsw_peers.py [--n 100000] [--dim 1024] [--queries 200] [--ef-search EF] [--only hnswlib faiss]
                               [--json OUT]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

M, EF_CONSTRUCTION, K = 16, 200, 64
EF_SEARCH = max(4 * K, 256)  # run() sets it for the rows searched (search_ef)


def search_ef(n: int) -> int:
    """playlisteval.index.vectors.search_ef for top-64 over ``n`` rows (kept in step by hand: this script
    imports nothing of playlisteval)."""
    return max(4 * K, 256, -(-n // 100))


def vectors(n: int, dim: int, queries: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((max(8, n // 300), dim)).astype(np.float32)
    data = centres[rng.integers(0, len(centres), n)] + 0.35 * rng.standard_normal((n, dim)).astype(np.float32)
    data /= np.linalg.norm(data, axis=1, keepdims=True)
    q = data[rng.integers(0, n, queries)] + 0.05 * rng.standard_normal((queries, dim)).astype(np.float32)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    return data, q.astype(np.float32)


def _hnswlib(data: np.ndarray) -> Any:
    import hnswlib

    index = hnswlib.Index(space="ip", dim=data.shape[1])
    index.init_index(max_elements=len(data), M=M, ef_construction=EF_CONSTRUCTION, random_seed=0)
    index.add_items(data, np.arange(len(data)))
    index.set_ef(EF_SEARCH)
    return lambda q: index.knn_query(q[None, :], k=K)[0][0]


def _faiss(data: np.ndarray) -> Any:
    import faiss

    index = faiss.IndexHNSWFlat(data.shape[1], M, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = EF_CONSTRUCTION
    index.add(data)
    index.hnsw.efSearch = EF_SEARCH
    return lambda q: index.search(q[None, :], K)[1][0]


def _usearch(data: np.ndarray) -> Any:
    from usearch.index import Index

    index = Index(ndim=data.shape[1], metric="ip", dtype="f32", connectivity=M, expansion_add=EF_CONSTRUCTION,
                  expansion_search=EF_SEARCH)
    index.add(np.arange(len(data)), data)
    return lambda q: index.search(q, K).keys


LIBRARIES = {"hnswlib": ("hnswlib", _hnswlib), "faiss": ("faiss", _faiss), "usearch": ("usearch", _usearch)}


def run(n: int, dim: int, queries: int, seed: int, ef_search: int | None = None,
        only: list[str] | None = None) -> dict[str, Any]:
    global EF_SEARCH
    EF_SEARCH = ef_search or search_ef(n)  # read by the builders above when they set their search breadth
    data, q = vectors(n, dim, queries, seed)
    truth = np.argsort(-(q @ data.T), axis=1)[:, :K]
    out: dict[str, Any] = {"n": n, "dim": dim, "queries": queries, "k": K, "m": M, "ef_construction": EF_CONSTRUCTION,
                           "ef_search": EF_SEARCH, "cpus": os.cpu_count(), "libraries": {}}
    search: dict[str, Any] = {}
    for name, (module, make) in LIBRARIES.items():
        if only and name not in only:
            continue
        if importlib.util.find_spec(module) is None:
            out["libraries"][name] = {"skipped": f"{module} is not installed"}
            print(f"{name:<8} skipped: {module} is not installed", flush=True)
            continue
        load0, t0, c0 = os.getloadavg()[0], time.perf_counter(), time.process_time()
        search[name] = make(data)
        out["libraries"][name] = {"build_s": round(time.perf_counter() - t0, 2),
                                  "build_cpu_s": round(time.process_time() - c0, 2), "load": round(load0, 2)}
        got = out["libraries"][name]
        print(f"{name:<8} built in {got['build_s']:.2f} s (cpu {got['build_cpu_s']:.2f}, load {load0:.2f})", flush=True)
    times: dict[str, list[float]] = {name: [] for name in search}
    found: dict[str, list[np.ndarray]] = {name: [] for name in search}
    for row in q:  # interleaved: each query through every library in turn
        for name, fn in search.items():
            t0 = time.perf_counter()
            found[name].append(np.asarray(fn(row)))
            times[name].append(time.perf_counter() - t0)
    for name in search:
        recall = float(np.mean([len(set(f.tolist()) & set(t.tolist())) / K for f, t in zip(found[name], truth,
                                                                                          strict=True)]))
        out["libraries"][name].update({"query_p50_ms": round(1000 * float(np.median(times[name])), 3),
                                       "query_p95_ms": round(1000 * float(np.percentile(times[name], 95)), 3),
                                       "recall_at_64": round(recall, 4)})
    built = {k: v for k, v in out["libraries"].items() if "build_s" in v}
    if "hnswlib" in built and len(built) > 1:
        best_build = min(v["build_s"] for v in built.values())
        best_query = min(v["query_p50_ms"] for v in built.values())
        mine = built["hnswlib"]
        out["goals"] = {"build within 1.5x of the best peer": [round(mine["build_s"] / best_build, 2),
                                                                mine["build_s"] <= 1.5 * best_build],
                        "query p50 within 1.5x of the best peer": [round(mine["query_p50_ms"] / best_query, 2),
                                                                    mine["query_p50_ms"] <= 1.5 * best_query],
                        "recall@64 >= 0.99": [mine["recall_at_64"], mine["recall_at_64"] >= 0.99]}
    print(f"{'library':<8} {'build s':>8} {'cpu s':>8} {'p50 ms':>8} {'p95 ms':>8} {'recall@64':>10}")
    for name, r in built.items():
        print(f"{name:<8} {r['build_s']:8.2f} {r['build_cpu_s']:8.2f} {r['query_p50_ms']:8.3f} "
              f"{r['query_p95_ms']:8.3f} {r['recall_at_64']:10.4f}")
    for goal, (seen, met) in out.get("goals", {}).items():
        print(f"  hnswlib: {goal:<42} {seen:>8}  {'met' if met else 'NOT met'}")
    print(f"load {os.getloadavg()[0]:.2f} now", flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=1024)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--ef-search", type=int, default=None,
                        help="search breadth for every library (default: VectorIndex's, max(4k, 256, n / 100): "
                             "1000 at 100k)")
    parser.add_argument("--only", nargs="*", choices=list(LIBRARIES), help="these libraries only")
    args = parser.parse_args(argv)
    result = run(args.n, args.dim, args.queries, args.seed, args.ef_search, args.only)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
