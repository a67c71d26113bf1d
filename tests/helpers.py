"""Small builders shared by tests: a project, a store with seeds, a sim world without real videos."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from sqlalchemy.engine import Engine

from playlisteval.config import Settings, load_settings, write_project
from playlisteval.store import open_store, transaction
from playlisteval.store.tables import Chunk, Domain, Playlist, Seed, Segment, Video


def project(tmp_path: Path, **env: str) -> Settings:
    if not (tmp_path / "playlisteval.toml").exists():
        write_project(tmp_path)
    environ = {f"PLAYLISTEVAL_{k.upper()}": v for k, v in env.items()}
    return load_settings(tmp_path, environ=environ)


def seeded_store(settings: Settings, n_seeds: int, world_dir: Path | None = None) -> Engine:
    """A store with ``n_seeds`` seeds over made-up videos (paths need not exist; sim reads worlds)."""
    engine = open_store(settings)
    vec = np.ones(4, dtype=np.float32).tobytes()
    with transaction(engine) as s:
        domain = Domain(name="Education")
        s.add(domain)
        s.flush()
        playlist = Playlist(domain_id=domain.id or 0, name="P1")
        s.add(playlist)
        s.flush()
        for i in range(n_seeds):
            base = world_dir or settings.root
            segs = []
            for j in range(2):
                path = str(base / f"v{i}_{j}.mp4")
                video = Video(playlist_id=playlist.id or 0, path=path, title=f"v{i}_{j}", position=j,
                              duration=120.0, status="indexed")
                s.add(video)
                s.flush()
                for k in range(4):
                    s.add(Chunk(video_id=video.id or 0, idx=k, start=30.0 * k, end=30.0 * (k + 1),
                                transcript=f"narration {i} {j} {k}", transcript_source="captions"))
                seg = Segment(video_id=video.id or 0, idx=0, embedder="minilm", start=0.0, end=120.0,
                              first_chunk=0, last_chunk=3, vector=vec)
                s.add(seg)
                s.flush()
                segs.append(seg)
            s.add(Seed(domain_id=domain.id or 0, segment1_id=segs[0].id or 0, segment2_id=segs[1].id or 0,
                       similarity=0.6))
    return engine


def write_json(path: Path, data: object) -> None:
    path.write_text(json.dumps(data))
