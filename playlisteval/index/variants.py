"""Named retriever variants (issue 20, deliverable 8): ``playlisteval index --variant NAME`` and ``eval retrieve
--variant NAME``.

A variant is a name for a recipe (index/modality.py): an embedder, the modality its chunk vectors read, the
frames per chunk of a visual embedder, the vector width. The name is kept in ``retrieval_variant`` so the
later `eval retrieve --variant NAME` (or a colleague's) means the same recipe; redefining a name as another
recipe is refused, since its runs would no longer say what they measured. The vectors themselves are stored
under the recipe's own embedder name beside the default ones, made by the index's usual per-video work
(index/work.py through the engine), so they are cached by content hash and remade only where content changed.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from playlisteval.config import Settings
from playlisteval.errors import ConfigError
from playlisteval.index.embedders import get_embedder
from playlisteval.index.modality import Recipe, make_recipe, parse
from playlisteval.index.pipeline import Dispatch, Progress, index_videos
from playlisteval.logs import get_logger
from playlisteval.store.engine import transaction
from playlisteval.store.tables import RetrievalVariant, Video

log = get_logger(__name__)


@dataclass
class VariantReport:
    name: str
    embedder: str  # the name its vectors are stored under
    modality: str
    dims: int
    videos: int = 0
    embedded: int = 0  # vectors computed now
    reused: int = 0  # vectors kept (same content, same recipe)
    failed: list[str] = field(default_factory=list)  # "path: why" per video whose vectors could not be made


def define(engine: Engine, settings: Settings, name: str, embedder: str | None = None, modality: str | None = None,
           frames: int = 0, dims: int = 0) -> RetrievalVariant:
    """The variant ``name``: made from the options when new; when it exists, the options must agree with it
    (none given: the stored one as it is). Checked by building its embedder, so a frame variant without the
    visual embedder's weights fails here, before anything is stored."""
    name = name.strip()
    if not name or any(c in name for c in "\n\r\t"):
        raise ConfigError(f"variant name {name!r}: one non-empty line")
    with Session(engine) as session:
        stored = session.get(RetrievalVariant, name)
    asked = embedder is not None or modality is not None or frames or dims
    if stored is not None and not asked:
        return stored
    if stored is None and not asked:
        raise ConfigError(f"variant {name!r} is not defined: give --modality, --embedder, --frames-per-chunk or "
                          "--dims to define it")
    base = embedder or (parse(stored.embedder).base if stored is not None else settings.index.embedder)
    recipe = make_recipe(base, modality, frames, dims)
    get_embedder(recipe.name, 0, settings.index)  # fails now (weights, frames, modality) rather than per video
    if stored is not None:
        if stored.embedder != recipe.name:
            raise ConfigError(f"variant {name!r} is already {stored.embedder} ({stored.modality}); {recipe.name} "
                              "would change what its runs measured: choose another name")
        return stored
    row = _row(name, recipe)
    with transaction(engine) as session:
        if session.get(RetrievalVariant, name) is None:  # two defining at once: the first one stands
            session.add(row)
    log.info("variant.defined", variant=name, embedder=recipe.name)
    return resolve(engine, name)


def _row(name: str, recipe: Recipe) -> RetrievalVariant:
    return RetrievalVariant(name=name, embedder=recipe.name, base=recipe.model, modality=recipe.modality,
                            frames_per_chunk=recipe.frames, dims=recipe.dims)


def resolve(engine: Engine, name: str) -> RetrievalVariant:
    """The stored variant; an unknown name is an error that lists the known ones."""
    with Session(engine) as session:
        row = session.get(RetrievalVariant, name)
        if row is not None:
            return row
        known = sorted(session.exec(select(RetrievalVariant.name)).all())
    listed = ", ".join(known) if known else "none yet (`playlisteval index --variant NAME --modality …`)"
    raise ConfigError(f"unknown retriever variant {name!r}; known: {listed}")


def known(engine: Engine) -> list[RetrievalVariant]:
    with Session(engine) as session:
        return list(session.exec(select(RetrievalVariant).order_by(col(RetrievalVariant.name))))


def make_vectors(settings: Settings, engine: Engine, variant: RetrievalVariant, dispatch: Dispatch,
                 tick: Progress | None = None) -> VariantReport:
    """The variant's vectors for every indexed video (made where missing or stale, kept where not)."""
    embedder = get_embedder(variant.embedder, 0, settings.index)
    report = VariantReport(variant.name, variant.embedder, variant.modality, embedder.dim)
    with Session(engine) as session:
        videos = [int(v) for v in session.exec(select(Video.id).where(Video.status == "indexed")
                                              .order_by(col(Video.id))).all() if v is not None]
        paths = dict(session.exec(select(Video.id, Video.path).where(col(Video.id).in_(videos))).all())
    report.videos = len(videos)
    if not videos:
        return report
    found = index_videos(settings, engine, videos, variant.embedder, f"variant-{uuid.uuid4().hex[:8]}",
                         tick or (lambda stage, done, total: None), dispatch)
    for video_id in videos:
        outcome = found[video_id][1] if video_id in found else None
        if outcome is None or outcome.status != "indexed":
            why = f"{outcome.status}: {outcome.reason}" if outcome else "no worker indexed it in time"
            report.failed.append(f"{paths.get(video_id, video_id)}: {why}")
            continue
        report.embedded += outcome.embedded
        report.reused += outcome.reused
    return report
