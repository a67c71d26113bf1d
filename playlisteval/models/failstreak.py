"""Consecutive identical failures of a provider, counted across every call of a process (issue 22).

An unreachable provider with a key set (connection refused) or a key it refuses (401/403) fails every
call the same way; without a count each item is tried ``max_attempts`` times with backoff, in silence
(49 pairs × 6 tries over 331 s). The runner reports each try's failure here; once one provider failed
the same way ``[runner] stop_after_same_failures`` tries in a row, the try raises ``ProviderDown`` and
the caller stops its run (a judge pass stops, naming it). A success, or a failure of another kind
(a 400 about one request, a 429), resets the count: only failures that say nothing about the request
itself are counted. The count is per process: Redis workers each count their own.
"""

from __future__ import annotations

import re
import threading

from playlisteval.errors import ModelError, PermanentModelError, ProviderDown, TransientModelError
from playlisteval.logs import get_logger

log = get_logger(__name__)

_AUTH = re.compile(r"(?:Error code:|HTTP)\s*(401|403)\b")


def failure_kind(exc: ModelError) -> str | None:
    """"connection" or "auth NNN" when ``exc`` says the provider cannot be reached or refuses the key,
    else None (a failure about this request, or a rate limit: not counted)."""
    text = str(exc)
    if isinstance(exc, TransientModelError) and "connection error" in text:
        return "connection"
    if isinstance(exc, PermanentModelError):
        found = _AUTH.search(text)
        if found:
            return f"auth {found.group(1)}"
    return None


class FailStreak:
    """Per provider: the kind of its last failures and how many tries in a row failed so."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs: dict[str, tuple[str, int]] = {}

    def ok(self, provider: str) -> None:
        with self._lock:
            self._runs.pop(provider, None)

    def failed(self, provider: str, exc: ModelError, limit: int, counted: tuple[str, int] | None = None) -> None:
        """Count ``exc`` (unless ``counted``: what ``record`` returned for it); raise ``ProviderDown`` (from
        ``exc``) once ``limit`` > 0 tries in a row failed the same way."""
        kind, count = counted if counted is not None else self.record(provider, exc)
        if kind and limit > 0 and count >= limit:
            if count == limit:
                log.warning("provider.down", provider=provider, kind=kind, tries=count)
            raise ProviderDown(  # the limit, not the count: tries in flight together may add to it (issue 43)
                f"{provider}: {limit} tries in a row failed the same way ({kind}): stopped asking; "
                f"last error: {exc} — check the provider's address and key, then run again "
                f"([runner] stop_after_same_failures = {limit})") from exc

    def record(self, provider: str, exc: ModelError) -> tuple[str, int]:
        """Count ``exc``: (its kind, tries in a row failed so); ("", 0) for a failure that is not counted.
        The runner counts a try before its rate-limit slot frees, so that a try waiting for the slot sees it."""
        kind = failure_kind(exc)
        with self._lock:
            if kind is None:
                self._runs.pop(provider, None)
                return "", 0
            last, count = self._runs.get(provider, (kind, 0))
            count = count + 1 if last == kind else 1
            self._runs[provider] = (kind, count)
        return kind, count

    def check(self, provider: str, limit: int) -> None:
        """Raise ``ProviderDown`` before a try is sent once ``limit`` tries in a row failed the same way: calls
        that waited for a slot while the failures came in (several are in flight at once, issue 43) are not
        sent to fail alike."""
        with self._lock:
            kind, count = self._runs.get(provider, ("", 0))
        if limit > 0 and count >= limit:
            raise ProviderDown(f"{provider}: {limit} tries in a row failed the same way ({kind}): stopped asking — "
                               f"check the provider's address and key, then run again "
                               f"([runner] stop_after_same_failures = {limit})")

    def reset(self) -> None:
        with self._lock:
            self._runs.clear()

    def count(self, provider: str) -> int:
        with self._lock:
            return self._runs.get(provider, ("", 0))[1]


#: the process's one count: every Runner of a process shares it (a judge pass makes one per question)
STREAK = FailStreak()
