"""Commands that evaluate on the benchmark: eval judge, eval retrieve (`select` and `export`, which draw and
write it, are in commands/selecting.py).

`eval judge` and `eval retrieve` join the `eval` group of ``commands/eval_group.py``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click

from playlisteval.commands.batches import batch_wanted, print_batch_report, run_maybe_batched
from playlisteval.commands.eval_group import eval_group
from playlisteval.commands.eval_output import (
    judge_exit,
    judge_json,
    print_judge_table,
    print_retrieval,
    report_problems,
    report_unhealthy,
    retrieval_exit,
)
from playlisteval.commands.support import console, progress_bar, settings_of


@contextmanager
def _bar(enabled: bool = True, step: str = "eval", unit: str = "pairs") -> Iterator[Any]:
    """``update(stage, done, total)`` moves a bar per stage with rate and ETA (on stderr, when it is a
    terminal), or logs a line per move when piped (-v): cli_support.progress_bar."""
    with progress_bar(step, unit, enabled=enabled) as update:
        yield update


_EVIDENCE = click.Choice(["retrieved", "uniform", "oracle"])
_MODALITY = click.Choice(["frames+transcript", "frames", "transcript", "frames+audio", "audio", "none"])


@eval_group.command("judge")
@click.option("--judge", "judges", multiple=True,
              help="A judge: \"provider/model\", or shortcut/random, shortcut/always-a, shortcut/longer-answer, "
                   "shortcut/transcript-overlap. Repeat for a panel. Default: [eval] panel.")
@click.option("--benchmark", default=None, help="Benchmark name (default: [select] benchmark).")
@click.option("--evidence", type=_EVIDENCE, default=None,
              help="retrieved: top chunks by the retriever, 2 frames each; uniform: frames evenly over the corpus; "
                   "oracle: the two gold segments only (SPEC G1).")
@click.option("--scope", default=None, help="Corpus: domain, oracle, or a frozen corpus of [eval] scopes (24h, 10h).")
@click.option("--swap", is_flag=True, help="Show every pair on the other side (the position-bias pass, SPEC G5).")
@click.option("--modality", type=_MODALITY, default=None, help="What the judge gets besides the question (SPEC G6).")
@click.option("--frames", type=click.IntRange(min=1), default=None, help="Frames per judgment (default 128).")
@click.option("--size", default=None, help="Frame size WxH they fit inside (default 640x480).")
@click.option("--thinking", type=click.Choice(["minimal", "low", "medium", "high"]), default=None,
              help="Thinking level / reasoning effort.")
@click.option("--media-resolution", type=click.Choice(["low", "medium", "high"]), default=None,
              help="Media resolution (Gemini).")
@click.option("--audio-speed", type=float, default=None, help="Playback speed of the chunks' audio: 1.0, 1.5, 2.0.")
@click.option("--audio-mode", type=click.Choice(["track", "turns"]), default=None,
              help="One merged audio track with pauses, or one audio part per chunk.")
@click.option("--retriever", default=None, help="Embedder that ranks chunks for retrieved evidence.")
@click.option("--agentic", is_flag=True, default=False,
              help="The judge finds its own evidence with tools: search, frames of a range, transcript of a range "
                   "(SPEC G6; [eval] agent_max_steps / agent_max_tokens per pair).")
@click.option("--samples", type=click.IntRange(min=1), default=1, show_default=True,
              help="Ask each pair N times (each sample its own run, at --temperature): expected and consensus "
                   "accuracy and consistency over the samples (issue 21).")
@click.option("--temperature", type=click.FloatRange(0, 2), default=None,
              help="Sampling temperature asked of the judge (default: the provider's; needed by --samples).")
@click.option("--budget", type=click.FloatRange(min=0), default=None,
              help="USD judge runs' calls may spend, all runs of this store together (0 = none; "
                   "default: [eval] budget_usd).")
@click.option("--batch/--no-batch", "use_batch", default=None,
              help="Send the judges' calls through their provider's batch API (half price, answers within 24 h; "
                   "the command waits up to [batch] wait_s, and running it again collects what was still "
                   "running). Default: on when [batch] roles lists G.")
@click.option("--wait/--no-wait", default=True,
              help="With a Redis broker: wait for the `playlisteval worker` processes to judge every question "
                   "(default), or send the questions and return at once with the runs as they stand.")
@click.option("--max-pairs", type=click.IntRange(min=1), default=None,
              help="Judge only the benchmark's first N pairs, ordered by content key (the same N on any store); "
                   "the run stays incomplete and the same command without it goes on (issue 42).")
@click.option("--json", "as_json", is_flag=True, help="Print each run's summary as a JSON line.")
@click.pass_context
def judge_cmd(ctx: click.Context, judges: tuple[str, ...], benchmark: str | None, evidence: str | None,
              scope: str | None, swap: bool, modality: str | None, frames: int | None, size: str | None,
              thinking: str | None, media_resolution: str | None, audio_speed: float | None,
              audio_mode: str | None, retriever: str | None, budget: float | None, use_batch: bool | None,
              wait: bool, as_json: bool, agentic: bool = False, samples: int = 1,
              temperature: float | None = None, max_pairs: int | None = None) -> None:
    """Run judges over the benchmark's pairs with the G4 prompt (SPEC G).

    Each judge with these options is one run, named by a hash of its options (`eval runs` lists them);
    asking again continues it: pairs already judged are not paid for twice, and pairs whose call failed
    are asked again. A reply without [[A]] or [[B]] scores 0.5 and is counted as no verdict; a failed
    call (provider error, missing key, quota, budget) is an error, never a score: accuracy is over the
    judged pairs, with the errors counted beside it. The run with the configured [eval] options is the
    judge's main run (the leaderboard's); any other is a sweep.

    \b
    With --samples N --temperature T each judge is asked N times (N runs, sample 0 … N-1, each a new
    request); its last run's JSON line carries ``stability``: expected and consensus accuracy and the
    share of pairs whose samples all agree, with intervals (analytics/stability.py).

    \b
    Verdict health: beside each run's accuracy, its replies without a verdict (refusals and ties among
    them) and the share of verdicts that are A. A run with more than [analytics] max_no_verdict_share
    (0.2) no verdict, or more than max_one_letter_share (0.9) of its verdicts one letter, is flagged
    UNHEALTHY with a warning naming it: its accuracy is not a measurement of judging.

    \b
    Exit status: 0 every pair judged (with --max-pairs N: the first N); 3 errors or pairs left (run again);
    4 stopped by the budget (the same command with a higher --budget goes on);
    6 every pair judged, but a run is flagged for replies without a verdict (one-letter answering is
    warned about only: a position-biased judge is a finding, and shortcut/always-a is one by design).
    """
    from dataclasses import replace

    from playlisteval.analytics.provenance import provenance
    from playlisteval.analytics.verdict_health import judge_run_checks
    from playlisteval.benchmark.names import check_judge_name
    from playlisteval.commands.sampling import print_stability, sample_stability
    from playlisteval.eval.judge import run_judge
    from playlisteval.eval.options import JudgeOptions, parse_size
    from playlisteval.models.preflight import check_judges
    from playlisteval.models.simulated import is_simulated
    from playlisteval.store import open_store

    settings = settings_of(ctx)
    # a judge's name goes into the leaderboard, the report and the dataset card: one line of printable text,
    # refused here before any check names it raw (issue 44)
    judges = tuple(check_judge_name(j) for j in judges)
    # every judge's SDK, key and price, and no sim judge on real videos: before any run is created
    check_judges(settings, judges or settings.eval.panel, open_store(settings))
    if budget is not None:
        settings.eval.budget_usd = budget
    # the options not given default to the benchmark's stored main-run protocol, not this shell's [eval]
    # (issue 22: `protocol set` changes it); a benchmark without one keeps the configured options
    from playlisteval.benchmark.pairs import find_benchmark
    from playlisteval.store import protocol

    engine = open_store(settings)
    chosen = find_benchmark(engine, benchmark or settings.select.benchmark)
    settings = protocol.applied(settings, protocol.stored(engine, int(chosen.id or 0)))
    options = JudgeOptions.from_settings(
        settings, evidence=evidence, scope=scope, swap=swap, modality=modality, frames=frames,
        size=parse_size(size) if size else None, thinking=thinking, media_resolution=media_resolution,
        audio_speed=audio_speed, audio_mode=audio_mode, retriever=retriever, agentic=agentic or None,
        temperature=temperature)
    if samples > 1 and temperature is None:
        raise click.UsageError("--samples N needs --temperature T: the samples of a judge are drawn at one temperature")
    if samples > 1 and agentic:
        raise click.UsageError("--samples with --agentic: an agent's turns are not asked as separate samples yet")
    if agentic and use_batch:
        raise click.UsageError("--agentic asks turn by turn, each after the last one's tools ran: not by --batch")
    if agentic and any(j.startswith("shortcut/") for j in judges or settings.eval.panel):
        raise click.UsageError("--agentic needs a model judge: a shortcut judge calls no model and no tool")
    summaries = []
    health: dict[int, Any] = {}  # run → its verdict health (issue 40), for the table, warnings and exit status
    sampled = [(judge, sample) for judge in judges or tuple(settings.eval.panel) for sample in range(samples)]
    for judge, sample in sampled:
        run_options = replace(options, sample=sample) if temperature is not None else options
        with _bar(not as_json) as update:
            def tick(done: int, total: int, name: str = judge) -> None:
                update(name, done, total)

            batched = batch_wanted(settings, ("G",), use_batch) and not judge.startswith("shortcut/") and not agentic
            def work(runner: Any, name: str = judge, step: Any = tick, opts: Any = run_options) -> Any:
                return run_judge(settings, name, opts, benchmark, runner=runner, tick=step, wait=wait,
                                 max_pairs=max_pairs)

            summary, batches = run_maybe_batched(settings, ("G",), batched, work)
        print_batch_report(batches, stderr=as_json)
        summaries.append(summary)
        if samples > 1 and sample == samples - 1:  # the judge's last sample: its stability (issue 21)
            runs = [x.run_id for x in summaries[-samples:]]
            figures = sample_stability(settings, int(chosen.id or 0), judge, runs)
            if not as_json:
                print_stability(figures)
        if as_json:
            intervals, checked = judge_run_checks(settings, [summary.run_id])
            cis = intervals[summary.run_id]
            health.update(checked)
            extra: dict[str, Any] = {"simulated": is_simulated(open_store(settings)),
                                     "provenance": provenance(open_store(settings), settings, int(chosen.id or 0))}
            if agentic:  # every tool call of the run, per pair (issue 20)
                from playlisteval.eval.agent_record import run_tool_calls

                extra["agent"] = run_tool_calls(open_store(settings), summary.run_id)
            if temperature is not None:
                extra["sample"] = sample
                extra["temperature"] = temperature
            if samples > 1 and sample == samples - 1:
                extra["stability"] = figures
            click.echo(json.dumps({**judge_json(summary, cis, health.get(summary.run_id)), **extra}))
    if not as_json:
        intervals, checked = judge_run_checks(settings, [s.run_id for s in summaries])
        health.update(checked)
        print_judge_table(summaries, options, intervals, health)
        if is_simulated(open_store(settings)):
            console.print("[yellow]simulated:[/] a benchmark or judge of the sim world: these accuracies test the "
                          "machinery only")
    for summary in summaries:
        if as_json:
            report_problems(summary)  # on stderr: the JSON lines stay alone on stdout
    report_unhealthy(summaries, health)  # last, loud: a broken judge is never read as a chance-level one
    code = judge_exit(summaries, health)
    if max_pairs is not None:  # done when the first N pairs are judged (issue 42)
        from playlisteval.commands.judge_bounds import bounded_exit

        code = bounded_exit(open_store(settings), summaries, health, max_pairs, code)
    ctx.exit(code)


@eval_group.command("retrieve")
@click.option("--embedder", default=None, help="Retriever to evaluate (default: [index] embedder); "
                                               "its chunk vectors are computed where missing.")
@click.option("--benchmark", default=None, help="Benchmark whose sampled questions are ranked (default: [select] "
                                                "benchmark).")
@click.option("--all", "all_items", is_flag=True, help="Rank for every accepted question instead.")
@click.option("--variant", metavar="NAME", default=None,
              help="Score the retriever variant NAME (`playlisteval index --variant NAME --modality …`: another "
                   "embedder, modality, frames per chunk or width, stored beside the default vectors).")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.pass_context
def retrieve_cmd(ctx: click.Context, embedder: str | None, benchmark: str | None, all_items: bool,
                 as_json: bool, variant: str | None = None) -> None:
    """Rank each question's domain segments by the mean of their 3 best chunk similarities (SPEC R1) and
    store the ranks of the two gold segments; prints Hit_both@k, Hit_any@k and nDCG@k (SPEC R2). A
    question that cannot be ranked is an error, left out of the means and counted (exit status 3).
    Questions run in blocks of up to 64, each embedded as one batch: on worker threads here, or on
    `playlisteval worker` processes with a Redis broker."""
    from playlisteval.analytics.rates import retrieval_run_intervals
    from playlisteval.eval.retrieval import run_retrieval

    settings = settings_of(ctx)
    with _bar(not as_json, "eval retrieve", "questions") as update:
        s = run_retrieval(settings, embedder, benchmark, all_items=all_items, tick=update, variant=variant)
    cis = retrieval_run_intervals(settings, s.run_id)  # issue 9: every rate with its interval
    if as_json:
        click.echo(json.dumps({**vars(s), **{f"{k}_ci": v.as_dict() if v else None for k, v in cis.items()}}))
    else:
        print_retrieval(s, cis)
    ctx.exit(retrieval_exit(s))


COMMANDS: list[click.Command] = []  # `eval judge` and `eval retrieve` join eval_group (commands/eval_group.py)
