"""A corpus above ``[index] exact_search_max`` is searched through HNSW, and the HNSW index is built
once: a later process over the same vectors (a `search`, an evaluation's retrieval) reads the saved
index back and answers without rebuilding it (issue 13: "starts answering without rebuilding its
index"). Small scale, with the threshold lowered so HNSW is used; the 100k figure is the benchmark's
(`python -m bench retrieval`, README "Retrieval")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from playlisteval.index.embedders import get_embedder
from playlisteval.index.search import index_cache_dir, project_index
from playlisteval.index.vectors import encode
from playlisteval.store import open_store, transaction
from playlisteval.store.tables import Chunk, ChunkVector, Domain, Playlist, Video
from tests.helpers import env_for, project

THRESHOLD = 50  # below the corpus, so the corpus gets an HNSW index
ROOT = Path(__file__).resolve().parents[1]

SEARCH = """
import json, sys
from pathlib import Path
from playlisteval.config import load_settings
from playlisteval.index import vectors
from playlisteval.index.search import search
from playlisteval.store import open_store
settings = load_settings(Path(sys.argv[1]))
hits = search(settings, open_store(settings), "stone roads of the empire", domain="History", k=5, embedder="hash")
print(json.dumps({"events": dict(vectors.HNSW_EVENTS), "hits": [h.chunk_id for h in hits]}))
"""


def _store(root: Path, videos: int = 3, chunks: int = 40) -> None:
    """One domain of ``videos`` × ``chunks`` chunks with "hash" vectors of made-up transcripts."""
    settings = project(root)
    embedder = get_embedder("hash")
    rng = np.random.default_rng(13)
    words = ["roman", "stone", "roads", "empire", "legion", "river", "bridge", "market", "temple", "forum"]
    with transaction(open_store(settings)) as s:
        domain = Domain(name="History")
        s.add(domain)
        s.flush()
        playlist = Playlist(domain_id=domain.id or 0, name="P1")
        s.add(playlist)
        s.flush()
        for v in range(videos):
            video = Video(playlist_id=playlist.id or 0, path=str(root / f"v{v}.mp4"), title=f"v{v}", position=v,
                          duration=30.0 * chunks, status="indexed")
            s.add(video)
            s.flush()
            for i in range(chunks):
                text = " ".join(rng.choice(words, 6).tolist())
                chunk = Chunk(video_id=video.id or 0, idx=i, start=30.0 * i, end=30.0 * (i + 1), transcript=text,
                              transcript_source="captions")
                s.add(chunk)
                s.flush()
                s.add(ChunkVector(chunk_id=chunk.id or 0, embedder="hash", dim=embedder.dim, content_hash=str(i),
                                  vector=encode(embedder.embed_texts([text])[0])))


def _search_in_a_new_process(root: Path) -> dict[str, object]:
    env = {**os.environ, **env_for(index__exact_search_max=THRESHOLD)}
    done = subprocess.run([sys.executable, "-c", SEARCH, str(root)], capture_output=True, text=True, check=True,
                          cwd=ROOT, env=env)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _saved(root: Path) -> dict[str, int]:
    return {p.name: p.stat().st_mtime_ns for p in (root / "indexes").glob("hnsw-*.bin")}


def test_a_second_process_answers_from_the_saved_index_not_a_rebuild(tmp_path: Path) -> None:
    _store(tmp_path)
    first = _search_in_a_new_process(tmp_path)
    assert first["events"] == {"built": 1}
    saved = _saved(tmp_path)
    assert len(saved) == 1

    second = _search_in_a_new_process(tmp_path)
    assert second["events"] == {"loaded": 1}  # read back; nothing was built
    assert _saved(tmp_path) == saved  # the same file, not written again
    assert second["hits"] == first["hits"] and len(first["hits"]) == 5  # type: ignore[arg-type]

    # other vectors (a video more): another key, one new build beside the old index
    settings = project(tmp_path)
    with transaction(open_store(settings)) as s:
        video = Video(playlist_id=1, path=str(tmp_path / "extra.mp4"), title="extra", position=9, duration=30.0,
                      status="indexed")
        s.add(video)
        s.flush()
        chunk = Chunk(video_id=video.id or 0, idx=0, start=0.0, end=30.0, transcript="stone roads",
                      transcript_source="captions")
        s.add(chunk)
        s.flush()
        s.add(ChunkVector(chunk_id=chunk.id or 0, embedder="hash", dim=512, content_hash="x",
                          vector=encode(get_embedder("hash").embed_texts(["stone roads"])[0])))
    third = _search_in_a_new_process(tmp_path)
    assert third["events"] == {"built": 1}
    assert len(_saved(tmp_path)) == 2 and all(_saved(tmp_path)[name] == t for name, t in saved.items())


def test_the_threshold_is_the_setting_and_a_corpus_at_it_stays_exact(tmp_path: Path) -> None:
    _store(tmp_path, videos=1, chunks=THRESHOLD)
    at = project(tmp_path, index__exact_search_max=THRESHOLD)
    chunk_ids, index = project_index(at, open_store(at), get_embedder("hash"), "History")
    assert len(chunk_ids) == THRESHOLD and index.exact
    assert not index_cache_dir(at).exists()  # nothing built, nothing saved

    below = project(tmp_path, index__exact_search_max=THRESHOLD - 1)
    _, index = project_index(below, open_store(below), get_embedder("hash"), "History")
    assert not index.exact and index.loaded_from is None
    assert len(list(index_cache_dir(below).glob("hnsw-*.bin"))) == 1
