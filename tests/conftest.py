from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--run-api", action="store_true", help="run tests that call live model APIs")
    parser.addoption("--run-gpu", action="store_true", help="run tests that need a GPU")
    parser.addoption("--run-llm", action="store_true",
                     help="run the real llama.cpp contract tests (llm extra; GGUF via PLAYLISTEVAL_TEST_GGUF_WHEELS)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "api" in item.keywords and not config.getoption("--run-api"):
            item.add_marker(pytest.mark.skip(reason="live API test: pass --run-api (and set the keys)"))
        if "gpu" in item.keywords and not config.getoption("--run-gpu"):
            item.add_marker(pytest.mark.skip(reason="GPU test: pass --run-gpu"))
        if "llm" in item.keywords and not config.getoption("--run-llm"):
            item.add_marker(pytest.mark.skip(reason="real llama.cpp test: pass --run-llm (make llm installs it)"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    """A redis-server of the test's own, on a free port, killed afterwards."""
    exe = shutil.which("redis-server")
    if exe is None:
        pytest.fail("redis-server is not installed (make test installs it)")
    port = free_port()
    proc = subprocess.Popen(
        [exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--dir", str(tmp_path)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                break
        except OSError:
            time.sleep(0.05)
    yield f"redis://127.0.0.1:{port}/0"
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture(autouse=True)
def _fresh_engines() -> Iterator[None]:
    yield
    from playlisteval.store import forget_engines

    forget_engines()


@pytest.fixture(autouse=True)
def _fresh_fail_streak() -> Iterator[None]:
    """Each test starts with no provider failures counted (the count is per process: models/failstreak.py)."""
    from playlisteval.models.failstreak import STREAK

    STREAK.reset()
    yield


PG_ADMIN = os.environ.get("PLAYLISTEVAL_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A throwaway database on the local PostgreSQL, dropped afterwards (required in CI, else skipped)."""
    yield from _pg_database()


@pytest.fixture(params=["sqlite", "postgresql"])
def store_engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """A migrated store's engine, once on SQLite and once on PostgreSQL (the tests that read through both)."""
    from playlisteval.store import make_engine, migrate

    url = request.getfixturevalue("pg_url") if request.param == "postgresql" else f"sqlite:///{tmp_path}/s.db"
    made = make_engine(url)
    migrate(made)
    yield made
    made.dispose()


@pytest.fixture(scope="module")
def pg_module_url() -> Iterator[str]:
    """``pg_url`` shared by the tests of one module (a project built once, then queried)."""
    yield from _pg_database()


def _pg_database() -> Iterator[str]:
    from sqlalchemy import text

    from playlisteval.store import forget_engines, make_engine

    name = f"pe_test_{uuid.uuid4().hex[:10]}"
    admin = make_engine(PG_ADMIN)
    try:
        with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
    except Exception as exc:  # noqa: BLE001
        if os.environ.get("CI"):
            raise
        pytest.skip(f"PostgreSQL not reachable at {PG_ADMIN}: {exc}")
    yield PG_ADMIN.rsplit("/", 1)[0] + f"/{name}"
    forget_engines()
    with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()
