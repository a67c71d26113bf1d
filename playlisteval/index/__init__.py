"""The index: playlists and manifests, transcripts (captions, ASR), on-screen text, vectors, segments,
seeds (SPEC A, P).

Public names:
    add_paths, add_manifest, AddReport, Skipped      collection.py  — adding playlists (A1–A3)
    index_collection, IndexReport, pending_videos    pipeline.py    — the coordinator of `index`
    index_video, Outcome                             work.py        — one video (A4, A5), the actor's work
    declare_index_actors, INDEX_QUEUE                actors.py      — the "index" queue (dramatiq)
    transcripts_for                                  transcripts.py — captions, subtitles, ASR
    get_ocr, FrameTextReader                         ocr.py         — on-screen text (rapidocr)
    search, Hit                                      search.py      — chunk search in a corpus (A8)
    get_embedder, Embedder, ChunkInput, embed_chunks embedders.py   — minilm (offline), hash,
                                                                      qwen3-vl-embedding (qwen_vl.py)
    build_segments, mark_duplicates                  segments.py    — segments, near-duplicates (A6, A7)
    build_seeds                                      seeds.py       — seed pairs (P1, P2)
"""

from playlisteval.index.actors import INDEX_QUEUE, declare_index_actors
from playlisteval.index.collection import AddReport, Skipped, add_manifest, add_paths
from playlisteval.index.embedders import ChunkInput, Embedder, embed_chunks, get_embedder
from playlisteval.index.ocr import FrameTextReader, get_ocr
from playlisteval.index.pipeline import IndexReport, index_collection, pending_videos
from playlisteval.index.search import Hit, search
from playlisteval.index.seeds import SeedReport, build_seeds
from playlisteval.index.segments import SegmentReport, build_segments, mark_duplicates
from playlisteval.index.transcripts import transcripts_for
from playlisteval.index.work import Outcome, index_video

__all__ = [
    "AddReport", "Skipped", "add_manifest", "add_paths",
    "ChunkInput", "Embedder", "embed_chunks", "get_embedder",
    "FrameTextReader", "get_ocr",
    "INDEX_QUEUE", "declare_index_actors",
    "IndexReport", "index_collection", "pending_videos",
    "Outcome", "index_video", "transcripts_for",
    "Hit", "search",
    "SeedReport", "build_seeds",
    "SegmentReport", "build_segments", "mark_duplicates",
]
