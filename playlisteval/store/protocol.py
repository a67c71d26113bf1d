"""The protocol of a benchmark's main runs (issue 22): which ``[eval]`` options make a judge's *main* run.

Which run is a judge's main run used to be decided by the ``[eval]`` settings of whatever process read the
store, so a shell without ``PLAYLISTEVAL_EVAL__FRAMES=16`` saw every run of the demo as a sweep and an
empty leaderboard. The protocol is now stored with the benchmark (table ``benchmark_protocol``): taken from
the settings when `select` draws it, changed only by `playlisteval protocol set`. `eval judge` defaults
to it, and `eval runs`, the leaderboard and the report tell main from sweep by it. A benchmark drawn before
protocols were stored has none; it is read with the configured settings, as before, until one is set.

The protocol holds every ``[eval]`` value a run's options hash covers (eval/options.py ``JudgeOptions``):
evidence, scope, modality, frames, frames per chunk, frame size, thinking, media resolution, the audio
options and the retriever (resolved: ``""`` means the ``[index]`` embedder at the time it was fixed).
"""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any

from sqlalchemy import JSON, text
from sqlalchemy.engine import Engine

from playlisteval.config import Settings
from playlisteval.store.engine import read_core, transaction

# read as SQL text with its JSON column typed: `status --json` names the protocol without the ORM (issue 26)
_STORED = text("SELECT protocol FROM benchmark_protocol WHERE benchmark_id = :id").columns(protocol=JSON)

#: the ``[eval]`` fields a protocol fixes (everything ``JudgeOptions.from_settings`` reads but ``swap``)
FIELDS = ("evidence", "scope", "modality", "frames", "frames_per_chunk", "frame_size", "thinking",
          "media_resolution", "audio_mode", "audio_speed", "audio_pause_s", "retriever")


def of_settings(settings: Settings) -> dict[str, Any]:
    """The protocol these settings would fix: their ``[eval]`` values, the retriever resolved."""
    e = settings.eval
    out: dict[str, Any] = {name: getattr(e, name) for name in FIELDS}
    out["frame_size"] = list(e.frame_size)
    out["retriever"] = e.retriever or settings.index.embedder
    return out


def applied(settings: Settings, protocol: dict[str, Any] | None) -> Settings:
    """A copy of ``settings`` whose ``[eval]`` holds the protocol's values (the settings themselves when
    there is none). Validated: a stored protocol edited by hand into nonsense is a clear error."""
    if not protocol:
        return settings
    known = {k: v for k, v in protocol.items() if k in FIELDS}
    merged = settings.eval.model_dump() | known
    section = type(settings.eval).model_validate(merged)
    return settings.model_copy(update={"eval": section})


def digest(protocol: dict[str, Any] | None) -> str:
    """16 hex digits naming a protocol (order of keys ignored); "" for none."""
    if not protocol:
        return ""
    return hashlib.sha256(json.dumps(protocol, sort_keys=True, separators=(",", ":"),
                                     default=str).encode()).hexdigest()[:16]


def stored(engine: Engine, benchmark_id: int) -> dict[str, Any] | None:
    """The benchmark's stored protocol, or None when it has none (drawn before protocols were kept)."""
    with read_core(engine) as s:
        found = s.execute(_STORED, {"id": benchmark_id}).scalar()
    return dict(found) if found else None


def every(engine: Engine) -> dict[int, dict[str, Any]]:
    """Benchmark id → its stored protocol."""
    from sqlmodel import select

    from playlisteval.store.tables import BenchmarkProtocol

    with transaction(engine) as s:
        return {int(r.benchmark_id): dict(r.protocol) for r in s.exec(select(BenchmarkProtocol)).all()
                if r.protocol}


def store(engine: Engine, benchmark_id: int, protocol: dict[str, Any], source: str, *,
          replace: bool = True) -> dict[str, Any]:
    """Write the benchmark's protocol (``replace=False``: only when it has none); returns what is stored."""
    from playlisteval.store.tables import BenchmarkProtocol

    with transaction(engine) as s:
        row = s.get(BenchmarkProtocol, benchmark_id)
        if row is not None and not replace:
            return dict(row.protocol)
        if row is None:
            row = BenchmarkProtocol(benchmark_id=benchmark_id, protocol=protocol, source=source)
        else:
            row.protocol, row.source, row.set_at = dict(protocol), source, time.time()
        s.add(row)
    return dict(protocol)
