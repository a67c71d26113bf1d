"""Small pieces every HTTP provider needs: strict JSON schemas, Retry-After, usage when the server gave none."""

from __future__ import annotations

import copy
import email.utils
import re
import time
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from playlisteval.models import pricing
from playlisteval.models.request import ModelRequest, Usage

_RETRY_DELAY = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*s\s*$")


def strict_json_schema(schema: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON schema in the form strict structured outputs accept: every object closed
    (additionalProperties false) with all its properties required, no defaults, no titles."""
    root = copy.deepcopy(schema.model_json_schema())

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            node.pop("title", None)
            node.pop("default", None)
            if node.get("type") == "object" and isinstance(node.get("properties"), dict):
                node["additionalProperties"] = False
                node["required"] = list(node["properties"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(root)
    return root


def parse_retry_after(headers: Mapping[str, str] | None, now: float | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms``, ``retry-after`` (seconds or an HTTP date); None if absent."""
    if not headers:
        return None
    lowered = {k.lower(): v for k, v in headers.items()}
    raw_ms = lowered.get("retry-after-ms")
    if raw_ms:
        try:
            return max(0.0, float(raw_ms) / 1000.0)
        except ValueError:
            pass
    raw = lowered.get("retry-after")
    if not raw:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def parse_duration(value: Any) -> float | None:
    """Google's protobuf durations ("7s", "1.5s") as seconds."""
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        match = _RETRY_DELAY.match(value)
        if match:
            return float(match.group(1))
    return None


def fallback_usage(request: ModelRequest, text: str) -> Usage:
    """Usage when the server reported none: the runner's own estimate of the input and the reply's
    length for the output, so the ledger never records a paid call as free."""
    estimate = pricing.estimate_usage(request)
    return Usage(input_tokens=estimate.input_tokens, output_tokens=max(1, len(text) // 4))


def mmss(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    return f"{seconds // 60}:{seconds % 60:02d}"
