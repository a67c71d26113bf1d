"""Stores for the selection and evaluation tests: a seeded store whose chunks carry what a real index
would read (the narration as transcript, the on-screen sign as OCR text) and hashed-word vectors."""

from __future__ import annotations

from sqlalchemy.engine import Engine
from sqlmodel import col, select

from playlisteval.config import Settings
from playlisteval.index.embedders import get_embedder
from playlisteval.index.vectors import content_hash, encode
from playlisteval.store import transaction
from playlisteval.store.tables import Chunk, ChunkVector, Video
from playlisteval.world.synth.world import load_world, scenes_in
from tests.helpers import seeded_store


def indexed_seeded_store(settings: Settings, n_seeds: int, embedder_name: str = "hash") -> Engine:
    """``seeded_store`` plus chunk transcripts/OCR from each video's world, and "hash" chunk vectors of
    the on-screen text (a sharp retriever: a sign named in a question finds its chunk)."""
    engine = seeded_store(settings, n_seeds)
    embedder = get_embedder(embedder_name)
    with transaction(engine) as s:
        videos = {v.id: v for v in s.exec(select(Video)).all()}
        chunks = s.exec(select(Chunk).order_by(col(Chunk.id))).all()
        texts = []
        for chunk in chunks:
            world = load_world(videos[chunk.video_id].path)
            assert world is not None
            shown = scenes_in(world, chunk.start, chunk.end)
            chunk.transcript = " ".join(scene.narration for scene in shown)
            chunk.ocr_text = "\n".join(scene.visual.sign for scene in shown)
            s.add(chunk)
            texts.append(f"{chunk.transcript}\n{chunk.ocr_text}")
        vectors = embedder.embed_texts(texts)
        for chunk, text, vector in zip(chunks, texts, vectors, strict=True):
            s.add(ChunkVector(chunk_id=chunk.id or 0, embedder=embedder.name, dim=embedder.dim,
                              content_hash=content_hash(text, embedder.name), vector=encode(vector)))
    return engine
