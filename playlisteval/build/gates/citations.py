"""Citations are parsed in ``playlisteval.prompts.citations`` (text only, below the prompts and models that read them
too); the names stay importable from here for the gates."""

from playlisteval.prompts.citations import (
    Citation,
    ParsedCitations,
    chunks_by_clip,
    count_paragraphs,
    parse_citations,
    strip_citations,
    to_seconds,
    uniform,
)

__all__ = ["Citation", "ParsedCitations", "chunks_by_clip", "count_paragraphs", "parse_citations",
           "strip_citations", "to_seconds", "uniform"]
