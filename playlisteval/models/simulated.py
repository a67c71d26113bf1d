"""Where the `sim` provider may be used, and what it computed (issue 9, item 5).

The sim plays every role from the world file `playlisteval synth` writes beside each video. On any
other video it answers from nothing, yet its replies look like evidence (a "grounded" question with
no content behind it). So `build`, `select` and `eval judge` refuse a sim role while the collection
holds a video without a world, and everything the sim produced — a build, a difficulty gate, a judge
run — is labelled *simulated* wherever its numbers are shown (CLI, report, dataset card).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from sqlalchemy import bindparam, text
from sqlalchemy.engine import Engine

from playlisteval.store import counts
from playlisteval.store.engine import read_core
from playlisteval.store.media_paths import MediaPath

SIM = "sim"
#: a synthetic video's facts sit beside it as <stem>.world.json (`synth` writes them, the sim reads them)
WORLD_SUFFIX = ".world.json"
LABEL = "simulated"
#: one line for a card or a report: what "simulated" means for the numbers beside it
NOTE = ("SIMULATED: made by the offline `sim` provider on synthetic playlists; these numbers test the "
        "machinery and say nothing about any real model.")
_USABLE = ("new", "indexed")  # skipped, duplicate and failed videos are never used
# SQL text, not the ORM: `status` asks is_simulated and loads no table class (issue 26)
_USABLE_PATHS = text("SELECT path FROM video WHERE status IN :usable ORDER BY path").bindparams(
    bindparam("usable", expanding=True)).columns(path=MediaPath)  # read as file paths (issue 41)
_JUDGES = text("SELECT DISTINCT judge FROM judge_run")


def world_path(video_path: str | Path) -> Path:
    path = Path(video_path)
    return path.with_name(path.stem + WORLD_SUFFIX)


def uses_sim(spec: str) -> bool:
    return spec.split("/", 1)[0] == SIM


def videos_without_world(engine: Engine) -> list[str]:
    """Paths of the collection's usable videos that `synth` did not make (no world file beside them)."""
    with read_core(engine) as s:
        paths = [str(p) for p in s.execute(_USABLE_PATHS, {"usable": list(_USABLE)}).scalars()]
    return [p for p in paths if not world_path(p).is_file()]


def sim_outside_world(engine: Engine, uses: Iterable[tuple[str, str]], fix: str = "in [models]") -> str | None:
    """A problem line when a (role, spec) of ``uses`` is a sim model and the collection has real videos."""
    roles = sorted({role for role, spec in uses if uses_sim(spec)})
    if not roles:
        return None
    foreign = videos_without_world(engine)
    if not foreign:
        return None
    return (f"{', '.join(roles)} use{'s' if len(roles) == 1 else ''} the simulated world (sim), which only "
            f"knows videos made by `playlisteval synth`, but {len(foreign)} video(s) of the collection were "
            f"not (e.g. {Path(foreign[0]).name}): configure real models for {', '.join(roles)} {fix}")


def simulated_models(engine: Engine, purpose: str | None = None) -> list[str]:
    """The sim models ("sim/…") whose calls or judge runs are in the store, for ``purpose`` or any."""
    with read_core(engine) as s:  # "purpose model" of the sim's calls, counted by triggers (store/counts.py)
        found = {f"{SIM}/{model}" for key in counts.by_key(s, "sim_model")
                 for used_for, _, model in [key.partition(" ")] if purpose is None or used_for == purpose}
        if purpose in (None, "eval"):
            found |= {str(j) for j in s.execute(_JUDGES).scalars() if uses_sim(str(j))}
    return sorted(found)


def is_simulated(engine: Engine, purpose: str | None = None) -> bool:
    """Whether anything in the store (or of ``purpose``: build / select / eval) came from the sim.

    A benchmark built by the sim is simulated, and so is every number computed on it, whoever judges:
    callers labelling a report or a dataset card ask with ``purpose=None``.
    """
    return bool(simulated_models(engine, purpose))
