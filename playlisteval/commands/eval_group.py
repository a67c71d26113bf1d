"""The `playlisteval eval` group and its scorers of outside results: `eval retrieval`, `eval verdicts`.

Other modules add their own subcommands (`eval judge`, `eval retrieve`, …) to the same group:

    from playlisteval.commands.eval_group import eval_group

    @eval_group.command("judge")
    def judge(...): ...

Those modules must come after this one in ``playlisteval.commands.MODULES`` only for the order of
``--help``; the group is one object, so any import order works.
"""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.table import Table

from playlisteval.cli_support import console

_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)


@click.group("eval")
def eval_group() -> None:
    """Evaluate judges and retrievers on the benchmark, or score results produced elsewhere."""


@eval_group.command("retrieval")
@click.option("--run", "run_path", type=_FILE, required=True,
              help="TREC run file: lines `qid Q0 docid rank score tag`.")
@click.option("--qrels", "qrels_path", type=_FILE, required=True,
              help="TREC qrels file: lines `qid 0 docid rel` (rel > 0 is relevant).")
@click.option("--k", "k", type=click.IntRange(min=1), default=10, show_default=True, help="Cut-off rank.")
@click.option("--json", "as_json", is_flag=True, help='Print {"n_queries", "hit_all", "hit_any", "ndcg"} as JSON.')
def retrieval(run_path: Path, qrels_path: Path, k: int, as_json: bool) -> None:
    """Score a retrieval run in TREC format against qrels (SPEC R2).

    \b
    Per-metric means over the qrels' queries that have a relevant document:
      Hit_all@k  every relevant document is in the top k (Hit_both for two gold segments)
      Hit_any@k  at least one relevant document is in the top k
      nDCG@k     binary relevance, DCG = sum of 1/log2(rank+1), IDCG over min(|relevant|, k)
    A query the run does not answer scores 0. Documents are ranked by score, highest first; equal
    scores keep the order of the run's rank column. A malformed line is an error naming file and line.
    """
    from playlisteval.eval.trec import score_files

    scores = score_files(run_path, qrels_path, k)
    if as_json:
        click.echo(json.dumps(scores.as_json()))
        return
    table = Table(title=f"{run_path.name} against {qrels_path.name}")
    table.add_column("queries", justify="right")
    for name in (f"Hit_all@{k}", f"Hit_any@{k}", f"nDCG@{k}"):
        table.add_column(name, justify="right")
    table.add_row(str(scores.n_queries), f"{scores.hit_all:.4f}", f"{scores.hit_any:.4f}", f"{scores.ndcg:.4f}")
    console.print(table)


@eval_group.command("verdicts")
@click.argument("file", type=_FILE)
@click.option("--json", "as_json", is_flag=True, help='Print {"n", "accuracy", "no_verdict"} as JSON.')
def verdicts(file: Path, as_json: bool) -> None:
    """Score pairwise verdicts made elsewhere: FILE.jsonl, one object a line (SPEC G4, G8).

    \b
    Each line: {"pair_id": …, "verdict": "A" | "B" | null, "a_is_better": true | false}
    Accuracy counts a pick of the better answer 1, of the other 0, and no verdict (null) 0.5; the
    no-verdicts are also counted. A malformed line is an error naming its line number.
    """
    from playlisteval.eval.verdict_scoring import score_file

    scores = score_file(file)
    if as_json:
        click.echo(json.dumps(scores.as_json()))
        return
    table = Table(title=file.name)
    for name in ("pairs", "accuracy", "no verdict"):
        table.add_column(name, justify="right")
    table.add_row(str(scores.n), f"{scores.accuracy:.4f}", str(scores.no_verdict))
    console.print(table)


COMMANDS: list[click.Command] = [eval_group]
