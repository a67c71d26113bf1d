"""`playlisteval funnel` over a sim build with error rates on: every gate rejects at least once and the
funnel shows it, in the JSON shape of issue 5; the limits hold over the whole store."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pytest
from click.testing import CliRunner
from sqlalchemy import text
from sqlmodel import Session, select

from playlisteval.actors.build_run import build
from playlisteval.cli import main
from playlisteval.commands.funnel import GATES, funnel, funnel_sql, per_accepted, reason_kind
from playlisteval.config import Settings
from playlisteval.store import forget_engines, open_store
from playlisteval.store.states import State
from playlisteval.store.tables import Item
from tests.builder_helpers import app_with, check_limits, fixed_worlds
from tests.helpers import project, seeded_store

SEEDS = 30
NOISY = {  # the sim's error rates, raised so that 30 seeds meet every gate's failure several times over
    "sim__transcript_answerable": 0.35, "sim__parametric_answerable": 0.6, "sim__bad_citation": 0.15,
    "sim__ungrounded": 0.2, "sim__narrated_degradation": 0.35, "sim__wrong_severity": 0.3,
    "sim__malformed_json": 0.15, "build__malformed_retries": 0,
}


@pytest.fixture(scope="module")
def noisy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Settings]:
    settings = project(tmp_path_factory.mktemp("funnel"), **NOISY)
    seeded_store(settings, SEEDS, world_dir=fixed_worlds("funnel"))  # the same build on every run
    app, _ = app_with(settings)  # the real runner, without real back-off sleeps
    build(settings, app=app)
    yield settings
    forget_engines()


def items_of(settings: Settings) -> list[Item]:
    with Session(open_store(settings)) as s:
        return list(s.exec(select(Item)).all())


def test_every_gate_rejects_and_the_funnel_shows_it(noisy: Settings) -> None:
    data = funnel(noisy)
    assert set(data) == {"gates", "items", "max_attempts", "fps"}
    assert list(data["gates"]) == list(GATES)
    for gate, g in data["gates"].items():
        assert set(g) == {"seen", "passed", "rejected", "checker_faults", "reasons", "fault_reasons"}, gate
        assert g["rejected"] >= 1, f"{gate} never rejected"
        assert g["seen"] == g["passed"] + g["rejected"]
        assert 0 < sum(g["reasons"].values()) <= g["rejected"]
    gates, items = data["gates"], items_of(noisy)
    # an attempt whose checks ended in checker faults (the item failed) was decided by no gate
    undecided = {st: sum(1 for i in items if i.state == "failed" and i.failed_from == st)
                 for st in ("qa_generated", "degraded")}
    # cheapest first, stopping at the first rejection: each gate sees exactly what passed the one before
    assert gates["C1"]["seen"] == sum(i.phase1_attempts for i in items) - undecided["qa_generated"]
    assert gates["C2.1"]["seen"] == gates["C1"]["passed"]
    assert gates["C2.2"]["seen"] == gates["C2.1"]["passed"]
    assert gates["C3"]["seen"] == gates["C2.2"]["passed"]
    assert gates["D2"]["seen"] == sum(i.phase2_attempts for i in items) - undecided["degraded"]
    assert gates["D3"]["seen"] == gates["D2"]["passed"]
    assert gates["D4"]["seen"] == gates["D3"]["passed"]
    assert gates["D4"]["passed"] == data["items"]["accepted"] > 0
    assert set(data["items"]) == {s.value for s in State} and sum(data["items"].values()) == SEEDS
    assert data["max_attempts"] == {"phase1": max(i.phase1_attempts for i in items),
                                    "phase2": max(i.phase2_attempts for i in items)}
    assert "answerable from the transcripts alone" in gates["C2.1"]["reasons"]
    assert "detectable from the text alone" in gates["D3"]["reasons"]
    # a checker's reply cut off mid-JSON (malformed_json, no repairs here) is a fault, never a verdict
    assert sum(g["checker_faults"] for g in gates.values()) > 0
    assert gates["C1"]["checker_faults"] == gates["D2"]["checker_faults"] == 0  # no model there
    assert "no usable video ranking" not in gates["D4"]["reasons"]
    assert all(i.error and i.error.startswith("checker fault: ") for i in items if i.state == "failed")


def test_no_item_exceeds_the_limits(noisy: Settings) -> None:
    assert check_limits(open_store(noisy), noisy) == SEEDS
    data = funnel(noisy)
    t = noisy.build.attempts_per_phase
    assert data["max_attempts"]["phase1"] <= t and data["max_attempts"]["phase2"] <= t


def test_the_cli_prints_the_json_and_a_table(noisy: Settings) -> None:
    runner = CliRunner()
    result = runner.invoke(main, ["--project", str(noisy.root), "funnel", "--json", "--top", "2"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data == funnel(noisy, top=2)
    assert all(len(g["reasons"]) <= 2 for g in data["gates"].values())
    table = runner.invoke(main, ["--project", str(noisy.root), "funnel"])
    assert table.exit_code == 0, table.output
    for gate in GATES:
        assert gate in table.output
    assert "per accepted" in table.output
    extra = per_accepted(noisy)
    assert extra["accepted"] == data["items"]["accepted"] and (extra["usd"] or 0) > 0
    assert (extra["phase1_attempts"] or 0) >= 1 and (extra["phase2_attempts"] or 0) >= 1


def test_the_sql_view_runs_in_duckdb_too(noisy: Settings) -> None:
    with open_store(noisy).connect() as conn:
        rows = conn.execute(text("SELECT gate, verdict FROM gate_result")).all()
        direct = {r[0]: tuple(r[1:]) for r in conn.execute(text(funnel_sql())).all()}
    gate_result = pa.table({"gate": [r[0] for r in rows], "verdict": [r[1] for r in rows]})
    con = duckdb.connect()
    con.register("gate_result", gate_result)
    in_duckdb = {r[0]: tuple(int(x) for x in r[1:]) for r in con.execute(funnel_sql()).fetchall()}
    assert in_duckdb == direct and set(direct) == set(GATES)


def test_reasons_are_counted_by_kind() -> None:
    assert reason_kind("too few paragraphs: 2, at least 3 required") == "too few paragraphs"
    assert reason_kind("no colon here") == "no colon here"
    assert reason_kind("") == "(no reason)"


def test_an_empty_store_has_an_empty_funnel(tmp_path: Path) -> None:
    settings = project(tmp_path)
    data: dict[str, Any] = funnel(settings)
    assert all(g == {"seen": 0, "passed": 0, "rejected": 0, "checker_faults": 0, "reasons": {}, "fault_reasons": {}}
               for g in data["gates"].values())
    assert data["max_attempts"] == {"phase1": 0, "phase2": 0} and not any(data["items"].values())


def test_the_funnel_names_a_checker_fault_as_the_stages_record_it() -> None:
    """commands/funnel.py spells FAULT itself (importing stages would load the model stack at each CLI start)."""
    from playlisteval.build.stages.faults import FAULT as RECORDED
    from playlisteval.commands.funnel import FAULT

    assert FAULT == RECORDED


def test_the_cli_starts_without_the_model_stack() -> None:
    """`playlisteval --help` imports no stage and no model runner (they load when a command needs them)."""
    import subprocess
    import sys

    heavy = "('playlisteval.models.runner', 'playlisteval.build.stages')"
    code = f"import sys, playlisteval.cli; print(sorted(m for m in sys.modules if m.startswith({heavy})))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"


def test_a_bare_help_loads_no_command_module_nor_the_store() -> None:
    """`playlisteval --help` lists the commands from commands/lazy.py's table (issue 26: <= 0.3 s): no command
    module, no ORM, no settings (pydantic), no structlog is imported to print it."""
    import subprocess
    import sys

    heavy = ("'playlisteval.commands.', 'playlisteval.store', 'playlisteval.config', 'sqlalchemy', 'sqlmodel', "
             "'pydantic', 'structlog', 'duckdb', 'numpy'")
    code = ("import sys, io, contextlib, playlisteval.cli as c\n"
            "with contextlib.redirect_stdout(io.StringIO()) as out: c.main(['--help'], standalone_mode=False)\n"
            "assert 'status' in out.getvalue()\n"
            f"print(sorted(m for m in sys.modules if m.startswith(({heavy})) and m != 'playlisteval.commands.lazy'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"
