"""Issue 40 item 9: judges run elsewhere. `eval import FILE --judge NAME` makes a judge run of the benchmark
from the verdicts given to `export`'s rows, counted by the leaderboard and its judge − judge table like a
run made here; every bad line is named; nothing is half-imported; a second import is refused.

The store is the bench's synthetic one (bench/report_store.py: 24 questions, 240 pairs, 4 domains), with
the last question's ten pairs moved to a second benchmark so a pair of "another benchmark" exists. The
pair ids are read from the file `export` writes (data/test.jsonl), as a researcher would."""

from __future__ import annotations

import json
import random
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from bench.report_store import build_store
from playlisteval.cli import main
from playlisteval.eval import runkey

ITEMS = 24  # question clusters (≥ 20), ten pairs each
JUDGES = 17
FAR = {"judge-00": 0.95, "judge-01": 0.10}  # the far-apart pair; the other 15 between 45 % and 85 %


def cli(root: Path, *args: str, code: int | None = 0) -> Result:
    result = CliRunner().invoke(main, ["--project", str(root), *args], catch_exceptions=False)
    if code is not None:
        assert result.exit_code == code, result.output
    return result


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]], list[dict[str, Any]]]:
    """The project (never changed: tests copy it), the exported rows of bench-big and of bench-other."""
    root = build_store(tmp_path_factory.mktemp("import") / "p", ITEMS, 0, 0, seed=5)
    con = sqlite3.connect(root / "playlisteval.db")
    con.execute("INSERT INTO benchmark (id, name, seed, created_at, drawn_at) VALUES (2, 'bench-other', 5, 0, 0)")
    con.execute(f"UPDATE benchmark_pair SET benchmark_id = 2 WHERE pair_id > {10 * (ITEMS - 1)}")
    con.execute(f"UPDATE benchmark_question SET benchmark_id = 2 WHERE item_id = {ITEMS}")
    con.commit()
    con.close()
    exported = []
    for name in ("bench-big", "bench-other"):
        out = root.parent / f"export-{name}"
        cli(root, "export", str(out), "--benchmark", name, "--json")
        exported.append([json.loads(line) for line in (out / "data" / "test.jsonl").read_text().splitlines()])
    assert len(exported[0]) == 10 * (ITEMS - 1) and len(exported[1]) == 10
    return root, exported[0], exported[1]


@pytest.fixture
def project(made: tuple[Path, list[dict[str, Any]], list[dict[str, Any]]], tmp_path: Path) -> Path:
    root = tmp_path / "p"
    shutil.copytree(made[0], root)
    return root


def verdicts(rows: list[dict[str, Any]], judge: str, accuracy: float) -> list[dict[str, Any]]:
    """One line per exported row: the better answer (its ``label``) with probability ``accuracy``."""
    out = []
    for row in rows:
        right = random.Random(f"{judge}:{row['pair_id']}").random() < accuracy
        verdict = row["label"] if right else ("B" if row["label"] == "A" else "A")
        out.append({"pair_id": row["pair_id"], "verdict": verdict, "raw": f"… so [[{verdict}]]",
                    "input_tokens": 1000, "output_tokens": 20})
    return out


def write(path: Path, lines: list[Any]) -> Path:
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return path


def count(root: Path, sql: str) -> int:
    with sqlite3.connect(root / "playlisteval.db") as con:
        return int(con.execute(sql).fetchone()[0])


def test_seventeen_imported_judges_are_on_the_leaderboard_with_holm(
        made: tuple[Path, list[dict[str, Any]], list[dict[str, Any]]], project: Path) -> None:
    rows = made[1]
    accuracy = {f"judge-{j:02d}": FAR.get(f"judge-{j:02d}", 0.45 + 0.4 * (j - 2) / (JUDGES - 3))
                for j in range(JUDGES)}
    for judge, acc in accuracy.items():
        got = json.loads(cli(project, "eval", "import", str(write(project / f"{judge}.jsonl",
                                                                    verdicts(rows, judge, acc))),
                             "--judge", judge, "--benchmark", "bench-big", "--json").output)
        assert got["imported"] is True and got["judged"] == got["pairs"] == len(rows) and got["missing"] == 0
        assert got["spend_usd"] is None and "not recorded" in got["spend"]
        assert got["input_tokens"] == 1000 * len(rows)
    assert count(project, "SELECT count(*) FROM model_call") == 0  # nothing on the ledger: no spend, not $0
    board = json.loads(cli(project, "leaderboard", "--benchmark", "bench-big", "--json").output)
    overall = {r["judge"]: r for r in board["rows"] if r["domain"] == "All"}
    assert set(overall) == set(accuracy) and all(r["imported"] for r in overall.values())
    assert set(board["imported"]) == set(accuracy)
    estimate = {judge: r["retrieved_ci"]["estimate"] for judge, r in overall.items()}
    assert estimate["judge-00"] > 0.9 > 0.15 > estimate["judge-01"]
    paired = board["paired"]["rows"]
    assert len(paired) == JUDGES * (JUDGES - 1) // 2  # one Holm family over every pair of the 17 judges
    (far,) = [r for r in paired if {r["judge_a"], r["judge_b"]} == set(FAR)]
    assert far["pairs"] == len(rows)
    # issue 40's Done-when: 17 judges, ≥ 20 question clusters, 95 % against 10 %: rejected after Holm over 136
    assert isinstance(far["p_holm"], float) and far["p_holm"] < 0.05 and board["paired"]["m"] == 136
    assert "no floor" in board["paired"]["smallest_p"]  # the smallest attainable adjusted p is stated
    runs = [json.loads(line) for line in cli(project, "eval", "runs", "--json").output.splitlines()]
    assert len(runs) == JUDGES and all(r["imported"] and r["main"] and r["varies"] == "" for r in runs)


def test_verdicts_are_read_in_the_exports_orientation(
        made: tuple[Path, list[dict[str, Any]], list[dict[str, Any]]], project: Path) -> None:
    rows = made[1]
    right = [{"pair_id": r["pair_id"], "verdict": r["label"]} for r in rows]
    got = json.loads(cli(project, "eval", "import", str(write(project / "right.jsonl", right)), "--judge", "always",
                         "--benchmark", "bench-big", "--json").output)
    assert got["accuracy"] == 1.0
    # the position-bias pass: the same right answers given with A and B exchanged
    flipped = [{"pair_id": r["pair_id"], "verdict": "B" if r["label"] == "A" else "A"} for r in rows]
    got = json.loads(cli(project, "eval", "import", str(write(project / "flipped.jsonl", flipped)), "--judge",
                         "always", "--benchmark", "bench-big", "--swapped", "--json").output)
    assert got["accuracy"] == 1.0 and got["swapped"] is True
    # an exported row with its verdict added is a line; its label is checked against the sides read
    as_rows = [{**r, "verdict": r["label"]} for r in rows[:3]]
    bad = cli(project, "eval", "import", str(write(project / "rows.jsonl", as_rows)), "--judge", "rows",
              "--benchmark", "bench-big", "--swapped", code=1)
    assert "line 1: the line says answer" in bad.output and "line 3:" in bad.output


def test_every_bad_line_is_named_and_nothing_is_imported(
        made: tuple[Path, list[dict[str, Any]], list[dict[str, Any]]], project: Path) -> None:
    rows, other = made[1], made[2]
    key = rows[0]["pair_id"]
    lines: list[Any] = [
        {"pair_id": key, "verdict": "A"},  # 1: fine
        {"pair_id": "0000000000000000-54", "verdict": "A"},  # 2: unknown
        {"pair_id": other[0]["pair_id"], "verdict": "B"},  # 3: a pair of another benchmark
        {"pair_id": rows[1]["pair_id"], "verdict": "Model A"},  # 4: not A/B/empty
        '{"pair_id": "x", "verdict": "A"',  # 5: malformed JSON
        {"pair_id": key, "verdict": None},  # 6: given twice
        {"pair_id": rows[2]["pair_id"]},  # 7: no verdict field
        "",  # 8: blank: skipped
        {"pair_id": rows[3]["pair_id"], "verdict": "", "input_tokens": -1},  # 9: bad token count
    ]
    out = cli(project, "eval", "import", str(write(project / "bad.jsonl", lines)), "--judge", "j",
              "--benchmark", "bench-big", code=1).output
    text = " ".join(out.split())
    assert "7 problem(s), nothing imported" in text
    assert "line 2: unknown pair '0000000000000000-54'" in text
    assert f"line 3: pair '{other[0]['pair_id']}' is a pair of benchmark 'bench-other', not of 'bench-big'" in text
    assert "line 4: verdict must be \"A\", \"B\" or empty/null" in text
    assert "line 5: not JSON" in text
    assert "line 6: pair" in text and "was given already on line 1" in text
    assert "line 7: missing verdict" in text and "line 9: input_tokens" in text
    assert "line 1:" not in text and "line 8:" not in text
    assert count(project, "SELECT count(*) FROM judge_run") == 0
    assert count(project, "SELECT count(*) FROM judgment") == 0


def test_a_second_import_is_refused_unless_replace(
        made: tuple[Path, list[dict[str, Any]], list[dict[str, Any]]], project: Path) -> None:
    rows = made[1]
    csv_file = project / "j.csv"  # CSV with a header (and a spreadsheet's BOM); an empty verdict is none
    csv_file.write_text("\ufeffpair_id,verdict,raw\n" + "".join(
        f"{r['pair_id']},{'' if i % 10 == 0 else r['label']},\"ok, [[x]]\"\n" for i, r in enumerate(rows[:100])))
    first = cli(project, "eval", "import", str(csv_file), "--judge", "ext", "--benchmark", "bench-big", "--json",
                code=3)  # 100 of 230 pairs: an incomplete run, said so
    got = json.loads(first.output.splitlines()[-1])
    assert (got["judged"], got["missing"], got["no_verdict"], got["state"]) == (100, len(rows) - 100, 10, "incomplete")
    again = cli(project, "eval", "import", str(csv_file), "--judge", "ext", "--benchmark", "bench-big", code=1)
    assert "was imported already" in again.output and "--replace" in again.output
    full = write(project / "full.jsonl", verdicts(rows, "ext", 0.8))
    replaced = json.loads(cli(project, "eval", "import", str(full), "--judge", "ext", "--benchmark", "bench-big",
                              "--replace", "--json").output)
    assert replaced["replaced"] == [got["run_id"]] and replaced["missing"] == 0
    assert count(project, "SELECT count(*) FROM judge_run") == 1
    assert count(project, f"SELECT count(*) FROM judgment WHERE run_id = {replaced['run_id']}") == len(rows)
    # another evidence of the same judge is another run (the leaderboard's uniform column), not a repeat
    cli(project, "eval", "import", str(full), "--judge", "ext", "--benchmark", "bench-big", "--evidence", "uniform")
    board = json.loads(cli(project, "leaderboard", "--benchmark", "bench-big", "--json").output)
    (row,) = [r for r in board["rows"] if r["domain"] == "All"]
    assert row["imported"] and row["uniform_ci"]["estimate"] == row["retrieved_ci"]["estimate"]


def test_a_run_made_here_is_never_replaced_by_an_import(
        made: tuple[Path, list[dict[str, Any]], list[dict[str, Any]]], project: Path) -> None:
    from playlisteval.config import load_settings
    from playlisteval.eval.options import JudgeOptions

    recorded = JudgeOptions.from_settings(load_settings(project)).as_settings()
    with sqlite3.connect(project / "playlisteval.db") as con:
        con.execute("INSERT INTO judge_run (benchmark_id, judge, evidence, scope, swapped, settings, created_at, "
                    "modality, finished_at, options_hash, benchmark_version) VALUES (1, 'here', 'retrieved', "
                    "'domain', 0, ?, 0, 'frames+transcript', 0, ?, 0)",
                    (json.dumps(recorded), runkey.options_hash(recorded)))
    file = write(project / "v.jsonl", verdicts(made[1], "here", 0.7))
    for extra in ((), ("--replace",)):
        out = cli(project, "eval", "import", str(file), "--judge", "here", "--benchmark", "bench-big", *extra, code=1)
        assert "already has run 1 made here" in " ".join(out.output.split())
    assert count(project, "SELECT count(*) FROM judge_run") == 1


def test_provenance_is_part_of_the_runs_identity_not_of_its_variant() -> None:
    options = {"evidence": "retrieved", "scope": "domain", "swap": False, "frames": 128}
    imported = {**options, "imported": True, "import_file": "v.jsonl", "import_sha256": "ab" * 32}
    assert runkey.variant_hash(imported) == runkey.variant_hash(options)
    assert runkey.options_hash(imported) != runkey.options_hash(options)
    assert runkey.varies(imported, options) == "" and runkey.is_imported(imported) and not runkey.is_imported(options)
