"""Selection (SPEC F): preference pairs, the difficulty gate, the sampled benchmark and its export.

Public names:
    rating_pairs, make_pairs, side_of, pair_texts, PairText   pairs.py      — F1, the shared A/B side (G5)
    run_gate, GateReport                                      difficulty.py — F2
    select_benchmark, Selection                               sampling.py   — F3 and the items' moves
    benchmark_stats, BenchmarkStats                           stats.py      — F4
    export, ExportReport                                      export.py     — Parquet, JSONL, dataset card
    (versions.py: a benchmark's versions; sealed.py and content.py: what each version is made of, frozen
    when it is recorded — issue 41)
"""

from playlisteval.select.difficulty import GateReport, run_gate
from playlisteval.select.export import ExportReport, export
from playlisteval.select.pairs import PairText, make_pairs, pair_texts, rating_pairs, side_of
from playlisteval.select.sampling import Selection, select_benchmark
from playlisteval.select.stats import BenchmarkStats, benchmark_stats

__all__ = [
    "GateReport", "run_gate", "ExportReport", "export", "PairText", "make_pairs", "pair_texts", "rating_pairs",
    "side_of", "Selection", "select_benchmark", "BenchmarkStats", "benchmark_stats",
]
