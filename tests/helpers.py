"""Small builders shared by tests: a project, a store with seeds, a sim world without real videos."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
from sqlalchemy.engine import Engine

from playlisteval.config import Settings, load_settings, write_project
from playlisteval.store import open_store, transaction
from playlisteval.store.tables import Chunk, Domain, Playlist, Seed, Segment, Video
from playlisteval.world.synth import vocab
from playlisteval.world.synth.make import plan_world
from playlisteval.world.synth.world import save_world


def env_for(**overrides: object) -> dict[str, str]:
    """store__url="…" → {"PLAYLISTEVAL_STORE__URL": "…"} (values as TOML literals where needed)."""
    out = {}
    for key, value in overrides.items():
        section, _, name = key.partition("__")
        name = name if section == "models" else name.upper()
        out[f"PLAYLISTEVAL_{section.upper()}__{name}"] = (
            json.dumps(value) if isinstance(value, str) and not value.replace(".", "").isdigit() else str(value)
        )
    return out


def share_media(source: Path, dest: Path) -> None:
    """Link ``source``'s own files (not its store, its config or its derived-media folder) into ``dest``, a
    project given a copy of ``source``'s store alone: the store names the files inside its project relative
    to the project (issue 41), so the copy looks for them in ``dest``. Linked, not copied: they are shared,
    as they were when the store named them by absolute path."""
    for entry in source.iterdir():
        if entry.name.startswith("playlisteval.") or entry.name == "media" or (dest / entry.name).exists():
            continue
        (dest / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())


def project(tmp_path: Path, **overrides: object) -> Settings:
    if not (tmp_path / "playlisteval.toml").exists():
        write_project(tmp_path)
    return load_settings(tmp_path, environ=env_for(**overrides))


QUIET_SIM = {f"sim__{k}": 0 for k in (
    "transcript_answerable", "parametric_answerable", "bad_citation", "ungrounded", "narrated_degradation",
    "wrong_severity", "malformed_json", "refusal", "rate_limited")}


def seeded_store(settings: Settings, n_seeds: int, world_dir: Path | None = None) -> Engine:
    """A store with ``n_seeds`` seeds over made-up videos (paths need not exist; sim reads worlds)."""
    engine = open_store(settings)
    rng, taken = random.Random(n_seeds), set[str]()
    topic = vocab.TOPICS["Education"][0][0]
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
                save_world(plan_world(rng, taken, domain="Education", playlist="P1", topic=topic,
                                      title=f"Series Episode {j + 1}", episode=j + 1, duration=120.0), path)
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


def built_synthetic_project(root: Path, **overrides: object) -> Settings:
    """A project under ``root`` over a synthetic collection (2 domains × 3 videos × 3 minutes), added,
    indexed and built with the sim: what the select / eval / human tests start from."""
    from playlisteval.actors.build_run import build
    from playlisteval.actors.indexing import index_collection
    from playlisteval.index.collection import add_paths
    from playlisteval.store import open_store
    from playlisteval.world.synth.make import make_collection

    settings = project(root, **overrides)
    make_collection(root / "videos", domains=2, playlists=1, videos=3, minutes=3, seed=0)
    engine = open_store(settings)
    for domain in sorted(p for p in (root / "videos").iterdir() if p.is_dir()):
        add_paths(engine, domain.name, sorted(domain.iterdir()))
    index_collection(settings, engine)
    build(settings)
    return settings
