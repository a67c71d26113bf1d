"""Time to the first answer of a search over a project's store in a new process, the saved HNSW index
there (issue 13: "starts answering without rebuilding its index"), for ``python -m bench retrieval
--store``.

The benchmark's vectors are written into a fresh project's store as chunk vectors (one domain, videos
of 1,000 chunks, in the matrix's row order), and the index the benchmark built over them is put where
the project keeps its indexes. A new process then opens the store and calls ``project_index`` — the
path of `search` and of evidence retrieval: it reads the vectors, finds the saved index by their key
and answers one query. It must read the index back (``hnsw.loaded``); a build fails the benchmark.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from sqlalchemy import insert

from playlisteval.config import load_settings, write_project
from playlisteval.index.search import index_cache_dir
from playlisteval.index.vectors import encode
from playlisteval.store import open_store, transaction
from playlisteval.store.tables import Chunk, ChunkVector, Domain, Playlist, Video

PER_VIDEO = 1000
EMBEDDER = "bench"

_SEARCH = """
import json, sys, time
t0 = time.perf_counter()
from pathlib import Path
import numpy as np
from playlisteval.config import load_settings
from playlisteval.index import vectors
from playlisteval.index.search import project_index
from playlisteval.store import open_store
class Vectors:  # what project_index needs of an embedder: the stored vectors' name and size
    name, dim = sys.argv[2], int(sys.argv[3])
settings = load_settings(Path(sys.argv[1]))
engine = open_store(settings)
query = np.load(sys.argv[4])
t1 = time.perf_counter()
chunk_ids, index = project_index(settings, engine, Vectors(), None)
t2 = time.perf_counter()
rows, _ = index.search(query, int(sys.argv[5]))
t3 = time.perf_counter()
print(json.dumps({"events": dict(vectors.HNSW_EVENTS), "rows": len(chunk_ids), "answered": len(rows),
                  "open_s": round(t1 - t0, 2), "index_s": round(t2 - t1, 2), "query_s": round(t3 - t2, 4),
                  "first_answer_s": round(t3 - t0, 2)}))
"""


def fill_store(root: Path, matrix: np.ndarray) -> None:
    """A project at ``root`` whose store holds ``matrix`` as the chunk vectors of one domain."""
    write_project(root)
    settings = load_settings(root)
    engine = open_store(settings)
    with transaction(engine) as s:
        domain = Domain(name="Bench")
        s.add(domain)
        s.flush()
        playlist = Playlist(domain_id=domain.id or 0, name="P1")
        s.add(playlist)
        s.flush()
        playlist_id = playlist.id or 0
    chunk_id = 0
    with engine.begin() as conn:  # bulk inserts, ids given (a fresh store), every column spelled out
        for v, start in enumerate(range(0, matrix.shape[0], PER_VIDEO)):
            stop = min(start + PER_VIDEO, matrix.shape[0])
            conn.execute(insert(Video.__table__).values(  # type: ignore[attr-defined]
                id=v + 1, playlist_id=playlist_id, path=f"v{v}.mp4", title=f"v{v}", position=v, status="indexed",
                duration=30.0 * (stop - start), lease_owner="", lease_expires=0.0, index_report=""))
            ids = range(chunk_id + 1, chunk_id + 1 + stop - start)
            chunk_id += stop - start
            conn.execute(insert(Chunk.__table__), [  # type: ignore[attr-defined]
                {"id": c, "video_id": v + 1, "idx": i, "start": 30.0 * i, "end": 30.0 * (i + 1), "transcript": "",
                 "transcript_source": "", "transcript_model": "", "ocr_text": ""} for i, c in enumerate(ids)])
            conn.execute(insert(ChunkVector.__table__), [  # type: ignore[attr-defined]
                {"chunk_id": c, "embedder": EMBEDDER, "dim": matrix.shape[1], "content_hash": str(start + i),
                 "vector": encode(matrix[start + i])} for i, c in enumerate(ids)])


def store_first_answer(matrix: np.ndarray, query: np.ndarray, saved: Path, k: int) -> dict[str, float | bool]:
    """Seconds to the first answer of a new process over a store of ``matrix`` whose index is saved."""
    root = saved / "project"
    t0 = time.perf_counter()
    fill_store(root, matrix)
    fill_s = time.perf_counter() - t0
    cache = index_cache_dir(load_settings(root))
    cache.mkdir(parents=True, exist_ok=True)
    for built in saved.glob("hnsw-*.bin"):  # what the benchmark built over the same rows, same parameters
        shutil.copy(built, cache / built.name)
    np.save(saved / "store-query.npy", query)
    # a corpus at or below the threshold is searched exactly: a quick run lowers it to reach HNSW at all
    lowered = matrix.shape[0] <= load_settings(root).index.exact_search_max
    env = {**os.environ, **({"PLAYLISTEVAL_INDEX__EXACT_SEARCH_MAX": "0"} if lowered else {})}
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", _SEARCH, str(root), EMBEDDER, str(matrix.shape[1]),
                           str(saved / "store-query.npy"), str(k)], capture_output=True, text=True, check=True,
                          cwd=Path(__file__).resolve().parents[1], env=env)
    wall = time.perf_counter() - t0
    out = json.loads(done.stdout.strip().splitlines()[-1])
    if out["events"] != {"loaded": 1} or out["rows"] != matrix.shape[0]:
        raise RuntimeError(f"the new process did not answer from the saved index: {out}")
    return {"store_fill_s": round(fill_s, 1), "store_open_s": out["open_s"], "store_index_s": out["index_s"],
            "store_query_s": out["query_s"], "store_first_answer_s": out["first_answer_s"],
            "store_process_wall_s": round(wall, 2), "store_threshold_lowered": lowered}
