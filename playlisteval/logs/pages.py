"""Every text page a server of ours sends passes ``redact_known`` (issue 44): the viewer, the annotation app.

The model runner already hides the known keys in each reply before it is stored (models/runner.py), but a
row stored before that, or a text that reached the store another way, would otherwise be shown as it is.
So the servers hide them again, on the whole body of every text response (HTML, JSON, plain text) rather
than in each template: a page, an error message and a JSON answer are all covered, and a template added
later needs no care. Media (video, frames) passes untouched and unbuffered.

Plain ASGI, the standard library only (the ``logs`` package's rule): no web framework is imported here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from playlisteval.logs.redaction import redact_known

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[MutableMapping[str, Any], Receive, Send], Awaitable[None]]

_TEXTUAL = (b"text/", b"application/json", b"application/javascript", b"application/xml")


def _is_text(headers: list[tuple[bytes, bytes]]) -> bool:
    kind = next((v for k, v in headers if k.lower() == b"content-type"), b"")
    return kind.lower().startswith(_TEXTUAL)


class RedactKeys:
    """ASGI middleware: the known API keys hidden in the body of every text response (see the module)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: MutableMapping[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start: Message | None = None
        chunks: list[bytes] = []

        async def send_redacted(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                if _is_text(list(message.get("headers", []))):
                    start = message  # held until the whole body is here: a key may span two chunks
                    return
                await send(message)
                return
            if start is None or message["type"] != "http.response.body":
                await send(message)
                return
            chunks.append(message.get("body", b""))
            if message.get("more_body", False):
                return
            body = b"".join(chunks)
            text = body.decode("utf-8", errors="surrogateescape")
            shown = redact_known(text)
            if shown is not text and shown != text:
                body = shown.encode("utf-8", errors="surrogateescape")
                start["headers"] = [(k, str(len(body)).encode() if k.lower() == b"content-length" else v)
                                    for k, v in start.get("headers", [])]
            await send(start)
            await send({"type": "http.response.body", "body": body, "more_body": False})

        await self.app(scope, receive, send_redacted)
