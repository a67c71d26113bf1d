"""Collection manifests: CSV or JSON rows of domain, playlist, title, path (+ optional url, position).

Relative paths are read against the manifest's own folder, so a manifest travels with its media.

Every row is checked before anything is stored, and every bad row is named at once (issue 44: a
1,000-row manifest with 30 % bad rows was refused at its first, to be fixed one run at a time): a
missing column, a bad name, a control character in any field (a title with a newline or an escape
sequence reaches reports, terminals and the dataset card), a title longer than MAX_TITLE characters,
a position that is not a number, a row with more fields than the header (an unquoted comma). A row
that repeats an earlier one for the same file in the same playlist is merged into it, and said; one
that names the same file with another title, url or position is refused, since either choice would be
a silent guess.
"""

from __future__ import annotations

import csv
import io
import json
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from playlisteval.errors import ConfigError
from playlisteval.index.names import name_problem

REQUIRED = ("domain", "playlist", "path")
MAX_TITLE = 1_000  # characters; longer is a pasted description or a broken export, not a title
MAX_FIELD = 4_096  # any other field (a path or url longer than this is not one)


@dataclass(frozen=True)
class Entry:
    """One video to add: where it goes and where it is."""

    domain: str
    playlist: str
    path: Path | None  # None: a manifest row with only a url (nothing to read offline)
    title: str
    url: str | None = None
    position: int | None = None  # explicit playlist position from a manifest
    row: int = 0  # the manifest entry it came from (1 = the first row after the header); 0 for a folder


@dataclass
class Manifest:
    """A manifest read whole: its good entries, a problem per bad row, and the rows merged as repeats."""

    file: Path
    entries: list[Entry]
    problems: list[tuple[int, str]]  # (entry N, why)
    merged: list[str]  # "entry N repeats entry M (…)"
    rows: int = 0

    def error(self) -> ConfigError:
        """Every problem in one message, so that one edit fixes them all."""
        lines = "\n".join(f"  entry {n}: {why}" for n, why in sorted(self.problems))
        return ConfigError(f"{self.file}: {len(self.problems)} of {self.rows} entries refused (entry N is the Nth row "
                           f"after the header); nothing was added:\n{lines}")


def _text(file: Path) -> str:
    try:
        return file.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:  # a spreadsheet's Latin-1/cp1252 export: say where, not a traceback
        line = file.read_bytes()[:exc.start].count(b"\n") + 1
        raise ConfigError(f"{file}: not UTF-8 (line {line}, byte {exc.start}); save it as UTF-8 and add "
                          "again; nothing was added") from None


def _rows(file: Path) -> list[tuple[dict[str, Any], str | None]]:
    """The rows (keys lowered and stripped), each with a problem of its shape (surplus CSV fields)."""
    text = _text(file)
    if file.suffix.lower() == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{file}: not valid JSON: {exc}") from None
        if isinstance(data, dict):
            data = data.get("videos", data.get("entries"))
        if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
            raise ConfigError(f"{file}: a JSON manifest is a list of objects (or {{\"videos\": [...]}})")
        return [({str(k).strip().lower(): v for k, v in r.items()}, None) for r in data]
    # newline="": a quoted field keeps its line break, so that a two-line title is seen (and refused)
    reader = csv.DictReader(io.StringIO(text, newline=""))
    header = [str(h).strip().lower() for h in reader.fieldnames or []]
    if reader.fieldnames and not {"domain", "playlist"} <= set(header):
        absent = [c for c in ("domain", "playlist") if c not in header]
        raise ConfigError(f"{file}: the header ({', '.join(header)}) has no {' or '.join(absent)} column; "
                          "nothing was added")
    rows: list[tuple[dict[str, Any], str | None]] = []
    for row in reader:
        extra = row.pop(None, None)  # DictReader's key for surplus fields
        shape = (f"has {len(header) + len(extra)} fields, the header names {len(header)} (a comma in a "
                 "field needs the field in double quotes)") if extra else None
        rows.append(({str(k).strip().lower(): v for k, v in row.items()}, shape))
    return rows


def _field_problems(row: dict[str, Any]) -> list[str]:
    """Control characters and absurd lengths, in every field of the row."""
    problems = []
    for key, value in row.items():
        text = "" if value is None else str(value)
        controls = sorted({c for c in text if unicodedata.category(c) == "Cc"})
        if controls:
            shown = ", ".join(f"U+{ord(c):04X}" for c in controls[:3])
            problems.append(f"{key} contains a control character ({shown}); write it on one line, without them")
        limit = MAX_TITLE if key == "title" else MAX_FIELD
        if len(text) > limit:
            problems.append(f"{key} is {len(text):,} characters long (at most {limit:,})")
    return problems


def _position(raw: Any) -> tuple[int | None, str | None]:
    if raw is None or str(raw).strip() == "":
        return None, None
    try:
        return int(str(raw).strip()), None
    except ValueError:
        return None, f"position {str(raw)[:40]!r} is not a whole number"


def _entry(file: Path, row: dict[str, Any], shape: str | None, number: int) -> tuple[Entry | None, list[str]]:
    """The row's entry, or the reasons it is refused (every one of them)."""
    problems = ([shape] if shape else []) + _field_problems(row)
    missing = [c for c in ("domain", "playlist") if not str(row.get(c) or "").strip()]
    if missing:
        problems.append(f"missing {', '.join(missing)}")
    for kind in ("domain", "playlist"):
        name = str(row.get(kind) or "").strip()
        problem = name_problem(kind, name) if name else None
        if problem and "control character" not in problem:  # said once, by _field_problems
            problems.append(problem)
    raw_path = str(row.get("path") or "").strip()
    url = str(row.get("url") or "").strip() or None
    if not raw_path and not url:
        problems.append("needs a path (or at least a url)")
    position, bad = _position(row.get("position"))
    if bad:
        problems.append(bad)
    if problems:
        return None, problems
    path = None
    if raw_path:
        path = Path(raw_path).expanduser()
        if not path.is_absolute():
            path = file.parent / path
    title = str(row.get("title") or "").strip() or (path.stem if path else url or "")
    return Entry(str(row["domain"]).strip(), str(row["playlist"]).strip(), path, title, url, position,
                 number), []


def scan_manifest(file: str | Path) -> Manifest:
    """Every row of a manifest checked: good entries in file order, problems and merges named by entry."""
    file = Path(file)
    if not file.is_file():
        raise ConfigError(f"manifest {file} does not exist")
    rows = _rows(file)
    found = Manifest(file, [], [], [], len(rows))
    first: dict[tuple[str, str, str], Entry] = {}  # (domain, playlist, file or url) → its first entry
    for number, (row, shape) in enumerate(rows, start=1):
        entry, why = _entry(file, row, shape, number)
        if entry is None:
            found.problems.append((number, "; ".join(why)))
            continue
        where = str(entry.path.resolve()) if entry.path is not None else str(entry.url)
        key = (entry.domain, entry.playlist, where)
        earlier = first.get(key)
        if earlier is None:
            first[key] = entry
            found.entries.append(entry)
            continue
        what = f"{entry.domain}/{entry.playlist}: {entry.path or entry.url}"
        differs = [k for k in ("title", "url", "position") if getattr(entry, k) != getattr(earlier, k)]
        if differs:
            found.problems.append((number, f"lists the same file as entry {earlier.row} ({what}) with another "
                                           f"{' and '.join(differs)}; keep one of the two rows"))
        else:
            found.merged.append(f"entry {number} repeats entry {earlier.row} ({what}); merged into it")
    return found


def read_manifest(file: str | Path, *, require_files: bool = False) -> Manifest:
    """The manifest's entries, or one ConfigError naming every bad row. With ``require_files`` a row
    whose path does not exist is a bad row too (the command's check: nothing is added then)."""
    manifest = scan_manifest(file)
    if require_files:
        for entry in manifest.entries:
            if entry.path is not None and not entry.path.exists():
                manifest.problems.append((entry.row, f"no such file {entry.path}"))
    if manifest.problems:
        raise manifest.error()
    return manifest
