"""The standard library's half of the log setup: no structlog, so it runs at every command's start.

dramatiq's, redis's and the SDKs' lines go through the root logger; the handler set here redacts them
(issue 25) and looks ``sys.stderr`` up at each write, so a replaced or closed stderr (pytest's capture, a
daemonised worker) never breaks logging later on. It must be in place before any of those libraries logs,
which is why it is not deferred with structlog (lazy.py).
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

from playlisteval.logs.redaction import redact

_configured = logging.WARNING  # what configure_stdlib last set (issue 44: tracebacks of outages at debug only)


def configured_level() -> int:
    """The lowest level this process writes, as the command's -v set it (warnings when not set)."""
    return _configured


def level_of(verbosity: int) -> int:
    """The lowest level written at ``-v`` × verbosity: warnings by default, info at -v, debug at -vv."""
    return logging.WARNING - 10 * min(max(verbosity, 0), 2)


class CurrentStderrHandler(logging.StreamHandler):
    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, _value: Any) -> None:  # StreamHandler.__init__ assigns it; ignore
        pass

    def format(self, record: logging.LogRecord) -> str:
        """dramatiq's, redis's and the SDKs' lines redacted like ours (an SDK may log a request URL)."""
        return redact(super().format(record))


def quiet_third_party_bars(verbosity: int) -> None:
    """Third-party progress bars (transformers' "Loading weights", huggingface_hub downloads, tqdm in the
    libraries we call) stay off unless -v: they would leak into piped output and mix with our own bars.
    Set before those libraries are imported (they read it at import); an explicit setting is kept."""
    if verbosity > 0:
        return
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TQDM_DISABLE", "1")
    if "transformers" in sys.modules:  # already imported (a long-lived process): turn its bars off too
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()


def configure_stdlib(verbosity: int) -> None:
    """The root logger's redacting handler and level, dramatiq's level, third-party bars."""
    global _configured
    quiet_third_party_bars(verbosity)
    level = _configured = level_of(verbosity)
    root = logging.getLogger()
    if not any(isinstance(h, CurrentStderrHandler) for h in root.handlers):
        root.addHandler(CurrentStderrHandler())
    root.setLevel(max(level, logging.WARNING))
    logging.getLogger("dramatiq").setLevel(max(level, logging.WARNING))
