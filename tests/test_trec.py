"""The TREC scorer (`eval retrieval`) on hand-made runs, against pytrec_eval on random runs, and its CLI."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest
from click.testing import CliRunner

from playlisteval.cli import main
from playlisteval.eval.trec import ScoreInputError, read_run, score_files, score_run

IDCG2 = 1 + 1 / math.log2(3)


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


def run_line(qid: str, doc: str, rank: int, score: float) -> str:
    return f"{qid} Q0 {doc} {rank} {score} tag"


@pytest.fixture
def qrels(tmp_path: Path) -> Path:
    return write(tmp_path / "qrels", [
        "q1 0 a 1", "q1 0 b 1",           # two relevant
        "q2 0 c 1", "q2 0 x 0",           # one relevant, one judged non-relevant
        "q3 0 d 1", "q3 0 e 2", "q3 0 f 1",  # three relevant (graded 2 counts as relevant: binary)
        "q4 0 g 1",                       # not in the run: scores 0
        "q5 0 h 0",                       # nothing relevant: not a query of the mean
    ])


def test_hand_made_run(tmp_path: Path, qrels: Path) -> None:
    run = write(tmp_path / "run", [
        run_line("q1", "a", 1, 9.0), run_line("q1", "z", 2, 8.0), run_line("q1", "b", 3, 7.0),
        run_line("q2", "x", 1, 5.0), run_line("q2", "y", 2, 4.0), run_line("q2", "c", 3, 3.0),
        run_line("q3", "d", 1, 1.0), run_line("q3", "f", 2, 0.5), run_line("q3", "e", 3, 0.4),
        run_line("q9", "a", 1, 1.0),  # not in the qrels: ignored
    ])
    scores = score_files(run, qrels, k=2)
    # q1 top 2 = a, z; q2 = x, y; q3 = d, f; q4 none
    assert scores.n_queries == 4
    assert scores.hit_all == pytest.approx(0.0)
    assert scores.hit_any == pytest.approx((1 + 0 + 1 + 0) / 4)
    ndcg_q1 = 1 / IDCG2
    ndcg_q3 = 1.0  # d, f: both relevant, IDCG over min(3, 2) = 2 positions
    assert scores.ndcg == pytest.approx((ndcg_q1 + 0 + ndcg_q3 + 0) / 4)
    at3 = score_files(run, qrels, k=3)
    assert at3.hit_all == pytest.approx((1 + 1 + 1 + 0) / 4)
    ndcg3_q1 = (1 + 1 / math.log2(4)) / IDCG2
    ndcg3_q2 = (1 / math.log2(4)) / 1.0
    assert at3.ndcg == pytest.approx((ndcg3_q1 + ndcg3_q2 + 1.0 + 0) / 4)


def test_scores_rank_before_the_rank_column_and_ties_follow_it(tmp_path: Path) -> None:
    qrels = write(tmp_path / "qrels", ["q 0 good 1"])
    # listed out of order; "good" has the best score though its rank column says 3
    by_score = write(tmp_path / "a", [run_line("q", "bad", 1, 0.1), run_line("q", "good", 3, 0.9),
                                      run_line("q", "meh", 2, 0.5)])
    assert score_files(by_score, qrels, k=1).hit_any == 1.0
    # equal scores: the rank column decides, whatever the line order
    tie = write(tmp_path / "b", [run_line("q", "bad", 2, 0.5), run_line("q", "good", 1, 0.5)])
    assert score_files(tie, qrels, k=1).hit_any == 1.0
    tie_lost = write(tmp_path / "c", [run_line("q", "good", 2, 0.5), run_line("q", "bad", 1, 0.5)])
    assert score_files(tie_lost, qrels, k=1).hit_any == 0.0
    assert score_files(tie_lost, qrels, k=2).ndcg == pytest.approx(1 / math.log2(3))


def test_k_cuts_off_and_more_relevant_than_k(tmp_path: Path) -> None:
    qrels = write(tmp_path / "qrels", [f"q 0 d{i} 1" for i in range(5)])
    run = write(tmp_path / "run", [run_line("q", f"d{i}", i + 1, 10 - i) for i in range(5)])
    at3 = score_files(run, qrels, k=3)
    assert (at3.hit_all, at3.hit_any, at3.ndcg) == (0.0, 1.0, pytest.approx(1.0))  # all 5 cannot fit in 3
    assert score_files(run, qrels, k=5).hit_all == 1.0


@pytest.mark.parametrize("line, message", [
    ("q1 Q0 a 1 0.5", "6 fields"),
    ("q1 Q0 a one 0.5 t", "rank 'one' is not an integer"),
    ("q1 Q0 a 1 high t", "score 'high' is not a number"),
    ("q1 Q0 a 1 nan t", "NaN"),
])
def test_a_malformed_run_line_names_file_and_line(tmp_path: Path, line: str, message: str) -> None:
    run = write(tmp_path / "run.txt", [run_line("q1", "b", 1, 1.0), "", line])
    with pytest.raises(ScoreInputError, match=message) as err:
        read_run(run)
    assert f"{run}:3:" in str(err.value)


def test_duplicates_and_bad_qrels_are_errors(tmp_path: Path, qrels: Path) -> None:
    dup = write(tmp_path / "dup", [run_line("q1", "a", 1, 1.0), run_line("q1", "a", 2, 0.5)])
    with pytest.raises(ScoreInputError, match=r"dup:2: document 'a' is listed twice"):
        read_run(dup)
    good = write(tmp_path / "good", [run_line("q1", "a", 1, 1.0)])
    bad = write(tmp_path / "qrels_bad", ["q1 0 a 1", "q1 0 b"])
    with pytest.raises(ScoreInputError, match=r"qrels_bad:2: a qrels line has 4 fields"):
        score_files(good, bad, 10)
    rel = write(tmp_path / "qrels_rel", ["q1 0 a yes"])
    with pytest.raises(ScoreInputError, match=r"qrels_rel:1: relevance 'yes'"):
        score_files(good, rel, 10)
    twice = write(tmp_path / "qrels_twice", ["q1 0 a 1", "q1 0 a 0"])
    with pytest.raises(ScoreInputError, match=r"qrels_twice:2: document 'a' is judged twice"):
        score_files(good, twice, 10)
    assert score_files(good, qrels, 1).n_queries == 4
    with pytest.raises(ScoreInputError, match="no query with a relevant document"):
        score_run({}, {"q": {"a": 0}}, 10)


def mean(metric: str, theirs: dict[str, dict[str, float]], queries: list[str], ok: float | None = None) -> float:
    """Mean over every qrels query; pytrec_eval leaves out queries the run lacks, which count 0 (as in ours)."""
    values = [theirs.get(q, {}).get(metric, 0.0) for q in queries]
    if ok is not None:
        values = [1.0 if v == ok else 0.0 for v in values]
    return sum(values) / len(queries)


def test_agrees_with_pytrec_eval_on_random_runs(tmp_path: Path) -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    rng = random.Random(6)
    for trial in range(20):
        n_docs, k = rng.randint(5, 60), rng.choice([1, 3, 5, 10, 20])
        docs = [f"d{i}" for i in range(n_docs)]
        qrels = {f"q{q}": {d: 1 for d in rng.sample(docs, rng.randint(1, min(4, n_docs)))} for q in range(30)}
        run: dict[str, dict[str, float]] = {}
        for q in qrels:
            if rng.random() < 0.15:
                continue  # a query the run never answers
            shown = rng.sample(docs, rng.randint(1, n_docs))
            scores = rng.sample(range(10 * n_docs), len(shown))  # distinct: trec_eval breaks ties differently
            run[q] = {d: float(s) for d, s in zip(shown, scores, strict=True)}
        run_path = write(tmp_path / f"run{trial}", [
            run_line(q, d, rank, s) for q, ranked in run.items()
            for rank, (d, s) in enumerate(sorted(ranked.items(), key=lambda kv: -kv[1]), start=1)])
        qrels_path = write(tmp_path / f"qrels{trial}", [f"{q} 0 {d} {r}" for q, rels in qrels.items()
                                                       for d, r in rels.items()])
        ours = score_files(run_path, qrels_path, k)
        evaluator = pytrec_eval.RelevanceEvaluator(qrels, {f"ndcg_cut.{k}", f"success.{k}", f"recall.{k}"})
        theirs = evaluator.evaluate(run)

        queries = list(qrels)
        assert ours.n_queries == len(queries)
        assert ours.ndcg == pytest.approx(mean(f"ndcg_cut_{k}", theirs, queries), abs=1e-9)
        assert ours.hit_any == pytest.approx(mean(f"success_{k}", theirs, queries), abs=1e-9)
        assert ours.hit_all == pytest.approx(mean(f"recall_{k}", theirs, queries, ok=1.0), abs=1e-9)


def test_cli_prints_json_and_errors_name_the_line(tmp_path: Path, qrels: Path) -> None:
    run = write(tmp_path / "run", [run_line("q1", "a", 1, 2.0), run_line("q1", "b", 2, 1.0)])
    result = CliRunner().invoke(main, ["eval", "retrieval", "--run", str(run), "--qrels", str(qrels), "--k", "10",
                                       "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)  # stderr carries the warning about the 3 queries the run does not answer
    assert data == {"n_queries": 4, "hit_all": 0.25, "hit_any": 0.25, "ndcg": pytest.approx(0.25), "answered": 1,
                    "warnings": ["the run ranks nothing for 3 of the 4 qrels queries: they score 0"]}
    assert "3 of the 4 qrels queries" in result.stderr
    table = CliRunner().invoke(main, ["eval", "retrieval", "--run", str(run), "--qrels", str(qrels)])
    assert table.exit_code == 0 and "Hit_all@10" in table.output
    broken = write(tmp_path / "broken", [run_line("q1", "a", 1, 2.0), "q1 Q0 b"])
    failed = CliRunner().invoke(main, ["eval", "retrieval", "--run", str(broken), "--qrels", str(qrels), "--json"])
    assert failed.exit_code == 1
    assert "broken:2:" in failed.output and "6 fields" in failed.output


def test_an_empty_run_is_a_warning_not_a_silent_zero(tmp_path: Path, qrels: Path) -> None:
    empty = write(tmp_path / "empty", [])
    result = CliRunner().invoke(main, ["eval", "retrieval", "--run", str(empty), "--qrels", str(qrels), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert (data["answered"], data["hit_any"]) == (0, 0.0) and "ranks nothing for any of the 4" in data["warnings"][0]
    said = " ".join(result.stderr.split())
    assert "warning:" in said and "ranks nothing for any of the 4 qrels queries" in said
