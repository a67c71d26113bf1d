"""A real synthetic project with a benchmark and a planned human study, built once per test process
and copied for each test module (the build takes ~25 s; every copy is a few MB)."""

from __future__ import annotations

import atexit
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from playlisteval.actors.build_run import build
from playlisteval.actors.indexing import index_collection
from playlisteval.cli import main
from playlisteval.config import Settings
from playlisteval.human.design import plan_study
from playlisteval.human.evidence import ground_study
from playlisteval.human.tasks import find_study
from playlisteval.index.collection import add_paths
from playlisteval.select.sampling import select_benchmark
from playlisteval.store import forget_engines, open_store
from playlisteval.world.synth.make import make_collection
from tests.helpers import QUIET_SIM, env_for, project

OVERRIDES: dict[str, object] = dict(
    index__embedder="hash", index__ocr="none", index__segment_min_s=60, index__segment_max_s=90,
    select__questions_per_domain=0, select__pairs_per_domain=30, human__pairs=12, human__bootstrap=200,
    **QUIET_SIM)


@lru_cache(maxsize=1)
def _built() -> Path:
    root = Path(tempfile.mkdtemp(prefix="pe-human-"))
    atexit.register(shutil.rmtree, root, True)
    proj = root / "proj"
    settings = project(proj, **OVERRIDES)
    make_collection(root / "videos", domains=2, playlists=1, videos=3, minutes=3, seed=0)
    engine = open_store(settings)
    for domain in sorted(p for p in (root / "videos").iterdir() if p.is_dir()):
        add_paths(engine, domain.name, sorted(domain.iterdir()))
    index_collection(settings, engine)
    build(settings)
    select_benchmark(settings)
    plan_study(settings, engine)
    report = ground_study(settings, engine, find_study(engine, settings.human.study))
    assert not report.faults, report.faults
    forget_engines()
    return proj


def study_project(dest: Path, **overrides: object) -> Settings:
    """A private copy of the built project (store, media, config) under ``dest``."""
    shutil.copytree(_built(), dest)
    return project(dest, **{**OVERRIDES, **overrides})


def cli(settings: Settings, *args: str, code: int = 0, **overrides: object) -> Any:
    result = CliRunner().invoke(main, ["--project", str(settings.root), *args],
                                env=env_for(**{**OVERRIDES, **overrides}), catch_exceptions=False)
    assert result.exit_code == code, result.output
    return result


REASON = ("Answer A describes the colour of the shape under the sign exactly as the clip shows it, while "
          "the other answer names a colour that never appears on screen in either video.")
