"""What every command module shares: the consoles, the project's settings, JSON output and progress.

Output goes where a script expects it: results (tables, or JSON with ``--json``) on stdout; progress
bars, warnings and logs on stderr, so ``playlisteval index --json | jq`` reads clean JSON.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import click
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from playlisteval.config import Settings, load_settings
from playlisteval.logs import get_logger

console = Console()
err_console = Console(stderr=True)
log = get_logger("playlisteval.progress")

#: update(task, done, total): what a long step calls as its units of work finish
Update = Callable[[str, int, int], None]


def settings_of(ctx: click.Context) -> Settings:
    """The settings of the project chosen with --project (or found from the working directory)."""
    obj: dict[str, Any] = ctx.find_root().obj or {}
    return load_settings(obj.get("project"))


USD_DECIMALS = 10  # a ten-billionth of a dollar: below any per-token price, above float sums' noise


def money_rounded(data: Any, key: str = "") -> Any:
    """``data`` with every amount in dollars (a key ending in ``usd``) rounded to ``USD_DECIMALS``: sums of
    per-token prices leave float noise (issue 44: `status --json` printed ``3.1e-17`` dollars reserved, and
    ``-2.1e-17``). Zero is 0.0, never -0.0."""
    if isinstance(data, dict):
        return {k: money_rounded(v, str(k)) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [money_rounded(v, key) for v in data]
    if isinstance(data, float) and key.lower().endswith("usd"):
        return round(data, USD_DECIMALS) + 0.0
    return data


def emit_json(data: Any) -> None:
    """One JSON document on stdout (the shapes are in README "Output as JSON"); dollar amounts rounded
    (``money_rounded``)."""
    click.echo(json.dumps(money_rounded(data), default=str, ensure_ascii=False))


class _Rate(ProgressColumn):
    """Units per second (per minute when slower than one a second)."""

    def render(self, task: Task) -> Text:
        unit = task.fields.get("unit", "")
        speed = task.finished_speed or task.speed
        if not speed:
            return Text(f"– {unit}/s", style="progress.data.speed")
        shown = f"{speed:.1f} {unit}/s" if speed >= 1 else f"{speed * 60:.1f} {unit}/min"
        return Text(shown, style="progress.data.speed")


class StepProgress:
    """Progress of a long step, one task per name: a Rich bar with rate and ETA when stderr is a terminal;
    otherwise one structured log line each time a task moves (``playlisteval -v``, or
    PLAYLISTEVAL_LOG_JSON=1 for JSON lines), so piped output carries no bar."""

    def __init__(self, step: str, unit: str, *, enabled: bool = True, on: Console | None = None) -> None:
        """``unit``: what a task counts ("" when each task's name is its unit: videos, chunks, …); ``on``: the
        console of the bar (stderr's by default; a caller that shows the bar inside its own live display
        passes that display's console and renders ``bar`` there, without entering this)."""
        self.step, self.unit = step, unit
        on = on or err_console
        self.terminal = enabled and on.is_terminal
        self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), _Rate(),
                            TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(),
                            console=on, transient=True, disable=not self.terminal)
        self._tasks: dict[str, Any] = {}
        self._seen: dict[str, tuple[int, float, int]] = {}  # task → (last done, started at, done at start)

    def update(self, task: str, done: int, total: int) -> None:
        if self.terminal:
            if task not in self._tasks:
                self._tasks[task] = self.bar.add_task(task, total=total, unit=self.unit or task)
            self.bar.update(self._tasks[task], completed=done, total=total)
            return
        last, started, first = self._seen.get(task, (-1, time.monotonic(), done))
        if done == last:
            return
        self._seen[task] = (done, started, first)
        elapsed = time.monotonic() - started
        rate = (done - first) / elapsed if elapsed > 0 and done > first else None
        eta = round((total - done) / rate, 1) if rate else None
        log.info("progress", step=self.step, task=task, done=done, total=total, unit=self.unit or task,
                 rate_per_s=round(rate, 3) if rate else None, eta_s=eta)

    def __enter__(self) -> StepProgress:
        self.bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bar.stop()


@contextmanager
def progress_bar(step: str, unit: str, *, enabled: bool = True) -> Iterator[Update]:
    """``with progress_bar("index", "chunks") as update: … update(task, done, total)``; see StepProgress."""
    with StepProgress(step, unit, enabled=enabled) as progress:
        yield progress.update
