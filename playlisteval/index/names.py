"""Names a collection is organised by (domains, playlists): refused when they cannot be a name (issue 22).

A domain named ``Edu/cation`` was accepted, then could not be removed: `remove --domain` and the export's
per-domain folders read a path separator as a folder. Such a name is refused where it enters (`add`, a
manifest row), with a message naming it, before anything is stored.
"""

from __future__ import annotations

_SEPARATORS = ("/", "\\")


def name_problem(kind: str, name: str) -> str | None:
    """Why ``name`` cannot be a ``kind`` ("domain", "playlist") name, else None."""
    if not name.strip():
        return f"{kind} name is empty"
    if any(sep in name for sep in _SEPARATORS):
        return f"{kind} name {name!r} contains a path separator (/ or \\); use another character (-, _, space)"
    if name.strip() in (".", ".."):
        return f"{kind} name {name!r} is not a name"
    if any(ord(c) < 32 for c in name):
        return f"{kind} name {name!r} contains a control character"
    return None
