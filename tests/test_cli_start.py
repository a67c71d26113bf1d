"""The CLI starts without loading its commands (issue 26): commands/lazy.py's table against the commands."""

from __future__ import annotations

import importlib

import click
from click.testing import CliRunner

from playlisteval.cli import main
from playlisteval.commands import all_commands
from playlisteval.commands.lazy import LAZY, summary


def test_the_lazy_table_names_every_command_with_its_summary() -> None:
    loaded = {c.name: c for c in all_commands()}
    assert set(LAZY) == set(loaded)
    for name, (modules, short) in LAZY.items():
        assert short == summary(loaded[name]), name
        defining = importlib.import_module(f"playlisteval.commands.{modules[0]}")
        assert loaded[name] in defining.COMMANDS, name


def test_the_lazy_help_reads_as_the_eager_one() -> None:
    """`--help` lists the same lines as a group with every command loaded."""
    eager = click.Group(name=main.name, callback=main.callback, params=main.params, help=main.help,
                        context_settings=main.context_settings)
    for command in [*all_commands(), main.commands["init"]]:
        eager.add_command(command)
    lazy_out = CliRunner().invoke(main, ["--help"], terminal_width=100).output
    eager_out = CliRunner().invoke(eager, ["--help"], terminal_width=100).output
    assert lazy_out == eager_out
    assert "  status  " in lazy_out and "  eval  " in lazy_out


def test_a_lazy_command_and_a_subcommand_from_another_module_run() -> None:
    """`eval judge` is added to the `eval` group by commands/evaluate.py: loading `eval` loads it too."""
    runner = CliRunner()
    result = runner.invoke(main, ["eval", "judge", "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.output
    assert runner.invoke(main, ["no-such-command"]).exit_code == 2
