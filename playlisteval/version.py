"""The tool's version, as installed (what reports, exports and `--version` print)."""

from __future__ import annotations

from importlib import metadata

try:
    __version__ = metadata.version("playlisteval")
except metadata.PackageNotFoundError:  # run from a source tree that was never installed
    __version__ = "0.0.0+unknown"
