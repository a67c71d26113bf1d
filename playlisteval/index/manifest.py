"""Collection manifests: CSV or JSON rows of domain, playlist, title, path (+ optional url, position).

Relative paths are read against the manifest's own folder, so a manifest travels with its media.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from playlisteval.errors import ConfigError
from playlisteval.index.names import name_problem

REQUIRED = ("domain", "playlist", "path")


@dataclass(frozen=True)
class Entry:
    """One video to add: where it goes and where it is."""

    domain: str
    playlist: str
    path: Path | None  # None: a manifest row with only a url (nothing to read offline)
    title: str
    url: str | None = None
    position: int | None = None  # explicit playlist position from a manifest


def _rows(file: Path) -> list[dict[str, Any]]:
    text = file.read_text(encoding="utf-8-sig")
    if file.suffix.lower() == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{file}: not valid JSON: {exc}") from None
        if isinstance(data, dict):
            data = data.get("videos", data.get("entries"))
        if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
            raise ConfigError(f"{file}: a JSON manifest is a list of objects (or {{\"videos\": [...]}})")
        return data
    return list(csv.DictReader(text.splitlines()))


def _position(raw: Any, file: Path, line: int) -> int | None:
    if raw is None or str(raw).strip() == "":
        return None
    try:
        return int(str(raw).strip())
    except ValueError:
        raise ConfigError(f"{file}, entry {line}: position {raw!r} is not a whole number") from None


def read_manifest(file: str | Path) -> list[Entry]:
    """The entries of a manifest, in file order; ConfigError for a malformed file or row."""
    file = Path(file)
    if not file.is_file():
        raise ConfigError(f"manifest {file} does not exist")
    entries: list[Entry] = []
    for line, row in enumerate(_rows(file), start=1):
        row = {str(k).strip().lower(): v for k, v in row.items() if k is not None}
        missing = [c for c in ("domain", "playlist") if not str(row.get(c) or "").strip()]
        if missing:
            raise ConfigError(f"{file}, entry {line}: missing {', '.join(missing)}")
        for kind in ("domain", "playlist"):
            problem = name_problem(kind, str(row[kind]).strip())
            if problem:
                raise ConfigError(f"{file}, entry {line}: {problem}; nothing was added")
        raw_path = str(row.get("path") or "").strip()
        url = str(row.get("url") or "").strip() or None
        if not raw_path and not url:
            raise ConfigError(f"{file}, entry {line}: needs a path (or at least a url)")
        path = None
        if raw_path:
            path = Path(raw_path).expanduser()
            if not path.is_absolute():
                path = file.parent / path
        title = str(row.get("title") or "").strip() or (path.stem if path else url or "")
        entries.append(
            Entry(
                domain=str(row["domain"]).strip(),
                playlist=str(row["playlist"]).strip(),
                path=path,
                title=title,
                url=url,
                position=_position(row.get("position"), file, line),
            )
        )
    return entries
