"""The last line a command prints when it is stopped from outside: Ctrl-C, or a Redis broker or store that
cannot be reached. Each says what is true and what to run next, in one line (issue 22): a hint that names
the wrong command (`resume` after an interrupted `index`) costs the user a second failure, and a 94-line
traceback for a Redis that is not running hides the one line that matters.
"""

from __future__ import annotations

from playlisteval.errors import as_infrastructure

#: the commands whose unfinished work `resume` continues (the build's items)
_RESUMED_BY_RESUME = frozenset({"build", "resume", "retry-failed"})


def interrupted_hint(command: str | None) -> str:
    """What to run after Ctrl-C stopped ``command`` (exit code 130)."""
    kept = "interrupted: everything committed so far is kept in the store; "
    if command in _RESUMED_BY_RESUME:
        return kept + "run `playlisteval resume` to go on"
    if command == "index":
        return kept + "run `playlisteval index` again: what was indexed is kept, the rest is indexed then"
    if command:
        return kept + f"run `playlisteval {command} …` again to go on"
    return kept + "run the same command again to go on"


def unreachable(exc: BaseException) -> str | None:
    """One line for a Redis broker or a store that cannot be reached (or failed under the command), else
    None. Only a connection that failed is worded as "cannot reach"; other store or Redis failures
    keep their first line."""
    infra = as_infrastructure(exc)
    if infra is None:
        return None
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import TimeoutError as RedisTimeout

    if isinstance(exc, (RedisConnectionError, RedisTimeout)):
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return (f"cannot reach the Redis broker ({first}); start Redis, or set [broker] url = \"\" to run "
                "in the foreground without it")
    first = str(infra).splitlines()[0]
    return f"{first} — is the server running and reachable? ([store] url, PLAYLISTEVAL_STORE__URL)"
