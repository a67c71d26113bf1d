"""A seed's clips live in ``playlisteval.build.inputs`` (below the gates, which read them too); the names stay
importable from here for the stages."""

from playlisteval.build.inputs import Clip, Lines, format_lines, load_clips, mmss, transcript_windows

__all__ = ["Clip", "Lines", "format_lines", "load_clips", "mmss", "transcript_windows"]
