"""The scope figure with every protocol apart (issue 20 deliverable 2, paper Fig. 4) and the sweeps' tokens
and dollars (deliverable 6, paper Tables 3, 16, 17), checked for their shape on a small judged project."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from playlisteval.analytics import Analytics, rate_sections, scope_figure
from playlisteval.analytics.rates import Bootstrap
from playlisteval.store import open_store
from tests.judged_project import cli, copy_of, json_lines, make_selected


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> Any:
    selected = make_selected(tmp_path_factory.mktemp("scope"))
    settings = copy_of(selected, tmp_path_factory.mktemp("scope-copy"))
    runs = {}
    for args in ([], ["--evidence", "uniform"], ["--evidence", "oracle"], ["--scope", "oracle"],
                 ["--evidence", "uniform", "--scope", "oracle"], ["--frames", "4"]):
        [run] = json_lines(cli(settings, "eval", "judge", "--judge", "sim/judge", *args, "--json"))
        runs[" ".join(args) or "main"] = run
    return settings, runs


def _svg(uri: str) -> str:
    return base64.b64decode(uri.split(",", 1)[1]).decode()


def test_every_protocol_is_its_own_point_and_steps_count_each_pair_once(judged: Any) -> None:
    settings, runs = judged
    pairs = runs["main"]["pairs"]
    with Analytics(open_store(settings), settings) as an:
        boot = Bootstrap.of(settings)
        points = scope_figure.protocol_accuracy(an, None, boot)
        section = rate_sections.scope(an, None, boot, settings.analytics.scope_order)
        steps = scope_figure.protocol_steps(an, None, boot, points, settings.analytics.scope_order)
    got = {(r["line"], r["scope"]): r["n"] for r in points}
    # oracle evidence is apart from retrieved evidence at the oracle scope; uniform has its own line
    assert got == {("retrieved", "domain"): pairs, ("retrieved", "oracle"): pairs, ("uniform", "domain"): pairs,
                   ("uniform", "oracle"): pairs, ("oracle evidence", "oracle"): pairs}
    assert {(s["line"], s["from"], s["to"]) for s in steps} == {("retrieved", "oracle", "domain"),
                                                                ("uniform", "oracle", "domain")}
    assert all(s["n"] == pairs for s in steps)  # each pair once: never more pairs in both than pairs
    [(_, table), (_, step_table)] = section.tables
    assert table.headers == ["Judge · evidence", "oracle evidence", "oracle", "domain"]
    assert sorted(row[0] for row in table.rows) == ["sim/judge (simulated) · oracle evidence",
                                                    "sim/judge (simulated) · retrieved",
                                                    "sim/judge (simulated) · uniform"]
    assert "Evidence" in step_table.headers and len(step_table.rows) == 2
    [(_, figure)] = section.figures
    svg = _svg(figure)
    assert svg.count('stroke-dasharray="4 3"') == 2  # the uniform line and its legend key
    assert "sim/judge (simulated) · oracle evidence" in svg


def test_an_agentic_run_is_a_point_of_its_own(judged: Any, tmp_path: Path) -> None:
    """A run whose settings say agentic=true (issue 20 deliverable 3, made by `eval judge --agentic`) is drawn
    as its own line; made here by marking a copy of the main run, as that command is another's work."""
    settings, runs = judged
    engine = open_store(settings)
    from sqlalchemy import text
    from sqlmodel import select

    from playlisteval.store import transaction
    from playlisteval.store.tables import JudgeRun, Judgment
    with transaction(engine) as s:
        main = s.get(JudgeRun, runs["main"]["run_id"])
        assert main is not None
        data = main.model_dump(exclude={"id"})
        agentic = JudgeRun(**{**data, "settings": {**main.settings, "agentic": True}, "options_hash": "agentic-test"})
        s.add(agentic)
        s.flush()
        new = int(agentic.id or 0)
        for j in s.exec(select(Judgment).where(Judgment.run_id == main.id)).all():
            s.add(Judgment(**{**j.model_dump(exclude={"id"}), "run_id": new}))
    try:
        with Analytics(engine, settings) as an:
            points = scope_figure.protocol_accuracy(an, None, Bootstrap.of(settings))
        assert ("agentic", "domain") in {(r["line"], r["scope"]) for r in points}
    finally:
        with engine.begin() as c:
            c.execute(text("DELETE FROM judgment WHERE run_id = :n"), {"n": new})
            c.execute(text("DELETE FROM judge_run WHERE id = :n"), {"n": new})


def test_sweeps_show_prompt_and_output_tokens_and_dollars_beside_accuracy(judged: Any) -> None:
    settings, runs = judged
    with Analytics(open_store(settings), settings) as an:
        section = rate_sections.sweeps(an, None, Bootstrap.of(settings))
        from playlisteval.analytics.run_cost import run_costs
        costs = run_costs(an, [runs["main"]["run_id"], runs["--frames 4"]["run_id"]])
    [(_, table)] = section.tables
    for head in ("Accuracy % [CI]", "Prompt tok./pair", "Output tok./pair", "$", "Main prompt tok./pair", "Main $"):
        assert head in table.headers
    [row] = [r for r in table.rows if "frames=4" in " ".join(map(str, r))]
    cell = dict(zip(table.headers, row, strict=True))
    main, sweep = costs[runs["main"]["run_id"]], costs[runs["--frames 4"]["run_id"]]
    assert main["simulated"] and sweep["simulated"] and "simulated calls" in section.note
    assert sweep["prompt_tokens"] < main["prompt_tokens"]  # 4 frames cost fewer prompt tokens than 8
    assert cell["Prompt tok./pair"] == f"{int(sweep['prompt_tokens']):,}"
    assert cell["Main prompt tok./pair"] == f"{int(main['prompt_tokens']):,}"
    assert main["calls"] == runs["main"]["pairs"] and main["output_tokens"] > 0


def test_evaluation_cost_per_pass_is_split_by_protocol(judged: Any) -> None:
    """Issue 41: the report's per-pass cost is one row per protocol (the main run, each sweep), each row's
    per-pass dollars that protocol's run's own — never a mean of the main pass with the sweeps."""
    settings, runs = judged
    from playlisteval.analytics.report import _cost as report_cost
    from playlisteval.analytics.run_cost import run_costs

    with Analytics(open_store(settings), settings) as an:
        costs = run_costs(an, [r["run_id"] for r in runs.values()])
        rows = {r["protocol"]: r for r in an.rows("SELECT * FROM eval_cost_by_judge WHERE judge = 'sim/judge'")}
        section = report_cost(an)
    main, sweep = rows["retrieved · domain · main"], rows["retrieved · domain · sweep: frames=4"]
    assert main["main"] and not sweep["main"] and (main["passes"], sweep["passes"]) == (1, 1)
    assert main["spend_per_pass"] == pytest.approx(costs[runs["main"]["run_id"]]["usd"])
    assert sweep["spend_per_pass"] == pytest.approx(costs[runs["--frames 4"]["run_id"]]["usd"])
    assert main["spend_per_pass"] != pytest.approx(sweep["spend_per_pass"])  # 8 frames cost more than 4
    assert {"uniform · domain · main", "oracle · oracle · main", "retrieved · oracle · main"} <= set(rows)
    [(_, table)] = [(title, t) for title, t in section.tables if "protocol" in title]
    assert "Protocol" in table.headers and any("sweep: frames=4" in " ".join(map(str, r)) for r in table.rows)

