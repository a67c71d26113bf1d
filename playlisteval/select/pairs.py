"""SPEC F1's pairs live in ``playlisteval.benchmark.pairs`` (below `eval`, which reads them); the names
stay importable from here."""

from playlisteval.benchmark.pairs import (
    FINISHED,
    RATINGS,
    PairText,
    find_benchmark,
    finished_items,
    make_pairs,
    pair_texts,
    rating_pairs,
    side_of,
)

__all__ = ["FINISHED", "RATINGS", "PairText", "find_benchmark", "finished_items", "make_pairs", "pair_texts",
           "rating_pairs", "side_of"]
