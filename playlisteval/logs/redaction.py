"""One redaction for every text that leaves the process: API keys never at rest or on screen (issue 25).

Some providers and proxies quote the key they were sent in an error body ("Incorrect API key provided:
sk-…"); that text becomes an exception, then a ledger row, an item's error, a log line and a terminal
message. Rather than trusting every writer to remember, the three exits pass through ``redact``: the store
(a cursor hook on statements that write error texts, store/engine.py), the logs (a structlog processor and
the stdlib handler, logs.py) and the terminal (the CLI's stdout and stderr, ``RedactingStream``).

What is hidden: the current values of the key variables the providers read (registered here so this
bottom layer needs no import of the providers; tests/test_redaction.py checks that every provider's
``key_env`` is listed) and of any variable named like a secret (``*_API_KEY``, ``*_TOKEN``, ``*_SECRET``);
bearer tokens; ``key=`` / ``api_key=`` / ``access_token=`` query parameters; anything shaped like a
provider key (``sk-…``, ``AIza…``, ``hf_…``). The replacement says what was there, never a part of it.

Model text (issue 44: a gateway's notice quoting the key inside a normal 200 reply) is another exit: the
model runner hides the known keys (``redact_known``: the values and the key shapes, not the header
patterns, which would blank ordinary prose) in every reply before it is parsed, cached or returned, and
the viewer, the annotation app and the report hide them again in whatever they render.
"""

from __future__ import annotations

import io
import os
import re
from typing import Any

MASK = "[redacted]"

#: the key variables of the providers (models/providers/*: ``key_env``), plus Hugging Face's token
KEY_ENV: tuple[str, ...] = ("GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENAI_API_KEY", "DASHSCOPE_API_KEY",
                            "VLLM_API_KEY", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")
_SECRET_NAME = re.compile(r"(?:_API_KEY|_APIKEY|_TOKEN|_SECRET|_SECRET_KEY|_PASSWORD)$")
_MIN_SECRET = 6  # shorter values ("1", "yes") would blank ordinary words: a key is never that short

_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(?i)\b(bearer|basic)(\s+)[A-Za-z0-9._~+/=-]{4,}"), rf"\1\2{MASK}"),
    (re.compile(r"(?i)((?:[?&;]|\b)(?:api[_-]?key|key|access[_-]?token|token|secret|password)=)[^&\s\"'<>,;)]+"),
     rf"\1{MASK}"),
    (re.compile(r"(?i)((?:x-goog-api-key|x-api-key|api-key|authorization)[\"']?\s*[:=]\s*[\"']?)"
                r"(?!bearer\b|basic\b)[A-Za-z0-9._~+/=-]{6,}"), rf"\1{MASK}"),
    (re.compile(r"\bsk-[A-Za-z0-9_-]{6,}"), MASK),  # OpenAI, DashScope, Anthropic-style keys
    (re.compile(r"\bAIza[0-9A-Za-z_-]{20,}"), MASK),  # Google API keys
    (re.compile(r"\bhf_[A-Za-z0-9]{16,}"), MASK),  # Hugging Face tokens
)
#: cheap substrings, one of which every pattern above needs (lower case): most texts skip the regexes
_MARKERS = ("bearer", "basic", "key", "token", "secret", "password", "authorization", "sk-", "aiza", "hf_")


def secret_values(environ: dict[str, str] | None = None) -> list[str]:
    """The values to hide now, longest first (one key containing another is hidden whole)."""
    if environ is None:
        return _current_secrets()
    values = {value for name, value in environ.items()
              if (name in KEY_ENV or _SECRET_NAME.search(name)) and len(value.strip()) >= _MIN_SECRET}
    return sorted((v.strip() for v in values), key=len, reverse=True)


#: (the process environment's raw items, the secrets read from them): one object, so a thread never pairs
#: one environment with another's secrets
_seen: tuple[tuple[tuple[Any, Any], ...], list[str]] | None = None


def _current_secrets() -> list[str]:
    """``secret_values`` of ``os.environ``, read again only when the environment changed: every statement that
    writes an error text and every log line asks (decoding the whole environment each time was ~4 % of a
    build step's CPU, issue 26). The snapshot is the environment's raw items, compared by value."""
    global _seen
    raw = getattr(os.environ, "_data", None)
    if not isinstance(raw, dict):  # not CPython's os.environ: no cheap snapshot, read it every time
        return secret_values(dict(os.environ))
    snapshot, seen = tuple(raw.items()), _seen
    if seen is None or seen[0] != snapshot:
        seen = _seen = (snapshot, secret_values(dict(os.environ)))
    return list(seen[1])


def redact(text: str, environ: dict[str, str] | None = None, *, values: list[str] | None = None) -> str:
    """``text`` with every secret replaced by ``[redacted]``; the same object when it held none.
    ``values``: the secret values when the caller has them already (``secret_values``: one look at the
    environment for many texts)."""
    if not text:
        return text
    for value in secret_values(environ) if values is None else values:
        if value in text:
            text = text.replace(value, MASK)
    low = text.lower()
    if not any(marker in low for marker in _MARKERS):
        return text
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


#: the key shapes alone (``sk-…``, ``AIza…``, ``hf_…``): prose never has them, unlike "basic idea" or "key=3",
#: which the header and query patterns above would blank in a model's answer
_KEY_SHAPES = _PATTERNS[3:]
_SHAPE_MARKERS = ("sk-", "aiza", "hf_")


def redact_known(text: str, values: list[str] | None = None) -> str:
    """``text`` (a model's reply, a page) with the known keys hidden: the key variables' values and the
    provider key shapes, nothing else, so an answer that says "the basic token" stays as it was (issue 44).
    The same object when it held none."""
    if not text:
        return text
    for value in secret_values() if values is None else values:
        if value in text:
            text = text.replace(value, MASK)
    low = text.lower()
    if any(marker in low for marker in _SHAPE_MARKERS):
        for pattern, replacement in _KEY_SHAPES:
            text = pattern.sub(replacement, text)
    return text


def redact_any(value: Any, values: list[str] | None = None, *, known_only: bool = False) -> Any:
    """A value as stored or logged, with its strings redacted: bytes and numbers left alone, dicts, lists
    and tuples walked (a statement's parameters, a log event's fields). ``known_only``: ``redact_known``
    for each string (model text), not ``redact`` (error texts and log lines)."""
    if values is None:
        values = secret_values()
    if isinstance(value, str):
        return redact_known(value, values) if known_only else redact(value, values=values)
    if isinstance(value, dict):
        return {k: redact_any(v, values, known_only=known_only) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_any(v, values, known_only=known_only) for v in value]
    if isinstance(value, tuple):
        return tuple(redact_any(v, values, known_only=known_only) for v in value)
    return value


class RedactingStream(io.TextIOBase):
    """A text stream that redacts what it is given before passing it on: the CLI's stdout and stderr.

    Everything else (``isatty``, ``encoding``, ``fileno``, ``buffer``) is the wrapped stream's, so rich and
    click see the terminal they would have seen. A key split across two writes is not caught; print, click
    and rich each write a message whole."""

    def __init__(self, inner: Any) -> None:
        super().__init__()
        self.inner = inner

    def write(self, s: str) -> int:
        self.inner.write(redact(s) if isinstance(s, str) else s)
        return len(s)

    def flush(self) -> None:
        self.inner.flush()

    def isatty(self) -> bool:
        return bool(self.inner.isatty())

    def fileno(self) -> int:
        return int(self.inner.fileno())

    def writable(self) -> bool:
        return True

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return str(getattr(self.inner, "encoding", "utf-8") or "utf-8")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def wrap_std_streams() -> None:
    """sys.stdout and sys.stderr through ``RedactingStream`` (once: a stream already wrapped is kept)."""
    import sys

    if not isinstance(sys.stdout, RedactingStream):
        sys.stdout = RedactingStream(sys.stdout)
    if not isinstance(sys.stderr, RedactingStream):
        sys.stderr = RedactingStream(sys.stderr)
