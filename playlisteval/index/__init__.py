"""The index: playlists and manifests, transcripts (captions, ASR), vectors, segments, seeds (SPEC A, P).

Public names:
    add_paths, add_manifest, AddReport, Skipped      collection.py — adding playlists (A1–A3)
    index_collection, IndexReport                    pipeline.py   — chunks, transcripts, vectors (A4–A6)
    search, Hit                                      search.py     — chunk search in a corpus (A8)
    get_embedder, Embedder                           embedders.py  — minilm (offline), hash
    build_segments, mark_duplicates                  segments.py   — segments, near-duplicates (A6, A7)
    build_seeds                                      seeds.py      — seed pairs (P1, P2)
"""

from playlisteval.index.collection import AddReport, Skipped, add_manifest, add_paths
from playlisteval.index.embedders import Embedder, get_embedder
from playlisteval.index.pipeline import IndexReport, index_collection
from playlisteval.index.search import Hit, search
from playlisteval.index.seeds import SeedReport, build_seeds
from playlisteval.index.segments import SegmentReport, build_segments, mark_duplicates

__all__ = [
    "AddReport", "Skipped", "add_manifest", "add_paths",
    "Embedder", "get_embedder",
    "IndexReport", "index_collection",
    "Hit", "search",
    "SeedReport", "build_seeds",
    "SegmentReport", "build_segments", "mark_duplicates",
]
