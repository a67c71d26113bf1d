"""Loggers load structlog with the first line worth writing (playlisteval/logs/lazy.py, issue 26).

Each case runs in a fresh interpreter, as the CLI starts: configure() at a verbosity, then lines below and
at that level; the output must be what structlog's filtering logger writes, secrets redacted, and
structlog must stay unloaded while nothing reached the level.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

KEY = "sk" + "-lazylogtest0123456789"  # made at run time, as tests/test_redaction.py does: no key-shaped literal

CASE = """
import json, logging, sys
from playlisteval import logs
logs.configure(int(sys.argv[1]))
log = logs.get_logger("playlisteval.test")
log.debug("a.debug.line", n=1)
log.info("an.info.line", n=2)
after_quiet = "structlog" in sys.modules
logging.getLogger("dramatiq.test").warning("stdlib says key=%s", sys.argv[2])
log.warning("a.warning.line", reply="bad key " + sys.argv[2])
print(json.dumps({"after_quiet": after_quiet, "after_warning": "structlog" in sys.modules}))
"""


def _run(verbosity: int) -> tuple[dict[str, bool], str]:
    env = {k: v for k, v in os.environ.items() if k != "PLAYLISTEVAL_LOG_JSON"}
    done = subprocess.run([sys.executable, "-c", CASE, str(verbosity), KEY], capture_output=True, text=True,
                          timeout=60, env={**env, "OPENAI_API_KEY": KEY}, check=True)
    return json.loads(done.stdout), done.stderr


def test_lines_below_the_level_load_nothing_and_a_warning_is_written_redacted() -> None:
    loaded, err = _run(0)
    assert loaded == {"after_quiet": False, "after_warning": True}
    assert "a.warning.line" in err and "stdlib says key=" in err
    assert "a.debug.line" not in err and "an.info.line" not in err
    assert KEY not in err, err


def test_verbose_writes_info_and_debug() -> None:
    loaded, err = _run(1)
    assert loaded["after_quiet"] is True  # -v: the info line is worth writing, so structlog loads for it
    assert "an.info.line" in err and "a.debug.line" not in err and "a.warning.line" in err
    _, err = _run(2)
    assert "a.debug.line" in err and "an.info.line" in err
    assert KEY not in err


def test_with_structlog_already_loaded_the_logger_only_forwards() -> None:
    """A process that loaded structlog itself (a test, a worker) gets structlog's configuration as is."""
    code = CASE.replace("import json, logging, sys", "import json, logging, sys, structlog")
    done = subprocess.run([sys.executable, "-c", code, "0", KEY], capture_output=True, text=True, timeout=60,
                          check=True)
    assert "a.warning.line" in done.stderr and "an.info.line" not in done.stderr


RACE = """
import sys, threading
sys.setswitchinterval(1e-6)
from playlisteval import logs
logs.configure(0)
loggers = [logs.get_logger(f"playlisteval.t{i}") for i in range(16)]
start = threading.Barrier(16)

def write(log):
    start.wait()
    log.warning("a.warning.line")

threads = [threading.Thread(target=write, args=(log,)) for log in loggers]
for t in threads:
    t.start()
for t in threads:
    t.join()
"""


def test_threads_logging_at_once_all_wait_for_the_setup() -> None:
    """The first line loads and configures structlog; a thread that logs meanwhile must not reach structlog
    before that (its unconfigured default prints to stdout, into a command's --json)."""
    for _ in range(3):
        done = subprocess.run([sys.executable, "-c", RACE], capture_output=True, text=True, timeout=60, check=True)
        assert done.stdout == ""
        assert done.stderr.count("a.warning.line") == 16
