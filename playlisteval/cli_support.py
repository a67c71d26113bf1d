"""What every command module shares: the consoles and the project's settings."""

from __future__ import annotations

from typing import Any

import click
from rich.console import Console

from playlisteval.config import Settings, load_settings

console = Console()
err_console = Console(stderr=True)


def settings_of(ctx: click.Context) -> Settings:
    """The settings of the project chosen with --project (or found from the working directory)."""
    obj: dict[str, Any] = ctx.find_root().obj or {}
    return load_settings(obj.get("project"))
