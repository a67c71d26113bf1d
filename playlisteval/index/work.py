"""Indexing one video: the unit of work of the "index" actor (SPEC A2, A4, A5).

probe → exact chunks → transcripts (captions, embedded subtitles, else ASR) → sampled frames → OCR
→ chunk vectors → one short transaction that stores chunks, vectors, the outcome and status
"indexed". A video is claimed with a lease first, so a duplicate or late message does nothing, and a
video whose worker died is claimable again once the lease runs out: the lease is short (``[broker] lease_s``)
and renewed while the video is worked on (index/leases.py). Decoding, OCR and embedding run outside any
transaction.

A video without an audio track is indexed from its frames (on-screen text, a visual embedder); only
one whose frames cannot be decoded either is skipped. A chunk with no text at all is still a chunk:
its text vector is zero (a visual embedder still finds it), and it is counted as "no text".

A video already indexed whose vectors for the embedder are missing or stale (another embedder, a
changed recipe) goes through the same path from its stored chunks: only the vectors are computed.
"""

from __future__ import annotations

import functools
import json
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict
from typing import Any

import numpy as np
from PIL import Image
from sqlalchemy import update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import OperationalError
from sqlmodel import Session, col, delete, select

from playlisteval.config import IndexSettings, Settings
from playlisteval.errors import ConfigError, MediaError
from playlisteval.index import chunk_progress, heap, phases
from playlisteval.index import leases as video_leases
from playlisteval.index.chunk_frames import ChunkFrames, FramesAhead
from playlisteval.index.chunking import chunk_spans
from playlisteval.index.embed_ahead import EmbedAhead
from playlisteval.index.embedders import ChunkInput, Embedder, embed_chunks, get_embedder, needs_frames, recipe
from playlisteval.index.languages import language_for
from playlisteval.index.ocr import FrameTextReader, get_ocr
from playlisteval.index.outcome import Outcome, read_outcome, settings_key
from playlisteval.index.transcripts import Transcripts, transcripts_for
from playlisteval.index.vectors import content_hash, encode
from playlisteval.logs import get_logger
from playlisteval.media.frames import frames_at, keyed_sample_times, keyframe_times, sample_times
from playlisteval.media.kept import KeptFrames, kept_root
from playlisteval.media.probe import probe
from playlisteval.store.engine import transaction
from playlisteval.store.tables import Chunk, ChunkVector, Video

log = get_logger(__name__)
_TEXT_WINDOW = 64  # chunks embedded per call when no frames are needed


def claim(engine: Engine, video_id: int, worker: str, lease_s: float) -> bool:
    """Lease the video for ``worker`` unless another live worker holds it (compare-and-set)."""
    now = time.time()
    with transaction(engine) as session:
        result = session.execute(
            update(Video)
            .where(col(Video.id) == video_id, col(Video.status).in_(("new", "indexed")),
                   col(Video.lease_expires) < now)
            .values(lease_owner=worker, lease_expires=now + lease_s)
        )
        return bool(result.rowcount)  # type: ignore[attr-defined]


def release(engine: Engine, video_id: int, worker: str, outcome: Outcome | None = None) -> None:
    values: dict[str, object] = {"lease_owner": "", "lease_expires": 0.0}
    if outcome is not None:
        values["index_report"] = json.dumps(asdict(outcome))
    with transaction(engine) as session:
        session.execute(update(Video).where(col(Video.id) == video_id, col(Video.lease_owner) == worker)
                        .values(**values))


def index_video(settings: Settings, engine: Engine, video_id: int, embedder_name: str, run: str,
                worker: str) -> Outcome | None:
    """Index (or re-embed) one video; None when it is leased elsewhere or was done in this run."""
    with Session(engine) as session:
        video = session.get(Video, video_id)
    if video is None or video.status not in ("new", "indexed"):
        return None
    previous = read_outcome(video.index_report)
    if video.status == "indexed" and previous is not None and previous.run == run:
        return None  # a duplicate message of this run
    # a short lease renewed while the video is worked on (index/leases.py): a dead holder's lapses soon
    lease_s = settings.broker.lease_s
    if not claim(engine, video_id, worker, lease_s):
        return None
    started = time.monotonic()
    outcome = Outcome(run=run, status="indexed", full=video.status == "new", worker=worker)
    try:
        embedder = get_embedder(embedder_name, 0, settings.index)
        # past [index] lease_s, its start-to-close ceiling, the video is failed with the reason even while this
        # thread is still at it (stuck in a decoder, say); what the thread commits later is then discarded
        ceiling = settings.index.lease_s
        with video_leases.renewed(engine, video_id, worker, lease_s, ceiling,
                                  lambda: give_up(engine, video_id, worker, outcome, ceiling, started,
                                                  settings.index)) as renewal:
            _work(settings, engine, video, embedder, outcome, worker, started, renewal)
    except MediaError as exc:  # unusable file: reported and skipped (SPEC A2)
        outcome.status, outcome.reason, outcome.cause = "skipped", exc.reason, "file"
        outcome.seconds = round(time.monotonic() - started, 3)
        _finish_skipped(engine, video_id, worker, outcome)
    except ConfigError as exc:  # a setting to fix: every video would fail the same way
        outcome.status, outcome.reason = "failed", str(exc)
        release(engine, video_id, worker, outcome)
    except OperationalError:
        release(engine, video_id, worker)  # transient (a locked store…): the broker retries
        raise
    except Exception as exc:  # anything else would fail again on retry: report and skip (SPEC A2)
        log.exception("index.video_failed", video=video_id)
        outcome.status, outcome.reason = "skipped", f"indexing failed: {type(exc).__name__}: {exc}"[:500]
        # not the file's fault as far as we know: a changed setting gets it another try (issue 14)
        outcome.cause, outcome.settings_key = "error", settings_key(settings.index)
        outcome.seconds = round(time.monotonic() - started, 3)
        _finish_skipped(engine, video_id, worker, outcome)
    log.info("index.video", video=video_id, status=outcome.status, chunks=outcome.chunks,
             seconds=outcome.seconds, reason=outcome.reason[:120])
    return outcome


def give_up(engine: Engine, video_id: int, worker: str, outcome: Outcome, ceiling_s: float, started: float,
            cfg: IndexSettings) -> None:
    """The video ran past its ceiling: skipped with the reason (a new video) or its outcome said (an indexed
    one being re-embedded), compare-and-set on the holder; the run's coordinator reads it like any outcome."""
    given = Outcome(run=outcome.run, status="skipped", full=outcome.full, worker=worker, cause="error",
                    reason=(f"indexing exceeded its start-to-close ceiling of {ceiling_s:g} s ([index] lease_s); "
                            "failed while its worker lived"), settings_key=settings_key(cfg),
                    seconds=round(time.monotonic() - started, 3), warnings=list(outcome.warnings))
    with transaction(engine) as session:
        row = session.get(Video, video_id)
        if row is None or row.lease_owner != worker:
            return  # taken back meanwhile: whoever holds it now decides
        if row.status == "new":
            row.status, row.reason = "skipped", given.reason
        row.lease_owner, row.lease_expires = "", 0.0
        row.index_report = json.dumps(asdict(given))
        session.add(row)
    log.error("index.ceiling", video=video_id, ceiling_s=ceiling_s, worker=worker)


def _given_up(row: Video | None, run: str) -> Outcome | None:
    """The outcome a give-up wrote for ``run`` (the late commit of that run then writes nothing)."""
    found = read_outcome(row.index_report) if row is not None else None
    return found if found is not None and found.run == run and found.status != "indexed" else None


def _finish_skipped(engine: Engine, video_id: int, worker: str, outcome: Outcome) -> None:
    with transaction(engine) as session:
        row = session.get(Video, video_id)
        if row is not None and row.status == "new":
            row.status, row.reason = "skipped", outcome.reason
            row.lease_owner, row.lease_expires = "", 0.0
            row.index_report = json.dumps(asdict(outcome))
            session.add(row)
    release(engine, video_id, worker)


def _work(settings: Settings, engine: Engine, video: Video, embedder: Embedder, outcome: Outcome,
          worker: str, started: float, renewal: video_leases.Renewal | None = None) -> None:
    cfg = settings.index
    assert video.id is not None
    ocr = get_ocr(cfg)
    warm = getattr(ocr, "warm", None)
    if warm is not None and outcome.full:  # the engines load beside the probe and the first decoding
        warm(cfg.ocr_detect_side > 0)
    with Session(engine) as session:
        stored = list(session.exec(select(Chunk).where(Chunk.video_id == video.id).order_by(col(Chunk.idx))))
        have = {c.idx: v.content_hash for c, v in session.exec(
            select(Chunk, ChunkVector).join(ChunkVector, col(ChunkVector.chunk_id) == Chunk.id)
            .where(Chunk.video_id == video.id, ChunkVector.embedder == embedder.name))}
    with phases.timed("probe"):
        info = probe(video.path)
    outcome.warnings.extend(info.warnings)  # a container duration clamped to its streams' (issue 44)
    # the transcript is made beside the frame decoding and OCR below (ASR runs in CTranslate2 or on a
    # server, outside the GIL): on two cores a video costs the longer of the two, not their sum
    asr_thread = ThreadPoolExecutor(1, thread_name_prefix="asr")
    heard: Future[Transcripts] = Future()
    if outcome.full:
        spans = chunk_spans(info.duration, cfg.chunk_s, cfg.min_last_chunk_s)
        heard = asr_thread.submit(_timed_transcripts, video, info, spans, language_for(engine, video, cfg))
    else:
        spans = [(c.start, c.end) for c in stored]
        source, model = (stored[0].transcript_source, stored[0].transcript_model) if stored else ("", "")
        heard.set_result(Transcripts([c.transcript for c in stored], source, model))
    outcome.chunks = len(spans)
    texts: list[str] = []
    with_frames = needs_frames(embedder) or (outcome.full and ocr is not None)
    if outcome.full and not info.has_audio and not with_frames and spans:
        # nothing else will look at the frames: make sure there are some (SPEC A2: a file with neither
        # decodable frames nor audio is skipped)
        frames_at(video.path, [sample_times(spans[:1], 1)[0][0]], info.codec, (64, 64))
    # [A5] a visual embedder reads vl_max_frames (16) per chunk, not the OCR's frames_per_chunk (issue 20)
    per_chunk = cfg.vl_max_frames if needs_frames(embedder) else cfg.frames_per_chunk
    # samples on keyframes where one lies in the sample's slice (cheap to decode), exact otherwise
    with phases.timed("probe"):
        keys = keyframe_times(video.path) if with_frames else []
    times = keyed_sample_times(spans, per_chunk, keys)
    side = max(cfg.ocr_max_side, 960 if needs_frames(embedder) else 0)
    frames = ChunkFrames(video.path, info.codec, side, (info.width, info.height), keys,
                          KeptFrames(kept_root(settings.media_dir), video.path)) if with_frames else None
    texter = None
    if ocr is not None and outcome.full:
        texter = FrameTextReader(ocr, cfg.ocr_max_side, cfg.ocr_skip_share, cfg.ocr_skip_level,
                                 cfg.ocr_detect_side)
    rec = recipe(embedder, cfg.ocr_weight)
    if needs_frames(embedder):  # the vector depends on which frames of which file were read
        rec += f"|frames={per_chunk}|keyed|{video.sha256 or info.size}"
    ocr_texts = [c.ocr_text for c in stored] if not outcome.full else ["" for _ in spans]
    # a new video's texts are embedded as they come, beside the frames (embed_ahead.py)
    early = EmbedAhead(embedder) if outcome.full and not have and not needs_frames(embedder) \
        and getattr(embedder, "embed_chunks", None) is None else None
    if early is not None:
        early.submit(lambda: heard.result().texts)
    hashes: list[str] = ["" for _ in spans]
    vectors: dict[int, np.ndarray] = {}
    window = max(1, cfg.vl_batch) if needs_frames(embedder) else _TEXT_WINDOW
    kept: dict[int, list[Image.Image]] = {}  # frames of this window, for an embedder that reads them
    # the frame-reading thread also detects the text of frames the reader will read whole (ocr.DetectAhead)
    ahead = FramesAhead(frames, times, texter.ahead() if texter is not None else None) \
        if frames is not None else None
    try:
        for first in range(0, len(spans), window):
            idxs = list(range(first, min(first + window, len(spans))))
            inputs: dict[int, ChunkInput] = {}
            for i in idxs:
                images, seen = ahead.take(i) if ahead is not None else ([], None)
                outcome.frames += len(images)
                if texter is not None:
                    with phases.timed("OCR"):
                        ocr_texts[i] = texter.chunk_text(images, seen)
                    if early is not None:
                        early.submit(functools.partial(str.split, ocr_texts[i], "\n"))
                if needs_frames(embedder):
                    kept[i] = images
                else:
                    del images  # read: nothing of this chunk's frames is needed any more
                if ahead is not None:
                    # the chunk's decoded pictures and OCR tensors are freed; once such pages add up to
                    # heap.SLACK they go back to the system instead of piling up in glibc's arenas (issue 43)
                    with phases.timed("heap release"):
                        heap.give_back(heap.SLACK)
                chunk_progress.note(outcome.run, video.id, i + 1)  # the `index` bar moves per chunk
            texts = texts or _heard(heard, outcome)
            for i in idxs:
                lines = [line for line in ocr_texts[i].split("\n") if line.strip()]
                hashes[i] = content_hash(_chunk_text(texts[i], ocr_texts[i]), rec)
                if have.get(i) != hashes[i]:
                    inputs[i] = ChunkInput(texts[i], lines, kept.pop(i, []))
            kept.clear()
            if inputs:
                with phases.timed("embedding"):
                    rows = embed_chunks(embedder, list(inputs.values()), cfg.ocr_weight,
                                        early.known() if early is not None else None)
                vectors.update(zip(inputs, rows, strict=True))
    finally:
        if early is not None:
            early.close()
        if ahead is not None:
            ahead.close()  # before the reader it uses is closed
        if frames is not None:
            outcome.decoder = frames.backend
            outcome.frames_kept = frames.reused
            frames.close()
        asr_thread.shutdown(wait=True, cancel_futures=True)
    texts = texts or _heard(heard, outcome)
    if texter is not None:
        outcome.ocr_read, outcome.ocr_reused = texter.stats.read, texter.stats.reused
        outcome.ocr_partial = texter.stats.partial
    outcome.embedded = sum(1 for v in vectors.values() if np.any(v))
    outcome.reused = len(spans) - len(vectors)
    outcome.no_text = sum(1 for t, o in zip(texts, ocr_texts, strict=True) if not t.strip() and not o.strip())
    outcome.seconds = round(time.monotonic() - started, 3)
    if renewal is not None:
        # the commit gives the lease back: a renewal between the two would find it gone and report the lease
        # lost (a fault-free run's pid-namespace test saw one on a busy host). Renewed a lease_s / 3 ago at
        # most, it holds for the commit; one that lapsed meanwhile was another worker's to take, as before
        renewal.stop()
    with phases.timed("store"):
        _commit(engine, video, embedder, spans, texts, ocr_texts, hashes, vectors, heard.result().captions_path,
                info.duration, outcome, worker)
    del vectors, kept, frames, ahead, texter
    with phases.timed("heap release"):  # the video is in the store: what indexing it held goes back (heap.py)
        heap.give_back()


def _timed_transcripts(video: Video, info: Any, spans: list[tuple[float, float]], cfg: IndexSettings) -> Transcripts:
    """``transcripts_for`` on the ASR thread, its time counted as the ASR phase (captions read included)."""
    with phases.timed("ASR"):
        return transcripts_for(video, info, spans, cfg)


def _heard(heard: Future[Transcripts], outcome: Outcome) -> list[str]:
    """The transcripts once made (raising what making them raised), noted in the outcome."""
    found = heard.result()
    outcome.transcript_source, outcome.transcript_model = found.source, found.model
    outcome.warnings.extend(found.warnings)
    return found.texts


def _chunk_text(transcript: str, ocr_text: str) -> str:
    return "\n".join(part for part in (transcript.strip(), ocr_text.strip()) if part)


def _commit(engine: Engine, video: Video, embedder: Embedder, spans: list[tuple[float, float]], texts: list[str],
            ocr_texts: list[str], hashes: list[str], vectors: dict[int, np.ndarray],
            captions: str | None, duration: float, outcome: Outcome, worker: str) -> None:
    """Chunks (upserted by index; rows past a now shorter end deleted), vectors, status: one transaction;
    nothing when the video was given up at its ceiling meanwhile (the outcome then says so)."""
    with transaction(engine) as session:
        given = _given_up(session.get(Video, video.id), outcome.run)
        if given is not None:
            outcome.status, outcome.reason = given.status, given.reason
            return
        existing = {c.idx: c for c in session.exec(select(Chunk).where(Chunk.video_id == video.id)).all()}
        chunks: list[Chunk] = []
        for idx, (start, end) in enumerate(spans):
            chunk = existing.pop(idx, None) or Chunk(video_id=video.id or 0, idx=idx, start=start, end=end)
            chunk.start, chunk.end = start, end
            chunk.transcript, chunk.ocr_text = texts[idx], ocr_texts[idx]
            chunk.transcript_source, chunk.transcript_model = outcome.transcript_source, outcome.transcript_model
            session.add(chunk)
            chunks.append(chunk)
        stale = [c.id for c in existing.values()]
        if stale:
            session.exec(delete(ChunkVector).where(col(ChunkVector.chunk_id).in_(stale)))
            session.exec(delete(Chunk).where(col(Chunk.id).in_(stale)))
        session.flush()
        if vectors:
            ids = [chunks[i].id for i in vectors]
            rows = {v.chunk_id: v for v in session.exec(select(ChunkVector).where(
                ChunkVector.embedder == embedder.name, col(ChunkVector.chunk_id).in_(ids)))}
            for i, vector in vectors.items():
                chunk_id = chunks[i].id or 0
                vec = rows.get(chunk_id) or ChunkVector(chunk_id=chunk_id, embedder=embedder.name, dim=embedder.dim,
                                                        content_hash="", vector=b"")
                vec.dim, vec.content_hash, vec.vector = embedder.dim, hashes[i], encode(vector)
                session.add(vec)
        row = session.get(Video, video.id)
        if row is not None:
            if row.status == "new":
                row.status, row.reason, row.duration = "indexed", None, duration
                row.captions_path = captions
            if row.lease_owner == worker:
                row.lease_owner, row.lease_expires = "", 0.0
            row.index_report = json.dumps(asdict(outcome))
            session.add(row)
