"""Benchmarks (not tests: they measure wall time).

    python -m bench [options]             indexing throughput (bench/index_speed.py), the default
    python -m bench index [options]       the same
    python -m bench retrieval [options]   HNSW vs exact search: p50 latency, recall@64 (bench/retrieval_speed.py)
    python -m bench report [options]      the analytics report over 1M judgments vs pandas (bench/report_speed.py)

``python -m bench NAME --help`` lists each one's options.
"""
import sys
from importlib import import_module

MODULES = {"index": "bench.index_speed", "retrieval": "bench.retrieval_speed", "report": "bench.report_speed"}

args = sys.argv[1:]
name = args.pop(0) if args and args[0] in MODULES else "index"  # no name (or only options): the index benchmark
raise SystemExit(import_module(MODULES[name]).main(args))
