"""The CLI's commands, one module per area. Each module lists its commands in ``COMMANDS``."""

from __future__ import annotations

import importlib

import click

# one module per area of the tool; add a module here to add its commands to `playlisteval`
MODULES = ("collection", "search", "remove", "building", "eval_group", "evaluate", "selecting", "analytics",
           "funnel", "models", "cost", "batches", "show", "human", "trust", "versions", "judge_checks", "domains",
           "view", "gate_shares", "eval_import", "eval_rescore", "operations", "eval_export", "media_roots")


def all_commands() -> list[click.Command]:
    commands: list[click.Command] = []
    for name in MODULES:
        module = importlib.import_module(f"playlisteval.commands.{name}")
        commands.extend(module.COMMANDS)
    return commands
