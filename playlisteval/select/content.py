"""A benchmark version's content as its export writes it (issue 41): the two JSON Lines files, its statistics
and its domains' descriptions. Shared by the export (select/export.py), which writes it, and the seals
(select/sealed.py), which keep it.

The files are held as zlib, the form a seal stores: recording a version at 100k pairs (issue 43) streams
data/test.jsonl's lines through the hash and the compressor in blocks (``from_lines``), so the whole file is
never one string — about 1.4 kB a row, a gigabyte at a million pairs — and the text is decompressed only when
an export writes it."""

from __future__ import annotations

import hashlib
import json
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Any

LEVEL = 1  # zlib: ~4x smaller JSON at a few hundred MB/s; recording a 100k-pair version must stay cheap
BLOCK = 4096  # lines joined, hashed and compressed at a time


def jsonl_text(rows: list[dict[str, Any]], *, sort_keys: bool = False) -> str:
    """An export's JSON Lines file, as export writes it (annotations with their keys sorted)."""
    return "".join(json.dumps(row, ensure_ascii=False, sort_keys=sort_keys) + "\n" for row in rows)


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def digest_lines(lines: Iterable[str]) -> str:
    """``digest`` of the lines joined, without joining them."""
    hasher = hashlib.sha256()
    for data in _blocks(lines):
        hasher.update(data)
    return hasher.hexdigest()


def _blocks(lines: Iterable[str]) -> Iterator[bytes]:
    """The lines' UTF-8 bytes, ``BLOCK`` lines at a time."""
    block: list[str] = []
    for line in lines:
        block.append(line)
        if len(block) == BLOCK:
            yield "".join(block).encode("utf-8")
            block.clear()
    yield "".join(block).encode("utf-8")


def compress(text: str) -> bytes:
    return zlib.compress(text.encode("utf-8"), LEVEL)


@dataclass
class Sealed:
    """One version's content: the two JSON Lines files (zlib), its statistics and domain descriptions, and the
    content hash (the sha256 of data/test.jsonl's bytes)."""

    rows_z: bytes
    annotations_z: bytes
    stats: dict[str, Any]
    domains: dict[str, str]
    content_hash: str

    @classmethod
    def from_text(cls, rows_text: str, annotations_text: str, stats: dict[str, Any],
                  domains: dict[str, str]) -> Sealed:
        return cls(compress(rows_text), compress(annotations_text), stats, domains, digest(rows_text))

    @classmethod
    def from_lines(cls, lines: Iterable[str], annotations_text: str, stats: dict[str, Any],
                   domains: dict[str, str]) -> Sealed:
        """data/test.jsonl given line by line: hashed and compressed a block at a time, one pass."""
        hasher, packer, parts = hashlib.sha256(), zlib.compressobj(LEVEL), []
        for data in _blocks(lines):
            hasher.update(data)
            parts.append(packer.compress(data))
        parts.append(packer.flush())
        return cls(b"".join(parts), compress(annotations_text), stats, domains, hasher.hexdigest())

    @cached_property
    def rows_text(self) -> str:
        """data/test.jsonl, the bytes its content hash was taken of."""
        return zlib.decompress(self.rows_z).decode("utf-8")

    @cached_property
    def annotations_text(self) -> str:
        return zlib.decompress(self.annotations_z).decode("utf-8")

    def rows(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.rows_text.splitlines()]
