"""The Procfile runs under honcho: its Redis and worker process a build enqueued from here."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from playlisteval.actors.build_run import build
from playlisteval.store import items
from tests.conftest import free_port
from tests.helpers import QUIET_SIM, env_for, project, seeded_store

ROOT = Path(__file__).resolve().parents[1]


def test_honcho_runs_the_procfile(tmp_path: Path) -> None:
    port = free_port()
    overrides = dict(broker__url=f"redis://127.0.0.1:{port}/0", **QUIET_SIM)
    settings = project(tmp_path, **overrides)
    engine = seeded_store(settings, 2)
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, **env_for(**overrides), "REDIS_PORT": str(port), "REDIS_DIR": str(tmp_path),
           "PLAYLISTEVAL_PROJECT": str(tmp_path), "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    log = (tmp_path / "honcho.log").open("wb")
    honcho = subprocess.Popen([os.path.join(bin_dir, "honcho"), "-f", str(ROOT / "Procfile"), "start"],
                              cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
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
        assert items.counts(engine) == {"accepted": 2}, (tmp_path / "honcho.log").read_text()[-3000:]
    finally:
        os.killpg(honcho.pid, signal.SIGTERM)
        honcho.wait(timeout=30)
