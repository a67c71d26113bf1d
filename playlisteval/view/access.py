"""The viewer's token (issue 22): the store holds unpublished benchmark items and model output, so even on
127.0.0.1 another local user or a page in the browser must not read it.

``playlisteval view`` prints one link, ``/join/TOKEN`` (the annotation app's form; a ``token=`` query would be
masked by the CLI's redaction of secrets, playlisteval/logs/redaction.py); any page also takes ``?token=…``.
Either sets an HttpOnly, SameSite=Strict cookie and redirects to the page without the token (it leaves
the address bar and the history). Every
other request — pages, frames, videos, static files — needs that cookie (or the token in the query);
without it the answer is 403. Tokens are compared in constant time.
"""

from __future__ import annotations

import hmac
import secrets
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

COOKIE = "playlisteval_view"
JOIN = "/join/"  # the printed link: /join/TOKEN
REFUSED = ("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Refused · playlisteval view"
           "</title></head><body><h1>Refused</h1><p>This viewer needs its token: open the URL that "
           "<code>playlisteval view</code> printed (it ends in <code>?token=…</code>).</p></body></html>")


def new_token() -> str:
    return secrets.token_urlsafe(24)


def matches(given: str | None, token: str) -> bool:
    return bool(given) and hmac.compare_digest(str(given).encode(), token.encode())


def without_token(request: Request) -> str:
    """The same path and query, the token taken out (where the token link redirects to)."""
    query = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
    return request.url.path + (f"?{urlencode(query)}" if query else "")


class TokenGate:
    """ASGI middleware: a request passes with the token's cookie; ``?token=`` sets the cookie (redirect)."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        joining = request.url.path.startswith(JOIN)
        given = request.url.path[len(JOIN):] if joining else request.query_params.get("token")
        response: Response | None = None
        if given is not None:
            if matches(given, self.token):
                response = RedirectResponse("/" if joining else without_token(request), status_code=303)
                response.set_cookie(COOKIE, self.token, httponly=True, samesite="strict", path="/",
                                    secure=request.url.scheme == "https")
            else:
                response = HTMLResponse(REFUSED, status_code=403)
        elif not matches(request.cookies.get(COOKIE), self.token):
            response = HTMLResponse(REFUSED, status_code=403)
        if response is not None:
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)
