"""A judged project for the viewer's tests (issue 22): the human study's built project (real synthetic
videos, so frames and clips can be served), judged once by the sim judge and a shortcut judge, and copied
per test module."""

from __future__ import annotations

import atexit
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path

from playlisteval.commands.funnel import funnel
from playlisteval.commands.glossary import GATES
from playlisteval.config import Settings
from playlisteval.store import forget_engines
from playlisteval.view.app import Sources
from tests.helpers import project
from tests.human_helpers import OVERRIDES, cli, study_project

TOKEN = "test-token-0123456789"
JUDGES = ("sim/judge", "shortcut/random")


@lru_cache(maxsize=1)
def _judged() -> Path:
    root = Path(tempfile.mkdtemp(prefix="pe-view-"))
    atexit.register(shutil.rmtree, root, True)
    settings = study_project(root / "proj")
    for judge in JUDGES:
        cli(settings, "eval", "judge", "--judge", judge, "--json")
    forget_engines()
    return root / "proj"


def viewed_project(dest: Path) -> Settings:
    """A private copy of the judged project under ``dest``."""
    shutil.copytree(_judged(), dest)
    return project(dest, **OVERRIDES)


def sources(settings: Settings) -> Sources:
    return Sources(funnel=lambda: funnel(settings, top=50), gates=GATES)
