"""What the analytics' kept outputs depend on besides the data: the package's source and the libraries'
versions (section_cache.py, board_cache.py, board_file.py). Imports neither DuckDB nor pyarrow."""

from __future__ import annotations

import functools
import hashlib
from importlib import metadata
from pathlib import Path

LIBRARIES = ("duckdb", "numpy", "jinja2", "pyarrow")


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """A hash of the playlisteval package's source (Python, SQL, templates) and the libraries' versions."""
    import playlisteval

    digest = hashlib.sha256()
    root = Path(playlisteval.__file__).parent
    for path in sorted(root.rglob("*")):
        if path.suffix in (".py", ".sql", ".j2") and "__pycache__" not in path.parts:
            digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    for name in LIBRARIES:
        try:
            digest.update(f"{name}={metadata.version(name)}".encode())
        except metadata.PackageNotFoundError:
            digest.update(f"{name}=none".encode())
    return digest.hexdigest()
