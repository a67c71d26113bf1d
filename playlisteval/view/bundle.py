"""`playlisteval view --bundle OUT` (issue 41, deliverable 4): the viewer's pages of one benchmark written as
a folder of files that any static server (or a browser opening the files) shows with no store and no
token: the home page, the leaderboard with its intervals, the runs and sweeps, the gate funnel, the list of
pairs, every pair's card with the frames each judge was served (the image files themselves, in
``frames/``), each judge's reply and timeline, and judge against judge (a page per two judges).

The pages are the live viewer's own: the same templates, rendered from the same functions (boards,
listing, card, versus), with the bundle's flag hiding the forms a static page cannot answer and
bundle_links making every link relative. What goes out is what the benchmark's release shows: its own
runs' judgments only (a pair can be judged for other benchmarks too), no item stories (rejected
attempts, prompts), no videos; every page passes logs.redaction.redact_known (the known API keys), and
the absolute folders of the project and of its videos are replaced by a placeholder, so no path of this
machine is published. Model output stays untrusted text: the templates escape it.

Written into a fresh folder beside OUT and moved into place at the end, so an interrupted write never
leaves a half bundle under OUT's name; a non-empty OUT is refused unless ``force``. A page or frame that
cannot be made is an error named in the report (the command exits non-zero), never a silent gap.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Engine

from playlisteval.config import Settings
from playlisteval.errors import PlaylistEvalError
from playlisteval.logs.redaction import redact_known, secret_values
from playlisteval.store import open_store
from playlisteval.view import boards, listing, media, versus
from playlisteval.view.app import STATIC, Sources, environment
from playlisteval.view.bundle_links import Site, frame_file, relative
from playlisteval.view.card import pair_card

Tick = Callable[[str, int, int], None]
HIDDEN = "(local folder)"  # what an absolute folder of this machine becomes in a bundled page


class BundleRefused(PlaylistEvalError):
    """OUT cannot take the bundle (not empty without --force, a file, or a folder too precious to replace)."""


@dataclass
class BundleReport:
    out: Path
    benchmark: str
    pages: int = 0
    frames: int = 0
    errors: list[str] = field(default_factory=list)


def _check_out(out: Path, settings: Settings, force: bool) -> None:
    """Refuse what --force must never replace: the project (or a folder holding it), a filesystem root,
    the home folder; and any non-empty folder without --force."""
    target = out.resolve()
    if target.exists() and not target.is_dir():
        raise BundleRefused(f"{out} is a file, not a folder")
    root = settings.root.resolve()
    if target == root or root.is_relative_to(target) or target == Path.home().resolve() or target.parent == target:
        raise BundleRefused(f"{out} holds the project (or is the home or root folder): choose an empty folder")
    if target.is_dir() and any(target.iterdir()) and not force:
        raise BundleRefused(f"{out} is not empty: choose an empty folder, or --force to replace it")


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "judge"


def _versus_files(judges: list[str]) -> dict[tuple[str, str], str]:
    """(A, B) → ``versus/A--B.html``, unique even when two names slug alike."""
    out: dict[tuple[str, str], str] = {}
    for n, (a, b) in enumerate(combinations(sorted(judges), 2)):
        name = f"versus/{_slug(a)}--{_slug(b)}.html"
        out[(a, b)] = name if name not in out.values() else f"versus/{n}-{_slug(a)}--{_slug(b)}.html"
    return out


def _local_folders(engine: Engine, settings: Settings) -> list[str]:
    """The absolute folders a page might name: the project's and its videos' (longest first)."""
    with engine.connect() as conn:
        videos = {str(Path(str(p)).parent) for p in conn.execute(text("SELECT DISTINCT path FROM video")).scalars()}
    folders = {str(settings.root.resolve()), str(settings.root.absolute()), *videos}
    # a folder right under the root ("/v") would also match inside ordinary text: such a short one is kept
    return sorted((f for f in folders if len(Path(f).parts) > 2), key=len, reverse=True)


class _Writer:
    """Renders pages into ``folder`` with the links made relative and the text made publishable."""

    def __init__(self, folder: Path, site: Site, context: dict[str, Any], hide: list[str]) -> None:
        self.folder, self.site, self.context, self.hide = folder, site, context, hide
        self.env = environment()
        self.keys = secret_values()
        self.pages = 0

    def page(self, name: str, template: str, **context: Any) -> None:
        html = self.env.get_template(template).render(**self.context, **context)
        html = relative(html, name.count("/"), self.site, name=name)
        html = redact_known(html, self.keys)
        for folder in self.hide:
            html = html.replace(folder, HIDDEN)
        path = self.folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(html, encoding="utf-8")
        self.pages += 1


def _card(engine: Engine, pair_id: int, bench_id: int, runs: set[int]) -> dict[str, Any] | None:
    """The pair's card with this benchmark's runs only (a pair's judgments for other benchmarks are not
    part of this release)."""
    card = pair_card(engine, pair_id, bench_id)
    if card is not None:
        card["judgments"] = [j for j in card["judgments"] if int(j["run_id"]) in runs]
        card["errors"] = [e for e in card["errors"] if int(e["run_id"]) in runs]
    return card


def _all_pairs(engine: Engine, bench_id: int) -> listing.Page:
    """Every pair of the benchmark as one page, read the live list's way in pages of its largest size (one
    query for all would bind a parameter per pair, past what SQLite and PostgreSQL allow at scale)."""
    rows: list[dict[str, Any]] = []
    number = 1
    while True:
        got = listing.pairs(engine, bench_id, listing.Filters(), number, listing.MAX_PAGE_SIZE)
        rows += got.rows
        if number >= got.pages:
            return listing.Page(rows, got.total, 1, max(1, got.total))
        number += 1


def _frames(engine: Engine, settings: Settings, folder: Path, site: Site, report: BundleReport, tick: Tick) -> None:
    """Each frame a page links to, as a file: the kept frame copied, else decoded now."""
    wanted = sorted(site.frames.items())
    for n, ((video_id, t3), page) in enumerate(wanted, 1):
        path, data = media.frame_jpeg(engine, settings.media_dir, video_id, float(t3))
        dest = folder / frame_file(video_id, t3)
        dest.parent.mkdir(parents=True, exist_ok=True)
        if path is not None:
            shutil.copyfile(path, dest)
        elif data is not None:
            dest.write_bytes(data)
        else:
            report.errors.append(f"frame of video {video_id} at {t3} s (shown on {page}): the video is missing "
                                 "or unreadable there")
            continue
        report.frames += 1
        tick("frames", n, len(wanted))


def write_bundle(settings: Settings, sources: Sources, out: Path, *, benchmark: str | None = None,
                 force: bool = False, tick: Tick | None = None) -> BundleReport:
    """Write the static site of ``benchmark`` (the viewer's default one when None) into ``out``."""
    tick = tick or (lambda _task, _done, _total: None)
    _check_out(out, settings, force)
    engine = open_store(settings)
    bench = listing.choose(engine, benchmark)
    if bench is None:
        raise BundleRefused(f"no benchmark named {benchmark!r}" if benchmark else
                            "no benchmark yet: `playlisteval select` makes one")
    bench_id, name, evidence = int(bench["id"]), str(bench["name"]), settings.eval.evidence
    with engine.connect() as conn:
        pair_ids = [int(p) for p in conn.execute(text(
            "SELECT pair_id FROM benchmark_pair WHERE benchmark_id = :b ORDER BY pair_id"), {"b": bench_id}).scalars()]
        runs = {int(r) for r in conn.execute(text("SELECT id FROM judge_run WHERE benchmark_id = :b"),
                                             {"b": bench_id}).scalars()}
    main = versus.main_runs(engine, settings, bench_id, evidence)
    site = Site(name, evidence, set(pair_ids), _versus_files(list(main)))
    from playlisteval.models.simulated import NOTE, is_simulated

    context = {"project": settings.project.name, "simulated": NOTE if is_simulated(engine) else "", "bundle": True,
               "bench": bench, "benchmarks": [bench]}
    out.parent.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    report = BundleReport(out, name)
    try:
        w = _Writer(folder, site, context, _local_folders(engine, settings))
        shutil.copytree(STATIC, folder / "static")
        w.page("index.html", "home.html")
        w.page("leaderboard.html", "leaderboard.html", **boards.leaderboard(engine, settings, bench))
        w.page("runs.html", "runs.html", **boards.runs(engine, settings, bench))
        w.page("funnel.html", "funnel.html", funnel=sources.funnel(), gates=sources.gates)
        everything = _all_pairs(engine, bench_id)
        w.page("pairs.html", "pairs.html", found=everything, f=listing.Filters(), domains=[], judges=[],
               gate_names=[], size=everything.size)
        every = versus.every_pair(engine, main, evidence)
        w.page("versus.html", "versus.html", evidence=evidence, judges=sorted(main), pick=None, every=every, error="")
        for v in every:
            w.page(site.versus[(v.judge_a, v.judge_b)], "versus.html", evidence=evidence, judges=sorted(main), pick=v,
                   every=every, error="")
        for n, pair_id in enumerate(pair_ids, 1):
            card = _card(engine, pair_id, bench_id, runs)
            if card is None:
                report.errors.append(f"pair {pair_id}: the store has no such pair")
            else:
                w.page(f"pairs/{pair_id}.html", "pair.html", card=card)
            tick("pair cards", n, len(pair_ids))
        report.pages = w.pages
        _frames(engine, settings, folder, site, report, tick)
        os.chmod(folder, 0o755)  # mkdtemp's 0700 would keep a web server's user out
        if out.exists():
            shutil.rmtree(out)
        folder.rename(out)
    finally:
        if folder.exists():
            shutil.rmtree(folder, ignore_errors=True)
    return report
