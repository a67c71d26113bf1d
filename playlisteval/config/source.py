"""Where a setting came from, for error messages (issue 14): "[index] chunk_s = 0 (playlisteval.toml line
12): must be greater than 0", or the environment variable that set it, or "the default".

tomllib gives no line numbers, so a key's line is found by a plain scan of the file: table headers
(``[index]``, ``[prices."gemini/x"]``) and ``key = value`` lines, quoted keys and dotted keys included.
A value inside an inline table or a multi-line array is blamed on the line of its key.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, get_args, get_origin

from pydantic import BaseModel, ValidationError

Loc = tuple[str | int, ...]
ENV_PREFIX = "PLAYLISTEVAL_"
_BARE = re.compile(r"[A-Za-z0-9_-]+")


def _key_parts(text: str) -> tuple[list[str], str] | None:
    """The dotted key at the start of ``text`` and what follows it, or None when there is no key."""
    parts: list[str] = []
    rest = text.lstrip()
    while True:
        if rest[:1] in ('"', "'"):
            end = rest.find(rest[0], 1)
            if end < 0:
                return None
            parts.append(rest[1:end])
            rest = rest[end + 1:].lstrip()
        else:
            match = _BARE.match(rest)
            if not match:
                return None
            parts.append(match.group(0))
            rest = rest[match.end():].lstrip()
        if rest[:1] != ".":
            return parts, rest
        rest = rest[1:].lstrip()


def key_lines(text: str) -> dict[tuple[str, ...], int]:
    """Every key path of a TOML text → its 1-based line (table headers included)."""
    found: dict[tuple[str, ...], int] = {}
    table: list[str] = []
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("["):
            inner = stripped.lstrip("[")
            parsed = _key_parts(inner)
            if parsed and parsed[1].startswith("]"):
                table = parsed[0]
                found.setdefault(tuple(table), number)
            continue
        parsed = _key_parts(stripped)
        if parsed and parsed[1].startswith("=") and not stripped.startswith("#"):
            found.setdefault((*table, *parsed[0]), number)
    return found


def env_sources(environ: Mapping[str, str] | None = None) -> dict[tuple[str, ...], str]:
    """Key path → the environment variable that sets it (the same parsing as config.env_overrides)."""
    environ = os.environ if environ is None else environ
    out: dict[tuple[str, ...], str] = {}
    for name in environ:
        if not name.startswith(ENV_PREFIX) or "__" not in name:
            continue
        path = name[len(ENV_PREFIX):].split("__")
        section = path[0].lower()
        rest = path[1:] if section == "models" else [p.lower() for p in path[1:]]
        out[(section, *rest)] = name
    return out


def _fields_at(root: type[BaseModel], path: Loc) -> list[str]:
    """The field names of the model at ``path`` under ``root`` (empty when it is not a model)."""
    model: Any = root
    for part in path:
        if get_origin(model) is dict:  # [prices."gemini/x"]: the dict's key, then its value's model
            model = get_args(model)[1]
            continue
        field = getattr(model, "model_fields", {}).get(part)
        if field is None:
            return []
        model = field.annotation
    return sorted(getattr(model, "model_fields", {})) if isinstance(model, type) else []


def _name(loc: Loc) -> str:
    if not loc:
        return "settings"
    rest = ".".join(str(p) if isinstance(p, int) or _BARE.fullmatch(str(p)) else f'"{p}"' for p in loc[1:])
    return f"[{loc[0]}]" + (f" {rest}" if rest else "")


class _Sources:
    def __init__(self, path: Path, text: str, env: Mapping[tuple[str, ...], str],
                 environ: Mapping[str, str]) -> None:
        self.path, self.lines, self.env, self.environ = path, key_lines(text), env, environ

    def of(self, loc: Loc) -> str:
        keys = tuple(str(p) for p in loc)
        for n in range(len(keys), 0, -1):  # the key itself, else the nearest enclosing one
            if keys[:n] in self.env:
                name = self.env[keys[:n]]
                return f"environment variable {name}={self.environ.get(name, '')}"
        for n in range(len(keys), 0, -1):
            if keys[:n] in self.lines:
                return f"{self.path.name} line {self.lines[keys[:n]]}"
        return "the default"


def _message(error: Any, choices: Mapping[str, tuple[str, ...]]) -> str:
    kind, msg = error["type"], str(error["msg"])
    if kind == "string_pattern_mismatch":
        allowed = choices.get(str(error.get("ctx", {}).get("pattern", "")))
        if allowed:
            return "must be one of " + ", ".join(repr(c) for c in allowed)
    if kind == "string_too_short":
        return "must not be empty"
    if msg.startswith("Value error, "):
        return msg[len("Value error, "):]
    return re.sub(r"^(Input|String|Value) should", "must", msg)


def describe(exc: ValidationError, root: type[BaseModel], path: Path, text: str,
             environ: Mapping[str, str] | None = None, choices: Mapping[str, tuple[str, ...]] | None = None) -> str:
    """One line per error of ``exc``: which key, its value, where it came from, what is wrong."""
    environ = os.environ if environ is None else environ
    sources = _Sources(path, text, env_sources(environ), environ)
    lines = []
    for error in exc.errors():
        loc: Loc = tuple(error["loc"])
        if error["type"] == "extra_forbidden":
            known = _fields_at(root, loc[:-1])
            close = difflib.get_close_matches(str(loc[-1]), known, n=1)
            hint = f"; did you mean {close[0]}?" if close else (f"; known: {', '.join(known)}" if known else "")
            lines.append(f"{_name(loc)} ({sources.of(loc)}): unknown key{hint}")
            continue
        message = _message(error, choices or {})
        known = _fields_at(root, loc)
        named = sorted((k for k in known if re.search(rf"\b{re.escape(k)}\b", message)), key=message.find) \
            if error["type"] == "value_error" else []
        if named:  # a rule between keys (segment_min_s ≤ segment_max_s): say where each came from
            where = "; ".join(f"{k} from {sources.of((*loc, k))}" for k in named)
            lines.append(f"{_name(loc)}: {message} ({where})")
            continue
        value = error.get("input")
        shown = f" = {value!r}" if not isinstance(value, dict) else ""
        lines.append(f"{_name(loc)}{shown} ({sources.of(loc)}): {message}")
    return f"invalid settings of the project in {path.parent}:\n  " + "\n  ".join(lines)
