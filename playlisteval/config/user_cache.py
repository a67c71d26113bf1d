"""The user's cache folder for what playlisteval makes once per machine, not per project: joined model
files, the 8-bit OCR detector, the DuckDB extensions already verified. ``$XDG_CACHE_HOME/playlisteval``
(``~/.cache/playlisteval`` when unset)."""

from __future__ import annotations

import os
from pathlib import Path


def root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "playlisteval"
