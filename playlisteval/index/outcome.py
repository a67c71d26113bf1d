"""What indexing one video did (Outcome), as `video.index_report` keeps it for the coordinator, `status`
and the next `index` (a video skipped under other index settings is tried again: ``settings_key``)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

from playlisteval.config import IndexSettings


@dataclass
class Outcome:
    """What indexing one video did; stored as JSON in ``video.index_report`` for the coordinator."""

    run: str
    status: str  # indexed / skipped / failed (a setting to fix; the video stays "new")
    reason: str = ""
    chunks: int = 0
    transcript_source: str = ""
    transcript_model: str = ""  # the ASR model, when ASR made the transcript
    no_text: int = 0  # chunks with neither transcript nor on-screen text
    embedded: int = 0  # vectors computed
    reused: int = 0  # vectors kept (same content, same recipe)
    ocr_read: int = 0  # frames OCR'd
    ocr_reused: int = 0  # frames that matched the last one read
    ocr_partial: int = 0  # of the frames OCR'd, those read only where they changed (issue 26)
    frames: int = 0  # frames read (decoded, or loaded from the kept frames)
    frames_kept: int = 0  # of those, loaded from the kept frames instead of decoded
    decoder: str = ""  # decord / pyav
    full: bool = True  # False: only vectors were (re)computed for an indexed video
    worker: str = ""  # host:pid of the process that did it
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0
    # why a video was skipped: "file" (the file itself: never retried) or "error" (anything else, e.g. a
    # setting: retried by the next `index` once the index settings differ from settings_key's)
    cause: str = ""
    settings_key: str = ""


def settings_key(cfg: IndexSettings) -> str:
    """A digest of the index settings, so a video skipped under one configuration is retried under another."""
    return hashlib.sha256(json.dumps(cfg.model_dump(mode="json"), sort_keys=True).encode()).hexdigest()[:16]


def read_outcome(raw: str) -> Outcome | None:
    try:
        return Outcome(**json.loads(raw)) if raw else None
    except (ValueError, TypeError):
        return None
