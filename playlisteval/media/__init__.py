"""Media: probing files, extracting audio (frames and model clips come later)."""

from playlisteval.media.probe import ProbeInfo, probe

__all__ = ["ProbeInfo", "probe"]
