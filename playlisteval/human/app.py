"""`human serve`: the annotation app (issue 12 item 3), a small Starlette app.

- An annotator opens their invitation link ``/join/TOKEN``; the app sets an HttpOnly, SameSite=Strict
  cookie with the token and sends them to ``/task``. Every other page, clip and submission needs that
  cookie, and a submission also the CSRF token of the page (an HMAC of the annotator's token).
- ``/task`` shows the task the annotator holds (or claims the next one): the question, the evidence
  clips in <video> players, both answers side by side with their word differences marked and a
  "next difference" control, a forced A/B choice and the reason (at least N words, counted in the
  browser and checked again here). A rating is committed before the answer is sent, and it is final.
- Every text from a model or a person is escaped by the templates (Jinja2 autoescape); a strict
  Content-Security-Policy allows only this server's own scripts, styles and media. Nothing is loaded
  from elsewhere and nothing is built: templates and static files ship in the package.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import MutableHeaders
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from playlisteval.config import Settings
from playlisteval.human import annotators, assign
from playlisteval.human.crowd import clip_label
from playlisteval.human.errors import RatingRefused
from playlisteval.human.tasks import find_study, study_setting, task_view
from playlisteval.human.throttle import Throttle
from playlisteval.human.words import MAX_REASON
from playlisteval.logs import get_logger
from playlisteval.logs.pages import RedactKeys
from playlisteval.store import open_store
from playlisteval.store.tables import HumanAnnotator

log = get_logger(__name__)
COOKIE = "playlisteval_human"
#: a rating form's body: the reason's MAX_REASON characters, percent-encoded (up to 12 bytes each), and the rest
MAX_FORM_BYTES = 12 * MAX_REASON + 4096
JOIN_TRIES = 10  # bad invitation links one address may try a minute before /join answers 429
STATIC = Path(__file__).with_name("static")
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; media-src 'self'; "
                               "img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}


class SecurityHeaders:
    """ASGI middleware: the security headers on every response (pages, clips, static files, errors)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for key, value in SECURITY_HEADERS.items():
                    headers.setdefault(key, value)
            await send(message)

        await self.app(scope, receive, send_with_headers)


def _templates() -> Jinja2Templates:
    env = Environment(loader=PackageLoader("playlisteval.human", "templates"), autoescape=select_autoescape(["html"]),
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["mmss"] = lambda s: f"{int(s) // 60}:{int(s) % 60:02d}"
    return Jinja2Templates(env=env)


async def bounded_form(request: Request) -> dict[str, str] | None:
    """The rating form's fields (URL-encoded), or None when the body passes ``MAX_FORM_BYTES``."""
    if int(request.headers.get("content-length") or 0) > MAX_FORM_BYTES:
        return None
    body = bytearray()
    async for part in request.stream():
        body += part
        if len(body) > MAX_FORM_BYTES:
            return None
    fields = parse_qs(body.decode("utf-8", errors="replace"), keep_blank_values=True)
    return {key: values[0] for key, values in fields.items()}


def make_app(settings: Settings, study_name: str | None = None) -> Starlette:
    engine = open_store(settings)
    study = find_study(engine, study_name or settings.human.study)
    study_id = int(study.id or 0)
    ttl = settings.human.claim_ttl_s
    min_words = int(study_setting(study, "min_reason_words", 20))
    templates = _templates()
    throttle = Throttle(JOIN_TRIES, 60.0)  # bad invitation tokens per client address a minute

    def page(request: Request, name: str, status: int = 200, **context: Any) -> Response:
        return templates.TemplateResponse(request, name, {"study": study.name, **context}, status_code=status)

    def message(request: Request, title: str, text: str, status: int) -> Response:
        return page(request, "message.html", status, title=title, text=text, who=None)

    async def annotator_of(request: Request) -> tuple[HumanAnnotator | None, str]:
        token = request.cookies.get(COOKIE, "")
        who = await run_in_threadpool(annotators.by_token, engine, study_id, token)
        return who, token

    Handler = Callable[[Request, HumanAnnotator, str], Awaitable[Response]]

    def signed_in(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            who, token = await annotator_of(request)
            if who is None:
                return message(request, "Invitation needed", "Open the invitation link you were given to start "
                               "(or again, if it stopped working).", 401)
            return await handler(request, who, token)
        return endpoint

    async def home(request: Request) -> Response:
        who, _ = await annotator_of(request)
        if who is not None:
            return RedirectResponse("/task", status_code=303)
        return message(request, "Invitation needed", "Open the invitation link you were given to start.", 401)

    async def join(request: Request) -> Response:
        client = request.client.host if request.client else ""
        wait = throttle.retry_after(client)
        if wait > 0:  # bad tokens tried too often from this address (issue 25)
            response = message(request, "Too many tries", "Too many invalid invitation links from this address: "
                               f"try again in {wait:.0f} s.", 429)
            response.headers["Retry-After"] = str(max(1, round(wait)))
            return response
        token = request.path_params["token"]
        who = await run_in_threadpool(annotators.by_token, engine, study_id, token)
        if who is None:
            throttle.failed(client)
            log.info("human.join_refused", client=client)
            return message(request, "Unknown invitation", "This invitation link is not valid for this study.", 403)
        response = RedirectResponse("/task", status_code=303)
        response.set_cookie(COOKIE, token, httponly=True, samesite="strict", path="/",
                            secure=request.url.scheme == "https")
        log.info("human.join", annotator=who.name)
        return response

    async def show_task(request: Request, who: HumanAnnotator, token: str, *, error: str = "", reason: str = "",
                        choice: str = "", status: int = 200) -> Response:
        task_id = await run_in_threadpool(assign.next_task, engine, study, who, ttl)
        done = await run_in_threadpool(assign.progress, engine, study, who, ttl)
        if task_id is None:
            return page(request, "done.html", who=who.name, progress=done)
        view = await run_in_threadpool(task_view, engine, study_id, task_id)
        assert view is not None
        diff = view.diff()
        clips = [{"n": i, "label": clip_label(c), "hop": c["hop"], "poster": bool(c.get("poster"))}
                 for i, c in enumerate(view.clips)]
        return page(request, "task.html", status, who=who.name, progress=done, task=view, diff=diff, clips=clips,
                    csrf=annotators.csrf_for(token), min_words=min_words, error=error, reason=reason,
                    choice=choice)

    async def task(request: Request, who: HumanAnnotator, token: str) -> Response:
        return await show_task(request, who, token)

    async def rate(request: Request, who: HumanAnnotator, token: str) -> Response:
        # a reason is at most MAX_REASON characters: a body far past what that can be is refused, unread past
        # the bound (a declared length, or a chunked body as it streams in)
        form = await bounded_form(request)
        if form is None:
            return message(request, "Too long", f"The form is too large: a reason may have at most "
                           f"{MAX_REASON:,} characters. Go back, shorten it and submit again.", 413)
        if not annotators.csrf_ok(token, str(form.get("csrf", ""))):
            return message(request, "Refused", "The form's security token is missing or wrong: reload the page "
                           "and submit again.", 403)
        choice, reason = str(form.get("choice", "")), str(form.get("reason", ""))
        try:
            await run_in_threadpool(assign.submit, engine, study, who, int(request.path_params["task_id"]),
                                    choice, reason)
        except RatingRefused as exc:
            if exc.status == 422:
                return await show_task(request, who, token, error=str(exc), reason=reason, choice=choice,
                                       status=422)
            return message(request, "Refused", str(exc), exc.status)
        log.info("human.rating", annotator=who.name, task=request.path_params["task_id"])
        return RedirectResponse("/task", status_code=303)

    async def clip(request: Request, who: HumanAnnotator, token: str) -> Response:
        task_id, n = int(request.path_params["task_id"]), int(request.path_params["n"])
        allowed = await run_in_threadpool(assign.holds, engine, who, task_id)
        view = await run_in_threadpool(task_view, engine, study_id, task_id) if allowed else None
        if view is None or not 0 <= n < len(view.clips):
            return Response("not found", status_code=404, media_type="text/plain")
        path = settings.media_dir / view.clips[n]["file"]
        return FileResponse(path, media_type="video/mp4")

    async def poster(request: Request, who: HumanAnnotator, token: str) -> Response:
        """A clip's poster: a frame `index` kept (playlisteval/media/kept.py), under the clip's access rule."""
        task_id, n = int(request.path_params["task_id"]), int(request.path_params["n"])
        allowed = await run_in_threadpool(assign.holds, engine, who, task_id)
        view = await run_in_threadpool(task_view, engine, study_id, task_id) if allowed else None
        if view is None or not 0 <= n < len(view.clips) or not view.clips[n].get("poster"):
            return Response("not found", status_code=404, media_type="text/plain")
        return FileResponse(settings.media_dir / view.clips[n]["poster"], media_type="image/jpeg")

    async def my_progress(request: Request, who: HumanAnnotator, token: str) -> Response:
        done = await run_in_threadpool(assign.progress, engine, study, who, ttl)
        return JSONResponse({"annotator": who.name, "done": done.done, "total": done.total})

    app = Starlette(routes=[
        Route("/", home),
        Route("/join/{token}", join),
        Route("/task", signed_in(task)),
        Route("/task/{task_id:int}", signed_in(rate), methods=["POST"]),
        Route("/clip/{task_id:int}/{n:int}", signed_in(clip)),
        Route("/poster/{task_id:int}/{n:int}", signed_in(poster)),
        Route("/progress", signed_in(my_progress)),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ], middleware=[Middleware(RedactKeys), Middleware(SecurityHeaders)])  # no key on any page (issue 44)

    return app


def serve(settings: Settings, study_name: str | None, host: str, port: int) -> None:
    import uvicorn

    app = make_app(settings, study_name)
    # no access log: invitation links carry the annotator's token in their path
    uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False)
