"""What identifies a model request and how it reads (models/runner.py calls these for every request).

A request's hash is its cache and ledger key: the model spec, the role, every part (a media part by its
file's path, size and modification time), the response schema, the generation settings (with the role's
``[models]`` settings filled in first), the template's hash and the attempt. ``prompt_text`` is the request
as a reader sees it (`show ITEM`), ``extract_json`` the JSON object in a reply.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from playlisteval.config import Settings
from playlisteval.models.request import (
    ModelRequest,
    TextPart,
    ToolCallsPart,
    ToolResultPart,
    VideoPart,
    stable_dump,
)


def fingerprint(path: str) -> str:
    """A media file's identity for the cache: path, size and modification time."""
    try:
        st = Path(path).stat()
        return f"{path}:{st.st_size}:{st.st_mtime_ns}"
    except OSError:
        return f"{path}:missing"


def request_hash(spec: str, request: ModelRequest) -> str:
    parts: list[Any] = []
    for part in request.parts:
        data = part.model_dump()
        if "path" in data:
            data["fingerprint"] = fingerprint(data["path"])
        parts.append(data)
    body = {
        "spec": spec,
        "role": request.role,
        "parts": parts,
        "schema": request.response_schema,
        "settings": stable_dump(request.settings),  # a setting added later counts only once it is set
        "template_hash": request.template_hash,
        "attempt": request.attempt,
    }
    if request.tools:  # the agentic judge: what it may call is part of what it was asked
        body["tools"] = [t.model_dump() for t in request.tools]
        body["tool_choice"] = request.tool_choice
    return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()


def extract_json(text: str) -> Any:
    """The JSON object in a reply, tolerating a Markdown code fence around it."""
    fenced = re.search(r"```(?:json)?\s*(.*?)```", text, re.S)
    candidate = fenced.group(1) if fenced else text
    start, end = candidate.find("{"), candidate.rfind("}")
    if start < 0 or end < start:
        raise ValueError("no JSON object in the reply")
    return json.loads(candidate[start : end + 1])


def prompt_text(request: ModelRequest) -> str:
    """A request as a reader sees it: its text parts, and each media part named where it stands."""
    lines = []
    for part in request.parts:
        if isinstance(part, TextPart):
            lines.append(part.text)
        elif isinstance(part, VideoPart):
            lines.append(f"[video {Path(part.path).name} {part.start:.0f}-{part.end:.0f} s at {part.fps} fps]")
        elif isinstance(part, ToolCallsPart):
            calls = "; ".join(f"{c.name}({json.dumps(c.arguments, sort_keys=True)})" for c in part.calls)
            lines.append(f"[model turn] {part.text}\n[tool calls] {calls}".strip())
        elif isinstance(part, ToolResultPart):
            lines.append(f"[tool result {part.name}] {part.content}")
        else:
            lines.append(f"[{part.kind} {Path(part.path).name}]")
    return "\n".join(lines)


def with_role_generation(settings: Settings, request: ModelRequest) -> ModelRequest:
    """The request with its role's ``[models]`` generation settings (issue 20, Table 9) filled in where the
    request itself left them unset: a caller's explicit setting (an `eval judge --thinking` sweep) wins.
    They are part of the request, hence of its hash: a changed temperature is a new call, not a replay."""
    role = settings.generation.get(request.role)
    if role is None:
        return request
    given = request.settings.model_dump()
    filled = {k: v for k, v in role.model_dump().items() if v not in (None, "") and given.get(k) is None}
    if not filled:
        return request
    return request.model_copy(update={"settings": request.settings.model_copy(update=filled)})
