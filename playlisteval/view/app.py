"""The viewer's Starlette app (issue 22): every page is a read of the store, rendered by autoescaped
Jinja templates that ship in the package (no build step, nothing loaded from elsewhere).

Security is the annotation app's (playlisteval/human/app.py): its SecurityHeaders middleware puts the
same strict Content-Security-Policy (this server's own scripts, styles, images and media only; no inline
script or style, no frames) on every response, and access.TokenGate refuses any request without the
viewer's token with 403. Model output is untrusted text: the templates escape it; nothing is marked safe;
and logs/pages.RedactKeys hides the known API keys in every text response (issue 44).

What the CLI's layer owns (the funnel's counting, the gates' glossary) comes in as ``Sources``, so this
package never imports the commands above it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from playlisteval.config import Settings
from playlisteval.human.app import SecurityHeaders
from playlisteval.logs import get_logger
from playlisteval.logs.pages import RedactKeys
from playlisteval.store import open_store
from playlisteval.store.states import GATE_ORDER, State
from playlisteval.view import boards, listing, media, versus
from playlisteval.view.access import TokenGate
from playlisteval.view.card import mmss, pair_card

log = get_logger(__name__)
STATIC = Path(__file__).with_name("static")


@dataclass(frozen=True)
class Sources:
    """What the viewer shows but the commands' layer computes: ``funnel()`` is `playlisteval funnel --json`'s
    data; ``gates`` says what each gate checks (commands/glossary.py)."""

    funnel: Callable[[], dict[str, Any]]
    gates: dict[str, str] = field(default_factory=dict)


def environment() -> Environment:
    """The templates' Jinja environment, autoescaped; the static bundle (bundle.py) renders the same one."""
    env = Environment(loader=PackageLoader("playlisteval.view", "templates"), autoescape=select_autoescape(["html"]),
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["mmss"] = mmss
    env.filters["t3"] = lambda t: f"{float(t):.3f}"
    env.filters["x"] = lambda t, duration: f"{1000 * float(t) / max(float(duration), 1e-9):.1f}"
    env.globals["link"] = link
    env.globals["bundle"] = False  # the bundle renders with True: no forms, no pages it does not write
    return env


def _templates() -> Jinja2Templates:
    return Jinja2Templates(env=environment())


def link(path: str, params: dict[str, Any] | None = None, **changes: Any) -> str:
    """``path`` with the query ``params`` updated by ``changes`` (a None or "" value drops the key)."""
    merged = {**(params or {}), **changes}
    query = urlencode([(k, str(v)) for k, v in merged.items() if v not in (None, "")])
    return f"{path}?{query}" if query else path


def _filters(request: Request) -> listing.Filters:
    q = request.query_params
    return listing.Filters(domain=q.get("domain", ""), gate=q.get("gate", ""), judge=q.get("judge", ""),
                           wrong=q.get("wrong", "") not in ("", "0"), state=q.get("state", ""))


def _float(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def make_app(settings: Settings, token: str, sources: Sources) -> Starlette:
    engine = open_store(settings)
    templates = _templates()

    def simulated() -> str:
        from playlisteval.models.simulated import NOTE, is_simulated

        return NOTE if is_simulated(engine) else ""

    async def page(request: Request, name: str, status: int = 200, **context: Any) -> Response:
        banner = await run_in_threadpool(simulated)
        return templates.TemplateResponse(request, name, {"project": settings.project.name, "simulated": banner,
                                                          **context}, status_code=status)

    async def message(request: Request, title: str, text: str, status: int) -> Response:
        return await page(request, "message.html", status, title=title, text=text)

    async def bench_of(request: Request) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        found = await run_in_threadpool(listing.benchmarks, engine)
        name = request.query_params.get("benchmark")
        chosen = next((b for b in found if b["name"] == name), None) if name else (found[0] if found else None)
        return chosen, found

    async def home(request: Request) -> Response:
        bench, found = await bench_of(request)
        return await page(request, "home.html", bench=bench, benchmarks=found)

    async def leaderboard(request: Request) -> Response:
        bench, found = await bench_of(request)
        if bench is None and request.query_params.get("benchmark"):
            return await message(request, "No such benchmark", f"no benchmark named "
                                 f"{request.query_params['benchmark']!r}", 404)
        board = await run_in_threadpool(boards.leaderboard, engine, settings, bench)
        return await page(request, "leaderboard.html", bench=bench, benchmarks=found, **board)

    async def runs(request: Request) -> Response:
        bench, found = await bench_of(request)
        data = await run_in_threadpool(boards.runs, engine, settings, bench)
        return await page(request, "runs.html", bench=bench, benchmarks=found, **data)

    async def funnel(request: Request) -> Response:
        data = await run_in_threadpool(sources.funnel)
        return await page(request, "funnel.html", funnel=data, gates=sources.gates)

    async def items(request: Request) -> Response:
        number, size = listing.page_args(request.query_params.get("page"), request.query_params.get("size"))
        f = _filters(request)
        found = await run_in_threadpool(listing.items, engine, f, number, size)
        domains = await run_in_threadpool(listing.domains, engine)
        return await page(request, "items.html", found=found, f=f, domains=domains, gate_names=GATE_ORDER,
                          states=[s.value for s in State], size=size)

    async def item(request: Request) -> Response:
        from playlisteval.build.story import ItemNotFound, item_story
        from playlisteval.prompts.render import prompts_dir_of

        try:
            story = await run_in_threadpool(item_story, engine, request.path_params["item_id"],
                                            prompts_dir_of(settings))
        except ItemNotFound as exc:
            return await message(request, "No such item", str(exc), 404)
        return await page(request, "item.html", story=story)

    async def pairs(request: Request) -> Response:
        bench, found = await bench_of(request)
        if bench is None:
            return await message(request, "No benchmark", "no benchmark yet (or none by that name): "
                                 "`playlisteval select` makes one", 404)
        number, size = listing.page_args(request.query_params.get("page"), request.query_params.get("size"))
        f = _filters(request)
        got = await run_in_threadpool(listing.pairs, engine, int(bench["id"]), f, number, size)
        domains = await run_in_threadpool(listing.domains, engine)
        judges = await run_in_threadpool(listing.judges, engine, int(bench["id"]))
        return await page(request, "pairs.html", bench=bench, benchmarks=found, found=got, f=f, domains=domains,
                          judges=judges, gate_names=GATE_ORDER, size=size)

    async def pair(request: Request) -> Response:
        bench, _found = await bench_of(request)
        card = await run_in_threadpool(pair_card, engine, request.path_params["pair_id"],
                                       int(bench["id"]) if bench else None)
        if card is None:
            return await message(request, "No such pair", f"the store has no pair {request.path_params['pair_id']}",
                                 404)
        return await page(request, "pair.html", card=card, bench=bench)

    async def judges(request: Request) -> Response:
        bench, found = await bench_of(request)
        if bench is None:
            return await message(request, "No benchmark", "no benchmark yet (or none by that name): "
                                 "`playlisteval select` makes one", 404)
        evidence = request.query_params.get("evidence") or settings.eval.evidence
        runs = await run_in_threadpool(versus.main_runs, engine, settings, int(bench["id"]), evidence)
        every = await run_in_threadpool(versus.every_pair, engine, runs, evidence)
        a, b = request.query_params.get("a"), request.query_params.get("b")
        pick, error = None, ""
        if a and b:
            try:
                pick = await run_in_threadpool(versus.compare, engine, runs, a, b, evidence)
            except KeyError as exc:
                error = str(exc.args[0])
        return await page(request, "versus.html", 404 if error else 200, bench=bench, benchmarks=found,
                          evidence=evidence, judges=sorted(runs), pick=pick, every=every, error=error)

    async def clip(request: Request) -> Response:
        video = await run_in_threadpool(media.stored_video, engine, request.path_params["video_id"])
        if video is None:
            return await message(request, "No such video", "the store names no such video, or its file is gone", 404)
        start = _float(request.query_params.get("start")) or 0.0
        end = _float(request.query_params.get("end"))
        return await page(request, "clip.html", video=video, start=max(0.0, start),
                          end=end if end is not None and end > start else None)

    async def video(request: Request) -> Response:
        found = await run_in_threadpool(media.stored_video, engine, request.path_params["video_id"])
        if found is None:
            return Response("not found", status_code=404, media_type="text/plain")
        return FileResponse(found.path, media_type=found.media_type)  # byte ranges: the player can seek

    async def frame(request: Request) -> Response:
        t = _float(request.path_params["t"])
        if t is None:
            return Response("not found", status_code=404, media_type="text/plain")
        path, data = await run_in_threadpool(media.frame_jpeg, engine, settings.media_dir,
                                             request.path_params["video_id"], t)
        if path is not None:
            return FileResponse(path, media_type="image/jpeg")
        if data is not None:
            return Response(data, media_type="image/jpeg")
        return Response("not found", status_code=404, media_type="text/plain")

    return Starlette(routes=[
        Route("/", home),
        Route("/leaderboard", leaderboard),
        Route("/runs", runs),
        Route("/funnel", funnel),
        Route("/items", items),
        Route("/items/{item_id:int}", item),
        Route("/pairs", pairs),
        Route("/pairs/{pair_id:int}", pair),
        Route("/versus", judges),
        Route("/clip/{video_id:int}", clip),
        Route("/video/{video_id:int}", video),
        Route("/frame/{video_id:int}/{t}", frame),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ], middleware=[Middleware(RedactKeys), Middleware(SecurityHeaders), Middleware(TokenGate, token=token)])
