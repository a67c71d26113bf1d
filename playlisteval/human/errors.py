"""The human study's errors: all are PlaylistEvalErrors, so the CLI prints them as one clear line."""

from __future__ import annotations

from playlisteval.errors import PlaylistEvalError


class HumanStudyError(PlaylistEvalError):
    """The study cannot do what was asked: no such study, a duplicate invitation, a bad import file."""


class RatingRefused(HumanStudyError):
    """A rating the study does not accept; ``status`` is the HTTP status the app answers with."""

    def __init__(self, message: str, status: int = 422) -> None:
        super().__init__(message)
        self.status = status
