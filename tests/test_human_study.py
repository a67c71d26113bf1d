"""The human study on a real synthetic benchmark (issue 12 items 1, 2, 4, 5): plan, evidence clips from
role H through the runner, faults, budget, invitations, crowd export/import, and the report against the
`krippendorff` package and an independent count."""

from __future__ import annotations

import csv
import json
import subprocess
from collections import Counter, defaultdict
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine

from playlisteval.config import Settings
from playlisteval.human import grounding
from playlisteval.human.design import slot_of
from playlisteval.models.request import TextPart, VideoPart
from playlisteval.store import open_store
from tests.human_helpers import REASON, cli, study_project


@pytest.fixture(scope="module")
def proj(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return study_project(tmp_path_factory.mktemp("human") / "proj")


def rows(engine: Engine, sql: str, **params: object) -> list:  # type: ignore[type-arg]
    with engine.connect() as conn:
        return list(conn.execute(text(sql), params))


def test_plan_stratifies_slots_and_attention_checks(proj: Settings) -> None:
    engine = open_store(proj)
    tasks = rows(engine, "SELECT t.task_key, t.intended_slot, t.attention_check, p.gap, p.item_id, t.pair_id, "
                         "p.better_rating, p.worse_rating FROM human_task t JOIN pair p ON p.id = t.pair_id")
    study = [t for t in tasks if not t.attention_check]
    checks = [t for t in tasks if t.attention_check]
    assert len(study) == 12 and len(checks) == 1  # 10 % of 12, at least one
    assert len({t.pair_id for t in tasks}) == len(tasks)  # no pair twice, checks included
    bench = {r.pair_id for r in rows(engine, "SELECT pair_id FROM benchmark_pair")}
    assert {t.pair_id for t in study} <= bench
    assert all((t.better_rating, t.worse_rating) == (5, 1) for t in checks)  # gold against the worst answer
    assert all(t.intended_slot == slot_of(proj.project.seed, t.task_key) for t in tasks)
    # proportional to the benchmark's (domain, gap) strata: gap 1 dominates, as in the benchmark
    gaps = Counter(t.gap for t in study)
    population = Counter(r.gap for r in rows(engine, "SELECT p.gap FROM benchmark_pair b "
                                                     "JOIN pair p ON p.id = b.pair_id"))
    assert max(gaps, key=gaps.__getitem__) == max(population, key=population.__getitem__)
    out = json.loads(cli(proj, "human", "plan", "--json").output.splitlines()[-1])
    assert out["created"] is False and out["tasks"] == 12 and out["clips"]["grounded_now"] == 0


def test_a_plan_is_the_same_on_another_store(proj: Settings, tmp_path: Path) -> None:
    other = study_project(tmp_path / "again")
    engine = open_store(other)
    with engine.begin() as conn:  # plan a second study under another name from the same benchmark
        conn.execute(text("DELETE FROM human_task"))
        conn.execute(text("DELETE FROM human_study"))
    cli(other, "human", "plan", "--no-clips")
    a = sorted((r.task_key, r.intended_slot, r.attention_check) for r in rows(open_store(proj),
               "SELECT task_key, intended_slot, attention_check FROM human_task"))
    b = sorted((r.task_key, r.intended_slot, r.attention_check) for r in rows(engine,
               "SELECT task_key, intended_slot, attention_check FROM human_task"))
    assert a == b


def test_grounding_request_carries_spec_h2(proj: Settings) -> None:
    engine = open_store(proj)
    [(pair_id,)] = rows(engine, "SELECT pair_id FROM human_task ORDER BY task_key LIMIT 1")
    given = grounding.load_input(engine, pair_id)
    request = grounding.build_request(proj, given, attempt=0)
    videos = [p for p in request.parts if isinstance(p, VideoPart)]
    assert request.role == "H" and request.purpose == "human" and request.response_schema == "EvidenceGrounding"
    assert [(v.fps, v.size, v.audio) for v in videos] == [(2.0, (854, 480), False)] * 2
    assert [(v.start, v.end) for v in videos] == [(s.start, s.end) for s in given.segments]
    transcripts = [p.text for p in request.parts if isinstance(p, TextPart) and p.text.startswith("=== Transcript")]
    assert len(transcripts) == 2 and transcripts[0].splitlines()[1].startswith("[0:00-0:30] ")
    prompt = request.parts[0].text
    assert "@" not in prompt.split("Reference answer sentences:")[1]  # the generator's citations are removed
    assert all(f"{i}. {s}" in prompt for i, s in enumerate(given.sentences))


def test_every_task_has_exact_browser_playable_30s_clips(proj: Settings) -> None:
    engine = open_store(proj)
    tasks = rows(engine, "SELECT evidence_status, clips, grounding, evidence_call_id FROM human_task")
    assert {t.evidence_status for t in tasks} == {"ok"}
    ledger = rows(engine, "SELECT role, purpose, status, usd FROM model_call WHERE purpose = 'human'")
    assert ledger and {r.role for r in ledger} == {"H"} and sum(r.usd for r in ledger) > 0
    probed = set()
    for t in tasks:
        clips = json.loads(t.clips)["clips"]
        assert clips and {c["hop"] for c in clips} == {1, 2}  # both hops have evidence
        grounded = json.loads(t.grounding)
        assert all(g["ranges"] for g in grounded["hop_groundings"])
        for c in clips:
            assert c["end"] - c["start"] == pytest.approx(30.0) and c["start"] % 30 == 0
            path = proj.media_dir / c["file"]
            if path in probed:
                continue
            probed.add(path)
            info = json.loads(subprocess.run(
                ["ffprobe", "-v", "error", "-show_entries", "stream=codec_name,codec_type:format=duration,format_name",
                 "-of", "json", str(path)], capture_output=True, text=True, check=True).stdout)
            codecs = {s["codec_type"]: s["codec_name"] for s in info["streams"]}
            assert codecs == {"video": "h264", "audio": "aac"}
            assert float(info["format"]["duration"]) == pytest.approx(30.0, abs=0.1)


def test_an_unusable_grounding_is_a_fault_then_retried(tmp_path: Path) -> None:
    settings = study_project(tmp_path / "p")
    engine = open_store(settings)
    with engine.begin() as conn:
        # a fresh attempt number: the replies cached when the study was built are not asked for
        conn.execute(text("UPDATE human_task SET evidence_status = 'pending', evidence_attempts = 7, clips = NULL"))
    out = cli(settings, "human", "clips", "--json", code=3, sim__malformed_json=1.0)  # 3: faults remain
    counts = json.loads(out.output.splitlines()[-1])
    tasks = rows(engine, "SELECT evidence_status, evidence_reason, evidence_attempts, clips FROM human_task")
    assert counts["faults"] == len(tasks) and counts["ready"] == 0
    assert all(t.evidence_status == "fault" and "unusable" in t.evidence_reason and t.clips is None
               and t.evidence_attempts == 8 for t in tasks)  # never an empty clip list
    cli(settings, "human", "clips")  # a new attempt is a new request: the cached bad reply is not reused
    again = rows(engine, "SELECT evidence_status, evidence_attempts, clips FROM human_task")
    assert all(t.evidence_status == "ok" and t.evidence_attempts == 8 and json.loads(t.clips)["clips"] for t in again)


def test_the_budget_pauses_grounding(tmp_path: Path) -> None:
    settings = study_project(tmp_path / "p")
    engine = open_store(settings)
    with engine.begin() as conn:
        conn.execute(text("UPDATE human_task SET evidence_status = 'pending', evidence_attempts = 5, clips = NULL"))
    out = cli(settings, "human", "clips", "--json", code=4, human__budget_usd=0.0001)
    counts = json.loads(out.output.splitlines()[-1])
    assert counts["paused"].startswith("budget reached") and counts["pending"] > 0
    assert {r.evidence_status for r in rows(engine, "SELECT evidence_status FROM human_task")} == {"pending"}


def test_invitations_keep_only_a_hash(proj: Settings) -> None:
    out = json.loads(cli(proj, "human", "invite", "zoe", "--json").output)
    engine = open_store(proj)
    [(stored,)] = rows(engine, "SELECT token_hash FROM human_annotator WHERE name = 'zoe'")
    assert out["token"] not in stored and out["url"].endswith(f"/join/{out['token']}")
    result = cli(proj, "human", "invite", "zoe", code=1)
    assert "already invited" in result.output
    again = json.loads(cli(proj, "human", "invite", "zoe", "--reissue", "--json").output)
    [(new,)] = rows(engine, "SELECT token_hash FROM human_annotator WHERE name = 'zoe'")
    assert again["token"] != out["token"] and new != stored


def _ratings_csv(path: Path, lines: list[list[str]]) -> Path:
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["task_id", "annotator", "choice", "reason"])
        writer.writerows(lines)
    return path


def test_a_malformed_import_names_every_bad_line_and_changes_nothing(proj: Settings, tmp_path: Path) -> None:
    engine = open_store(proj)
    [(task_id,), (other,)] = rows(engine, "SELECT id FROM human_task ORDER BY id LIMIT 2")
    before = rows(engine, "SELECT count(*) FROM human_rating")[0][0]
    bad = _ratings_csv(tmp_path / "bad.csv", [
        [str(task_id), "w1", "A", REASON],
        [str(task_id), "w2", "C", REASON],
        ["99999", "w3", "B", REASON],
        [str(other), "w4", "B", "far too short"],
        [str(other), "w1", "B", REASON],
    ])
    result = cli(proj, "human", "import", str(bad), code=1)
    message = " ".join(result.output.split())
    assert "nothing imported: 3 bad row(s)" in message
    assert f"{bad} line 3: the choice must be A or B, not 'C'" in message
    assert f"{bad} line 4: task 99999 is not a task of study 'human'" in message
    assert f"{bad} line 5: the reason has 3 word(s); at least 20 are required" in message
    assert rows(engine, "SELECT count(*) FROM human_rating")[0][0] == before


def test_import_then_report_agree_with_krippendorff_and_an_independent_count(proj: Settings, tmp_path: Path) -> None:
    engine = open_store(proj)
    tasks = rows(engine, "SELECT id, intended_slot, attention_check FROM human_task ORDER BY id")
    workers = ["w1", "w2", "w3", "w4"]
    lines = []
    for i, t in enumerate(tasks):
        for j, w in enumerate(workers[:3]):
            right = t.attention_check or (i + j) % 5 != 0  # mostly with the intended answer
            flip = "B" if t.intended_slot == "A" else "A"
            lines.append([str(t.id), w, t.intended_slot if right else flip, REASON])
        if t.attention_check:  # w4 fails the attention check: all of w4's ratings go
            lines.append([str(t.id), "w4", "B" if t.intended_slot == "A" else "A", REASON])
        elif i < 3:
            lines.append([str(t.id), "w4", t.intended_slot, REASON])
    good = _ratings_csv(tmp_path / "ratings.csv", lines)
    assert "imported" in cli(proj, "human", "import", str(good)).output
    out = json.loads(cli(proj, "human", "report", "--json").output)

    # the independent count, straight from the store
    stored = rows(engine, "SELECT r.task_id, r.annotator, r.choice, t.intended_slot, t.attention_check "
                          "FROM human_rating r JOIN human_task t ON t.id = r.task_id")
    failed = {r.annotator for r in stored if r.attention_check and r.choice != r.intended_slot}
    valid = [r for r in stored if r.annotator not in failed and not r.attention_check]
    assert failed == {"w4"} and out["n_discarded"] == sum(r.annotator == "w4" for r in stored)
    assert out["n_ratings"] == len(valid) and out["n_tasks"] == len({r.task_id for r in valid})
    assert out["agree_with_intended"] == pytest.approx(sum(r.choice == r.intended_slot for r in valid) / len(valid))
    assert out["slot_a"] == pytest.approx(sum(r.choice == "A" for r in valid) / len(valid))
    per_task: dict[int, list[bool]] = defaultdict(list)
    for r in valid:
        per_task[r.task_id].append(r.choice == r.intended_slot)
    assert out["majority_agrees"] == sum(2 * sum(v) > len(v) for v in per_task.values())
    assert out["majority_overturns"] == sum(2 * sum(v) < len(v) for v in per_task.values())
    assert out["unanimous"] == sum(len(v) >= 2 and len(set(v)) == 1 for v in per_task.values())

    annotators = sorted({r.annotator for r in valid})
    units = sorted(per_task)
    matrix = np.full((len(annotators), len(units)), np.nan)
    for r in valid:
        matrix[annotators.index(r.annotator), units.index(r.task_id)] = 0.0 if r.choice == "A" else 1.0
    expected = krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal")
    assert out["alpha"] == pytest.approx(expected, abs=1e-9)
    low, high = out["alpha_ci"]
    assert low <= out["alpha"] <= high
    assert out["evidence_simulated"] is True
    assert {r["domain"] for r in out["by_domain"]} == {"Education", "History"}
    text_out = cli(proj, "human", "report").output
    assert "Krippendorff's alpha" in text_out and "simulated" in text_out
    # a rating is final: importing the same file again is refused, naming the lines
    assert "already rated" in cli(proj, "human", "import", str(good), code=1).output
    # and the HTML report has the section (paper Table 22)
    cli(proj, "report", str(tmp_path / "report.html"))
    page = (tmp_path / "report.html").read_text()
    assert "Human evaluation (paper Table 22)" in page and f"{out['alpha']:.3f}" in page


def test_export_is_what_a_crowd_platform_hosts(proj: Settings, tmp_path: Path) -> None:
    out_dir = tmp_path / "crowd"
    cli(proj, "human", "export", str(out_dir))
    with (out_dir / "tasks.csv").open(newline="") as fh:
        table = list(csv.DictReader(fh))
    engine = open_store(proj)
    assert len(table) == rows(engine, "SELECT count(*) FROM human_task WHERE evidence_status = 'ok'")[0][0]
    header = set(table[0])
    assert not any("intended" in h or "attention" in h for h in header)  # the key stays in the store
    for row in table:
        assert int(row["n_clips"]) >= 2
        for i in range(1, int(row["n_clips"]) + 1):
            assert (out_dir / row[f"clip_{i}"]).is_file() and row[f"clip_{i}_label"].startswith("Video ")
        assert "<mark data-diff=" in row["answer_a_html"] or row["differences"] == "0"
        assert "<" not in row["answer_a_html"].replace("<mark data-diff=", "").replace("</mark>", "")
    assert (out_dir / "ratings_template.csv").read_text().strip() == "task_id,annotator,choice,reason"
