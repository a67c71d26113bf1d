"""The index: playlists and manifests, transcripts (captions, ASR), on-screen text, vectors, segments,
seeds (SPEC A, P).

Public names:
    add_paths, add_manifest, AddReport, Skipped      collection.py  — adding playlists (A1–A3)
    index_collection, IndexReport, pending_videos    pipeline.py    — the coordinator of `index`
    index_video, Outcome                             work.py        — one video (A4, A5), the actor's work
                                                                      (the actor: actors/tasks.py)
    transcripts_for                                  transcripts.py — captions, subtitles, ASR (asr*.py)
    get_ocr, FrameTextReader                         ocr.py         — on-screen text (rapidocr)
    search, Hit                                      search.py      — chunk search in a corpus (A8)
    get_embedder, Embedder, ChunkInput, embed_chunks embedders.py   — minilm (offline, minilm.py), hash,
                                                                      qwen3-vl-embedding (qwen_vl.py)
    build_segments, mark_duplicates                  segments.py    — segments, near-duplicates (A6, A7)
    build_seeds                                      seeds.py       — seed pairs (P1, P2)
"""

from importlib import import_module
from typing import Any

# name → module; imported on first use, so that `search` does not pay for OCR, video decoding or the
# broker (issue 11: a cold `search` answers in seconds)
_WHERE = {
    "AddReport": "collection", "Skipped": "collection", "add_manifest": "collection", "add_paths": "collection",
    "ChunkInput": "embedders", "Embedder": "embedders", "embed_chunks": "embedders", "get_embedder": "embedders",
    "FrameTextReader": "ocr", "get_ocr": "ocr",
    "IndexReport": "pipeline", "index_collection": "pipeline", "pending_videos": "pipeline",
    "Hit": "search",  # search() itself: playlisteval.index.search.search (the name is its module's)
    "SeedReport": "seeds", "build_seeds": "seeds",
    "SegmentReport": "segments", "build_segments": "segments", "mark_duplicates": "segments",
    "transcripts_for": "transcripts",
    "Outcome": "work", "index_video": "work",
}
__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(import_module(f"playlisteval.index.{_WHERE[name]}"), name)
    raise AttributeError(f"module 'playlisteval.index' has no attribute {name!r}")
