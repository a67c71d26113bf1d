"""Benchmark health (issue 21): whether every video a benchmark uses can still be read, and is still the
video it was built from.

Why: a benchmark built from playlists loses videos (taken down, re-encoded, moved), and a question whose
evidence is gone or changed no longer tests what it did — its pairs judged again see something else. Each
video is re-read now: missing (no file, or unreadable), changed (its SHA-256 differs from ``video.sha256``
recorded at indexing) or unverifiable (no hash was recorded: it cannot be shown unchanged, so it is
counted, never passed). The videos used are those of the benchmark's domains that were indexed (its
corpus: retrieved evidence may come from any of them); the pairs affected are the benchmark's pairs whose
question cites a segment of that video (uniform or retrieved evidence from it affects more: counted per
domain as the corpus's pairs).
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Engine

from playlisteval.logs import get_logger
from playlisteval.store.engine import transaction
from playlisteval.store.media_paths import MediaPath, unset_root

log = get_logger(__name__)

OK, MISSING, CHANGED, UNVERIFIABLE = "ok", "missing", "changed", "unverifiable"


@dataclass
class VideoHealth:
    video_id: int
    path: str
    domain: str
    status: str  # ok / missing / changed / unverifiable
    size: int | None  # bytes read now (None when missing)
    recorded_sha256: str | None
    sha256: str | None  # read now
    cited_pairs: list[int] = field(default_factory=list)  # benchmark pairs whose question cites this video
    error: str = ""


def sha256_of(path: Path, block: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(block):
            digest.update(chunk)
    return digest.hexdigest()


def _videos(engine: Engine, benchmark_id: int) -> list[dict[str, Any]]:
    with transaction(engine) as s:
        rows = s.connection().execute(text(
            "SELECT DISTINCT v.id, v.path, v.sha256, d.name AS domain FROM video AS v "
            "JOIN playlist AS pl ON pl.id = v.playlist_id JOIN domain AS d ON d.id = pl.domain_id "
            "WHERE v.status = 'indexed' AND d.id IN (SELECT s.domain_id FROM benchmark_pair AS bp "
            "JOIN pair AS p ON p.id = bp.pair_id JOIN item AS i ON i.id = p.item_id "
            "JOIN seed AS s ON s.id = i.seed_id WHERE bp.benchmark_id = :b) ORDER BY v.id").columns(path=MediaPath),
            {"b": benchmark_id})  # path: the file this project reads (its own copy; store/media_paths.py)
        return [dict(r._mapping) for r in rows]


def _cited(engine: Engine, benchmark_id: int) -> dict[int, set[int]]:
    """video id → the benchmark's pairs whose question cites one of its segments."""
    out: dict[int, set[int]] = defaultdict(set)
    with transaction(engine) as s:
        rows = s.connection().execute(text(
            "SELECT g.video_id, bp.pair_id FROM benchmark_pair AS bp JOIN pair AS p ON p.id = bp.pair_id "
            "JOIN item AS i ON i.id = p.item_id JOIN seed AS s ON s.id = i.seed_id "
            "JOIN segment AS g ON g.id IN (s.segment1_id, s.segment2_id) WHERE bp.benchmark_id = :b"),
            {"b": benchmark_id})
        for video_id, pair_id in rows:
            out[int(video_id)].add(int(pair_id))
    return out


def check_video(row: dict[str, Any]) -> VideoHealth:
    path = Path(str(row["path"]))
    recorded = row["sha256"] or None
    health = VideoHealth(int(row["id"]), str(path), str(row["domain"]), OK, None, recorded, None)
    root = unset_root(str(path))
    if root is not None:  # stored under a media root this store has no folder for
        health.status = MISSING
        health.error = f"media root {root!r} is not set: `playlisteval media-root set {root} FOLDER`"
        return health
    try:
        health.size = path.stat().st_size
        health.sha256 = sha256_of(path)
    except OSError as exc:
        health.status, health.error = MISSING, f"{type(exc).__name__}: {exc.strerror or exc}"
        return health
    if recorded is None:
        health.status, health.error = UNVERIFIABLE, "no SHA-256 was recorded when it was indexed"
    elif health.sha256 != recorded:
        health.status = CHANGED
    return health


def check_benchmark(engine: Engine, benchmark_id: int) -> dict[str, Any]:
    """Every video of the benchmark re-read; the problems with the pairs they affect."""
    cited = _cited(engine, benchmark_id)
    videos = []
    for row in _videos(engine, benchmark_id):
        health = check_video(row)
        health.cited_pairs = sorted(cited.get(health.video_id, set()))
        if health.status != OK:
            log.warning("check.video", video_id=health.video_id, path=health.path, status=health.status)
        videos.append(health)
    bad = [v for v in videos if v.status != OK]
    affected = sorted({p for v in bad for p in v.cited_pairs})
    return {"videos": len(videos), "ok": len(videos) - len(bad),
            "missing": sum(v.status == MISSING for v in bad), "changed": sum(v.status == CHANGED for v in bad),
            "unverifiable": sum(v.status == UNVERIFIABLE for v in bad),
            "problems": [asdict(v) for v in bad], "affected_pairs": affected,
            "affected_domains": sorted({v.domain for v in bad}),
            "method": "each indexed video of the benchmark's domains re-read: size and SHA-256 against video.sha256"}
