"""The CLI's commands loaded when they run, not at each start (issue 26: a bare `--help` <= 0.3 s).

Importing every command module at start pulled in the store's ORM, pydantic's settings, structlog and
rich's progress bars — 0.5 s of every `playlisteval` process, `--help` included. ``LazyGroup`` knows each
command by name, the modules that define it and its one-line summary; a command's module is imported
only when that command is invoked (or its own `--help` is asked for). The summaries are a copy of each
command's docstring's first paragraph: tests/test_cli_start.py checks the table against the loaded
commands (names, order, summaries), so a new or reworded command cannot drift from `--help`.
"""

from __future__ import annotations

import importlib

import click

#: name -> (modules to import, first the one whose ``COMMANDS`` holds it; the summary shown by `--help`).
#: `eval` needs commands/evaluate.py too: it adds `eval judge` and `eval retrieve` to the group.
LAZY: dict[str, tuple[tuple[str, ...], str]] = {
    'synth': (('collection',), 'Write synthetic playlists for the offline sim world.'),
    'add': (('collection',), 'Add videos to DOMAIN: each folder is a playlist; a file joins the '
                             'playlist of its folder.'),
    'index': (('collection',), 'Index what is new: 30-s chunks, transcripts, on-screen text, vectors,'
                               ' then segments, near-duplicates and seeds.'),
    'search': (('search',), 'The top chunks for a text QUERY, with their video, start and end '
                            'seconds and score (cosine).'),
    'remove': (('remove',), 'Take videos out of the collection: VIDEOS (files, or folders: every '
                            'video under them), --playlist DOMAIN/PLAYLIST or --domain DOMAIN.'),
    'build': (('building',), 'Create an item for every seed that has none and run the items through '
                             'the state machine.'),
    'resume': (('building',), 'Re-enqueue every unfinished item whose lease has expired (after a '
                              'crash, a stop or a budget pause).'),
    'retry-failed': (('building',), 'Put failed items back in the state they failed in, and resume '
                                    'them.'),
    'status': (('building',), 'Items per state, attempts, gate rejections, model calls and spend '
                              'against the budget.'),
    'worker': (('building',), 'Work the Redis queues (build items, index videos, the questions of '
                              "`select`'s difficulty gate and of `eval judge` runs) until stopped; "
                              'SIGTERM/SIGINT stop it cleanly.'),
    'eval': (('eval_group', 'evaluate', 'judge_checks', 'eval_import', 'eval_rescore', 'eval_export'),
             'Evaluate judges and retrievers on the benchmark, or score results produced elsewhere.'),
    'select': (('selecting',), 'Draw the benchmark from the accepted items (SPEC F).'),
    'export': (('selecting',), 'Write the benchmark to OUT: data/test.parquet, data/test.jsonl, '
                              'README.md (a dataset card with the SPEC F4 statistics) and stats.json.'
                              ' Load it with `datasets.load_dataset("parquet", '
                              'data_files="OUT/data/test.parquet")`.'),
    'sql': (('analytics',), "Run a read-only SQL QUERY (DuckDB dialect) over the store's tables and "
                            'the analytics views.'),
    'report': (('analytics',), 'Write the analytics as one self-contained HTML page OUT, and print '
                               'the leaderboard.'),
    'leaderboard': (('analytics',), 'Print the judge leaderboard: accuracy with retrieved and uniform'
                                    ' evidence, and the difference.'),
    'funnel': (('funnel',), 'Per gate (C1, C2.1, C2.2, C3, D2, D3, D4): attempts seen (decided), '
                            'passed and rejected, the top reasons for rejecting, and checker faults '
                            "(the gate's own model gave no usable reply: nothing was decided and the "
                            'step was tried again); items per state; the most attempts any seed used '
                            "per phase; the fps the video gates' clips got beside the SPEC's (frames sent per "
                            'second covered, or the rate a video file was sampled at); attempts and cost per '
                            'accepted question. An unreadable '
                            "generator reply counts against its phase's structural gate (C1, D2)."),
    'models': (('models',), 'Inspect the models each role uses.'),
    'cost': (('cost',), 'Money: what a build is expected to cost.'),
    'batches': (('batches',), 'The open batches: provider, state, requests answered, age and expected '
                             'cost (at the batch price).'),
    'show': (('show',), "One item's whole story: seed, segments, every attempt with its output, gate "
                        'verdicts and the feedback the next attempt received, transitions, model '
                        'calls with tokens, latency and dollars.'),
    'human': (('human',), "Check a benchmark's intended answers with people (SPEC H)."),
    'power': (('trust',), 'The minimum detectable difference (MDE) between two judges on this benchmark, per '
                          'clustering unit.'),
    'protocol': (('versions',), "The protocol of a benchmark's main runs: the [eval] options (evidence, "
                                "scope, frames, size, thinking, …) a judge's main run is made with, stored "
                                'with the benchmark.'),
    'versions': (('versions',), "List a benchmark's versions: number, pairs, content hash (sha256 of its "
                                "export's data/test.jsonl), what made it, and whether it is live or kept as a "
                                'frozen copy.'),
    'check': (('trust',), 'Re-read every video the benchmark uses (size, SHA-256) and report the missing or '
                          'changed ones.'),
    'media-root': (('media_roots',), 'Folders outside the project that videos are stored under by name, so that '
                                     'moving the media (or opening a copy of the project where they are mounted '
                                     'elsewhere) is one command.'),
    'describe': (('domains',), "Set DOMAIN's DESCRIPTION (what its playlists cover), or list every domain's "
                               'when none is given.'),
    'view': (('view',), 'Browse the store in a web browser until stopped (Ctrl-C): the leaderboard with '
                        'intervals, runs and sweeps, the gate funnel with its reasons, every item\'s story, and '
                        'a card per benchmark pair (the question, the gold with its citations linked into the '
                        'clips, the graded answers with their differences and causal records, the frames each '
                        'judge was served, every verdict), with filters.'),
    'ps': (('operations',), 'List the worker processes that hold work now: build items, videos being indexed, '
                            'select and judge jobs, with how many each holds, which, and its last heartbeat.'),
    'parked': (('operations',), 'List the work that stopped and waits for a person, of every kind, grouped by '
                                'reason: failed build items, videos refused by `add`/`index`, failed select and '
                                'judge jobs — each group with the command that replays it.'),
    'cancel': (('operations',), 'Cancel a running build, index, select, or judge (retrieve) run RUN_ID, on every '
                                'machine.'),
    'gates': (('gate_shares',), 'Per gate: questions decided, the share rejected with its 95% interval (clustered '
                                'by question), and the source of the decisions: "real" (no sim model '
                                'among the gate\'s calls), "simulated" or "mixed". Checker faults decided nothing and '
                                "are counted apart. Below: each local (llama) model's speed per role."),
}


def summary(command: click.Command) -> str:
    """The first paragraph of a command's help, on one line: what `--help` shortens to fit its column."""
    if command.short_help:
        return command.short_help
    text = (command.help or "").split("\n\n", 1)[0]
    return " ".join(text.split())


def load(name: str) -> click.Command | None:
    """The command ``name``, its modules imported now. A name the table does not hold (a command added to a
    module but not yet to ``LAZY``) is looked for in every module of ``commands.MODULES``: it still runs,
    only the bare `--help` misses it until the table has it (the test says so)."""
    from playlisteval.commands import MODULES

    modules = LAZY[name][0] if name in LAZY else MODULES
    loaded = [importlib.import_module(f"playlisteval.commands.{m}") for m in modules]
    return next((c for module in loaded for c in module.COMMANDS if c.name == name), None)


class LazyGroup(click.Group):
    """A group whose table-listed commands load on first use; commands added directly work as usual."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *LAZY})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        found = super().get_command(ctx, cmd_name)
        if found is None and (found := load(cmd_name)) is not None:
            self.add_command(found)
        return found

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """As click's, with each lazy command's summary from the table (nothing imported to list them)."""
        rows: list[tuple[str, click.Command]] = []
        for name in self.list_commands(ctx):
            if name in self.commands:
                if not self.commands[name].hidden:
                    rows.append((name, self.commands[name]))
            else:  # a stand-in that shortens the summary as click shortens a command's help
                rows.append((name, click.Command(name, help=LAZY[name][1])))
        if not rows:
            return
        limit = formatter.width - 6 - max(len(name) for name, _ in rows)
        shown = [(name, cmd.get_short_help_str(limit)) for name, cmd in rows]
        with formatter.section("Commands"):
            formatter.write_dl(shown)
