"""A PostgreSQL server of the test's own (issue 25, deliverable 7): initdb in a temporary folder, a free port,
started, restarted and stopped by the test — the shared server on 5432 is never touched. Runs as the
``postgres`` user when the test runs as root (the server refuses root)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.conftest import free_port


def pg_bin(name: str) -> str | None:
    return shutil.which(name) or next((str(p) for p in sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"))),
                                      None)


def server_problem() -> str | None:
    if not (pg_bin("initdb") and pg_bin("pg_ctl")):
        return "initdb / pg_ctl are not installed"
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        return "running as root without runuser to become postgres"
    return None


class PgServer:
    def __init__(self, folder: Path) -> None:
        self.folder, self.port = folder, free_port()
        self.data = folder / "pgdata"

    def _run(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        cmd = list(argv)
        if os.geteuid() == 0:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        return subprocess.run(cmd, check=check, capture_output=True, text=True, timeout=120)

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/test"

    def init(self) -> PgServer:
        self.folder.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            shutil.chown(self.folder, "postgres", "postgres")
        self._run(str(pg_bin("initdb")), "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync")
        self.start()
        self._run(str(pg_bin("psql") or "psql"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres",
                  "-c", "CREATE DATABASE test")
        return self

    def start(self) -> None:
        self._run(str(pg_bin("pg_ctl")), "-D", str(self.data), "-w", "-l", str(self.folder / "server.log"), "-o",
                  f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off", "start")

    def stop(self, mode: str = "fast") -> None:
        self._run(str(pg_bin("pg_ctl")), "-D", str(self.data), "-w", "-m", mode, "stop", check=False)

    def restart(self, down_s: float = 0.0) -> None:
        """Stop (every connection dropped), stay down ``down_s``, start again."""
        import time

        self.stop("fast")
        time.sleep(down_s)
        self.start()


@contextmanager
def own_pg() -> Iterator[PgServer]:
    """A server of the test's own for the block (skips when none can be made), stopped and removed after.
    Its folder is outside pytest's (mode 0700, owned by root): the server runs as postgres."""
    import pytest

    from playlisteval.store import forget_engines

    problem = server_problem()
    if problem:
        pytest.skip(f"a PostgreSQL server of the test's own is needed: {problem}")
    folder = Path(tempfile.mkdtemp(prefix="pe-pg-"))
    try:
        server = PgServer(folder).init()
        yield server
        forget_engines()
        server.stop("immediate")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
