"""The Procfile runs under honcho: its Redis and worker process a build enqueued from here."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from playlisteval.actors.build_run import build
from playlisteval.store import items
from tests.conftest import free_port
from tests.helpers import QUIET_SIM, env_for, project, seeded_store

ROOT = Path(__file__).resolve().parents[1]


def _builds_under_honcho(args: list[str], cwd: Path, env: dict[str, str], port: int, settings: Any,
                         engine: Any) -> None:
    """Start honcho, wait for its Redis, enqueue a build of two seeds here and wait for its worker to
    accept both; honcho's whole process group is stopped afterwards."""
    log_path = cwd / "honcho.log"
    with log_path.open("wb") as log:
        honcho = subprocess.Popen(args, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                  start_new_session=True)
        try:
            deadline = time.time() + 30
            while time.time() < deadline:  # wait for its Redis
                try:
                    import redis

                    redis.Redis(port=port).ping()
                    break
                except Exception:
                    time.sleep(0.2)
            outcome = build(settings)
            assert not outcome.foreground and outcome.enqueued == 2
            deadline = time.time() + 120
            while time.time() < deadline and items.counts(engine) != {"accepted": 2}:
                time.sleep(0.5)
            assert items.counts(engine) == {"accepted": 2}, log_path.read_text()[-3000:]
        finally:
            os.killpg(honcho.pid, signal.SIGTERM)
            honcho.wait(timeout=30)


def test_honcho_runs_the_procfile(tmp_path: Path) -> None:
    port = free_port()
    overrides = dict(broker__url=f"redis://127.0.0.1:{port}/0", **QUIET_SIM)
    settings = project(tmp_path, **overrides)
    engine = seeded_store(settings, 2)
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, **env_for(**overrides), "REDIS_PORT": str(port), "REDIS_DIR": str(tmp_path),
           "PLAYLISTEVAL_PROJECT": str(tmp_path), "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    _builds_under_honcho([os.path.join(bin_dir, "honcho"), "-f", str(ROOT / "Procfile"), "start"], tmp_path, env,
                         port, settings, engine)


def test_honcho_as_documented_serves_the_demo_project_with_no_variable_set(tmp_path: Path) -> None:
    """Issue 44: `honcho start` from the repository (no PLAYLISTEVAL_PROJECT, no broker URL) found no
    project and honcho stopped Redis too. Now the worker serves ./demo on the Procfile's own Redis."""
    port = free_port()
    demo = tmp_path / "demo"
    demo.mkdir()
    settings = project(demo, broker__url=f"redis://127.0.0.1:{port}/0", **QUIET_SIM)
    engine = seeded_store(settings, 2)
    bin_dir = str(Path(sys.executable).parent)
    env = {k: v for k, v in os.environ.items() if k not in ("PLAYLISTEVAL_PROJECT", "PLAYLISTEVAL_BROKER__URL")}
    env.update({**env_for(**QUIET_SIM), "REDIS_PORT": str(port), "REDIS_DIR": str(tmp_path),
                "PATH": f"{bin_dir}:{os.environ['PATH']}"})
    (tmp_path / "Procfile").write_text((ROOT / "Procfile").read_text())  # "in the repository": ./Procfile, ./demo
    _builds_under_honcho([os.path.join(bin_dir, "honcho"), "start"], tmp_path, env, port, settings, engine)
