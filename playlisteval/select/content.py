"""A benchmark version's content as its export writes it (issue 41): the two JSON Lines files as text, its
statistics and its domains' descriptions. Shared by the export (select/export.py), which writes it, and
the seals (select/sealed.py), which keep it."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any


def jsonl_text(rows: list[dict[str, Any]], *, sort_keys: bool = False) -> str:
    """An export's JSON Lines file, as export writes it (annotations with their keys sorted)."""
    return "".join(json.dumps(row, ensure_ascii=False, sort_keys=sort_keys) + "\n" for row in rows)


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass
class Sealed:
    """One version's content: the two JSON Lines files as text, its statistics and domain descriptions."""

    rows_text: str
    annotations_text: str
    stats: dict[str, Any]
    domains: dict[str, str]

    @property
    def content_hash(self) -> str:
        return digest(self.rows_text)

    def rows(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.rows_text.splitlines()]
