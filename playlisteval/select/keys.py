"""Content keys live in ``playlisteval.benchmark.keys`` (below `eval`); the names stay importable from here."""

from playlisteval.benchmark.keys import by_key, content_key, pair_key, question_keys

__all__ = ["by_key", "content_key", "pair_key", "question_keys"]
