"""What a judge is shown (SPEC G1, G3): frames, the chunks they come from, and the transcript block.

- retrieved: the corpus's chunks ranked by the retriever's similarity to the question; the top
  ``frames / frames_per_chunk`` (64) chunks, ``frames_per_chunk`` (2) frames each, evenly inside the chunk;
- uniform: ``frames`` (128) frames evenly spaced over the whole corpus laid end to end, blind to the
  question;
- oracle: uniform over the two gold segments only.
Where `index` kept the frames it read (playlisteval/media/kept.py), a frame moves onto a kept one in
its chunk (SPEC G1): a retrieved chunk's frames are its indexed timestamps nearest the slice centres,
each used once; a uniform frame is the kept frame nearest it. The judge is then shown a frame that is
already decoded, and the recorded timestamps are the ones shown.

A frame left without a kept frame is *cold*: decoding it at its exact timestamp costs every frame since the
keyframe before it (half a GOP, ~4 s of 30-fps video with x264's default GOP). With ``[eval] cold_frames =
"keyframe"`` (the default) it moves to the keyframe nearest its timestamp inside its own slot: its chunk,
and its share of it — for uniform and oracle evidence no farther than half the spacing between
consecutive samples, for retrieved evidence its slice of the chunk — so a frame never crosses into a
neighbour's slot or out of its chunk, and two frames never become one. With no keyframe in the slot, or
no readable source, the exact timestamp stays. The frame carries the moved timestamp, so what the judgment
records as served is what is decoded. Keyframe times come from demuxing (media/keyframe_cache.py, listed
once per file). ``"exact"`` keeps the sampled timestamps; so does a run that does not materialise frames,
since nothing is decoded there. Frames are always shown chronologically within a video and in playlist
order across videos. The
transcript block has one line per served chunk in that order, ``[Video i @ m:s] text``, where i numbers
the source videos by first appearance and m:s is where the chunk starts in its video.
"""

from __future__ import annotations

import bisect
import threading
from collections import Counter
from dataclasses import dataclass, field
from itertools import groupby
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy.engine import Engine

from playlisteval.config import Settings
from playlisteval.errors import ConfigError, MediaError
from playlisteval.eval.corpus import Corpora, CorpusChunk, CorpusVideo, Question
from playlisteval.eval.modes import MODES
from playlisteval.index.embedders import Embedder, get_embedder
from playlisteval.index.search import corpus_index, index_cache_dir
from playlisteval.index.vectors import VectorIndex, exact_search
from playlisteval.media.kept import KeptFrames, kept_root
from playlisteval.media.keyframe_cache import cached_keyframes_of


@dataclass(frozen=True)
class Frame:
    video_id: int
    path: str  # the source video
    codec: str | None
    t: float  # seconds in the video
    chunk_id: int


@dataclass
class Evidence:
    mode: str
    scope: str
    frames: list[Frame]
    chunks: list[CorpusChunk]  # the served chunks, in frame order
    corpus_videos: int
    corpus_seconds: float
    retriever: str | None = None
    scores: dict[int, float] = field(default_factory=dict)  # chunk id → similarity (retrieved)

    def video_numbers(self) -> dict[int, int]:
        """Source video id → 1-based number by first appearance in frame order."""
        numbers: dict[int, int] = {}
        for chunk in self.chunks:
            numbers.setdefault(chunk.video_id, len(numbers) + 1)
        return numbers

    def transcript_block(self) -> str:
        numbers = self.video_numbers()
        return "\n".join(
            f"[Video {numbers[c.video_id]} @ {mmss(c.start)}] {' '.join(c.transcript.split())}"
            for c in self.chunks if c.transcript.strip()
        )

    def record(self) -> dict[str, Any]:
        """What is stored with every judgment: enough to show the judge's input again exactly."""
        return {
            "mode": self.mode, "scope": self.scope, "retriever": self.retriever,
            "corpus_videos": self.corpus_videos, "corpus_seconds": round(self.corpus_seconds, 3),
            "chunks": [c.chunk_id for c in self.chunks],
            "frames": [[f.video_id, round(f.t, 3)] for f in self.frames],
            "scores": {str(k): round(v, 6) for k, v in self.scores.items()},
        }


def mmss(seconds: float) -> str:
    """m:s with unbounded minutes (a 75-minute mark is 75:00), as SPEC G3 writes it."""
    s = max(0, int(seconds))
    return f"{s // 60}:{s % 60:02d}"


def _in_order(videos: list[CorpusVideo], frames: list[Frame]) -> list[Frame]:
    order = {v.video_id: v.order for v in videos}
    return sorted(frames, key=lambda f: (order[f.video_id], f.t))


def _served(frames: list[Frame], by_id: dict[int, CorpusChunk]) -> list[CorpusChunk]:
    seen: dict[int, CorpusChunk] = {}
    for f in frames:
        seen.setdefault(f.chunk_id, by_id[f.chunk_id])
    return list(seen.values())


def uniform(videos: list[CorpusVideo], n_frames: int, mode: str = "uniform", scope: str = "domain") -> Evidence:
    """``n_frames`` frames at the centres of equal slices of the corpus laid end to end."""
    total = sum(v.seconds for v in videos)
    frames: list[Frame] = []
    by_id = {c.chunk_id: c for v in videos for c in v.chunks}
    if total > 0 and n_frames > 0:
        offsets = [0.0]
        for v in videos:
            offsets.append(offsets[-1] + v.seconds)
        for i in range(n_frames):
            pos = (i + 0.5) * total / n_frames
            k = min(bisect.bisect_right(offsets, pos) - 1, len(videos) - 1)
            video = videos[k]
            t = video.start + (pos - offsets[k])
            starts = [c.start for c in video.chunks]
            chunk = video.chunks[max(0, bisect.bisect_right(starts, t) - 1)]
            frames.append(Frame(video.video_id, video.path, video.codec, t, chunk.chunk_id))
    frames = _in_order(videos, frames)
    return Evidence(mode, scope, frames, _served(frames, by_id), len(videos), total)


def chunk_frames(video: CorpusVideo, chunk: CorpusChunk, per_chunk: int) -> list[Frame]:
    """``per_chunk`` frames at the centres of equal slices of one chunk."""
    span = chunk.end - chunk.start
    return [Frame(video.video_id, video.path, video.codec, chunk.start + (j + 0.5) * span / per_chunk,
                  chunk.chunk_id) for j in range(per_chunk)]


class Retriever:
    """Ranks a corpus's chunks against a question with one embedder's stored chunk vectors."""

    def __init__(self, engine: Engine, settings: Settings, name: str | None = None) -> None:
        self.engine = engine
        self.settings = settings
        self.embedder: Embedder = get_embedder(name or settings.eval.retriever or settings.index.embedder,
                                               settings.index.embedding_dims, settings.index)
        self._lock = threading.Lock()

    def _index(self, domain: str) -> tuple[dict[int, int], VectorIndex]:
        with self._lock:  # corpus_index builds (and caches) a domain's index once
            chunk_ids, index = corpus_index(self.engine, self.embedder, domain, self.settings.index.exact_search_max,
                                            index_cache_dir(self.settings))
        if not chunk_ids:
            raise ConfigError(f"no chunk vectors of embedder {self.embedder.name!r} in domain {domain!r}: "
                              "run `playlisteval index` with that embedder (or choose another retriever)")
        return {cid: row for row, cid in enumerate(chunk_ids)}, index

    def top_chunks(self, question: Question, videos: list[CorpusVideo], k: int,
                   whole_domain: bool) -> list[tuple[int, float]]:
        """(chunk id, similarity) of the ``k`` best chunks of ``videos``, best first."""
        rows_of, index = self._index(question.domain)
        with self._lock:  # one query at a time through a model that may not be thread-safe
            query = self.embedder.embed_texts([question.text])[0]
        if whole_domain:  # the domain's own index (exact, or HNSW when large: SPEC A8)
            rows, scores = index.search(query, k)
            ids = {row: cid for cid, row in rows_of.items()}
            return [(ids[int(r)], float(s)) for r, s in zip(rows.tolist(), scores.tolist(), strict=True)]
        wanted = [c.chunk_id for v in videos for c in v.chunks if c.chunk_id in rows_of]
        if not wanted:
            return []
        sub = index.matrix[np.array([rows_of[c] for c in wanted])]
        rows, scores = exact_search(sub, query, k)
        return [(wanted[int(r)], float(s)) for r, s in zip(rows.tolist(), scores.tolist(), strict=True)]


def retrieved(retriever: Retriever, question: Question, videos: list[CorpusVideo], n_frames: int,
              per_chunk: int, scope: str) -> Evidence:
    n_chunks = max(1, n_frames // max(1, per_chunk))
    top = retriever.top_chunks(question, videos, n_chunks, whole_domain=scope == "domain")
    where = {c.chunk_id: (v, c) for v in videos for c in v.chunks}
    frames = [f for cid, _ in top if cid in where for f in chunk_frames(*where[cid], per_chunk)]
    frames = _in_order(videos, frames)
    by_id = {cid: c for cid, (_, c) in where.items()}
    return Evidence("retrieved", scope, frames, _served(frames, by_id), len(videos),
                    sum(v.seconds for v in videos), retriever.embedder.name,
                    {cid: score for cid, score in top})


def _nearest(times: list[float], t: float) -> int:
    i = bisect.bisect_left(times, t)
    near = [j for j in (i - 1, i) if 0 <= j < len(times)]
    return min(near, key=lambda j: (abs(times[j] - t), times[j]))


def on_kept_frames(evidence: Evidence, root: Path) -> Evidence:
    """The evidence with each frame moved onto a kept frame of its chunk where there is one (module doc)."""
    by_id = {c.chunk_id: c for c in evidence.chunks}
    kept: dict[str, KeptFrames | None] = {}
    out: list[Frame] = []
    for chunk_id, group in groupby(evidence.frames, key=lambda f: f.chunk_id):
        frames = list(group)
        chunk = by_id[chunk_id]
        if frames[0].path not in kept:
            try:
                kept[frames[0].path] = KeptFrames(root, frames[0].path)
            except MediaError:  # a missing source: the exact timestamps, and the error where it is read
                kept[frames[0].path] = None
        store = kept[frames[0].path]
        free = store.within(chunk.start, chunk.end) if store is not None else []
        moved = []
        for frame in frames:
            if not free:
                moved.append(frame)
                continue
            j = _nearest(free, frame.t)
            moved.append(Frame(frame.video_id, frame.path, frame.codec, free[j], frame.chunk_id))
            if evidence.mode == "retrieved":  # a chunk's frames are distinct indexed frames
                free = free[:j] + free[j + 1:]
        out.extend(sorted(moved, key=lambda f: f.t))
    evidence.frames = out
    return evidence


def _kept_times(root: Path, path: str) -> list[float]:
    try:
        return KeptFrames(root, path).times()
    except MediaError:  # a missing source: nothing kept
        return []


def _has(times: list[float], t: float, tol: float = 5e-4) -> bool:
    i = bisect.bisect_left(times, t - tol)
    return i < len(times) and times[i] <= t + tol


def on_keyframes(evidence: Evidence, media_dir: Path) -> Evidence:
    """The evidence with each cold frame (not on a kept frame) moved onto the keyframe nearest it inside
    its slot, where there is one (module doc)."""
    by_id = {c.chunk_id: c for c in evidence.chunks}
    kept = {path: _kept_times(kept_root(media_dir), path) for path in {f.path for f in evidence.frames}}
    cold = [not _has(kept[f.path], f.t) for f in evidence.frames]
    listed = cached_keyframes_of(media_dir, (f.path for f, c in zip(evidence.frames, cold, strict=True) if c))
    keys = {path: times or [] for path, times in listed.items()}
    # uniform samples are one spacing apart over the corpus laid end to end (see ``uniform``)
    spacing = evidence.corpus_seconds / len(evidence.frames) if evidence.frames else 0.0
    per_chunk = Counter(f.chunk_id for f in evidence.frames)
    served: dict[str, set[float]] = {}
    for f, is_cold in zip(evidence.frames, cold, strict=True):  # a frame already shown is not shown twice
        served.setdefault(f.path, set()).update(() if is_cold else (round(f.t, 3),))
    out: list[Frame] = []
    for frame, is_cold in zip(evidence.frames, cold, strict=True):
        chunk, times = by_id[frame.chunk_id], keys.get(frame.path, [])
        if not is_cold or not times:
            out.append(frame)
            continue
        half = ((chunk.end - chunk.start) / (2 * per_chunk[frame.chunk_id]) if evidence.mode == "retrieved"
                else spacing / 2)
        lo, hi = max(chunk.start, frame.t - half), min(chunk.end, frame.t + half)
        inside = [k for k in times[bisect.bisect_left(times, lo):bisect.bisect_left(times, hi)]
                  if round(k, 3) not in served[frame.path]]
        if not inside:
            out.append(frame)
            continue
        t = min(inside, key=lambda k: (abs(k - frame.t), k))  # noqa: B023
        served[frame.path].add(round(t, 3))
        out.append(Frame(frame.video_id, frame.path, frame.codec, t, frame.chunk_id))
    # slots are disjoint and ordered, but a chunk may mix kept and moved frames: time order within it
    evidence.frames = [f for _, group in groupby(out, key=lambda f: f.chunk_id)
                       for f in sorted(group, key=lambda f: f.t)]
    return evidence


def select_evidence(corpora: Corpora, retriever: Retriever | None, question: Question, mode: str,
                    scope: str, n_frames: int, per_chunk: int) -> Evidence:
    """The evidence of ``mode`` from ``scope`` for one question (oracle mode means the oracle scope)."""
    if mode not in MODES:
        raise ConfigError(f"unknown evidence {mode!r}; known: {', '.join(MODES)}")
    if mode == "oracle":
        scope = "oracle"
    videos = corpora.scope(question, scope)
    if mode == "retrieved":
        if retriever is None:
            raise ConfigError("retrieved evidence needs a retriever")
        evidence = retrieved(retriever, question, videos, n_frames, per_chunk, scope)
    else:
        evidence = uniform(videos, n_frames, mode, scope)
    settings = corpora.settings
    evidence = on_kept_frames(evidence, kept_root(settings.media_dir))
    if settings.eval.cold_frames == "keyframe" and settings.eval.materialize_frames:
        evidence = on_keyframes(evidence, settings.media_dir)
    return evidence
