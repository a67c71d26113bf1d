"""Whether a video file is still the one the store knows: its (size, mtime) stamp first, its SHA-256 when the
stamp moved (issue 22: a file changed in place is re-indexed; one only touched is not)."""

from __future__ import annotations

import hashlib
from pathlib import Path


def sha256_file(path: Path, block: int = 1 << 20) -> str:
    """The file's SHA-256, read in blocks so that multi-GB videos never sit in memory."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(block):
            digest.update(chunk)
    return digest.hexdigest()


def file_stamp(path: str | Path) -> tuple[int, float] | None:
    """(size, mtime) of the file as the store stamps it; None when it cannot be read (missing…)."""
    try:
        st = Path(path).stat()
    except OSError:
        return None
    return int(st.st_size), float(st.st_mtime)


def content_moved(path: str | Path, sha256: str | None, size: int, mtime: float) -> str | None:
    """The file's new SHA-256 when its content differs from ``sha256``, else None. Cheap first: a size and
    mtime equal to the stamped ones (non-zero) mean unchanged without reading the file; otherwise the
    hash decides (a touched file with the same bytes is unchanged). A missing file is not "changed"
    (`playlisteval check` reports it)."""
    stamp = file_stamp(path)
    if stamp is None or not sha256:
        return None
    if size and stamp == (int(size), float(mtime)):
        return None
    try:
        digest = sha256_file(Path(path))
    except OSError:
        return None
    return digest if digest != sha256 else None
