"""File names that are not valid UTF-8 (issue 44): skipped at `add`, shown escaped, with the reason.

On Linux a file name is bytes; Python hands undecodable bytes (``bad\\xff\\xfe.mp4``, a Latin-1
``caf\\xe9.mp4``) over as lone surrogates (surrogateescape). Such a string cannot be written to the
store — SQLite and PostgreSQL text is UTF-8 — and `add` died with a UnicodeEncodeError, adding nothing.

Skipped rather than stored losslessly, on purpose: a video's path is read back by every later step
(index workers on other machines, `check`, export, the viewer, ffmpeg/PyAV) and shown in reports and
JSON. Storing an escaped form would need every one of those readers to decode it again (and an escape
like ``\\xff`` collides with a real name holding a backslash); storing raw bytes would change the column
type on both stores. A skip names the file exactly (bytes escaped as ``\\xNN``) and says how to fix it,
and the rest of the folder is added.
"""

from __future__ import annotations

import os
from pathlib import Path


def undecodable(path: str | Path) -> bool:
    """True when ``path`` holds bytes that are not UTF-8 (lone surrogates from surrogateescape)."""
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def shown(path: str | Path) -> str:
    """``path`` printable and storable: each byte that is not UTF-8 written as ``\\xNN``."""
    try:
        raw = os.fsencode(str(path))
    except UnicodeEncodeError:  # a surrogate that did not come from surrogateescape
        return str(path).encode("utf-8", "backslashreplace").decode("ascii")
    return raw.decode("utf-8", "backslashreplace")


def reason(path: str | Path) -> str:
    """Why a file with such a name is skipped, and what to do about it."""
    what = "its name" if undecodable(Path(path).name) else "a folder in its path"
    return (f"{what} is not valid UTF-8 (bytes shown as \\xNN), which the store cannot keep; rename it to "
            "UTF-8 (e.g. `convmv -f latin1 -t utf8 --notest PATH`) and add it again")
