"""The difficulty gate on a larger sim set (SPEC F2, F3): the weak judges' accuracy rises with the
rating gap, so the gate keeps mostly small-gap pairs; and both sampling levels are seeded draws."""

from __future__ import annotations

import json
from collections import defaultdict

import pytest
from sqlalchemy import text

from playlisteval.actors.build_run import build
from playlisteval.config import Settings
from playlisteval.select.sampling import select_benchmark
from playlisteval.store import open_store
from tests.eval_helpers import indexed_seeded_store
from tests.helpers import QUIET_SIM, project


@pytest.fixture(scope="module")
def sim_set(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    # the weak judges see the two gold segments (16 frames): what they miss is then down to the pair
    settings = project(tmp_path_factory.mktemp("gap"), index__embedder="hash", eval__materialize_frames=False,
                       eval__frames=16, select__difficulty_evidence="oracle", select__questions_per_domain=0,
                       select__pairs_per_domain=90, **QUIET_SIM)
    indexed_seeded_store(settings, 30)
    build(settings)
    return settings


def test_weak_judges_get_better_as_the_gap_grows_and_the_gate_keeps_the_hard_pairs(sim_set: Settings) -> None:
    out = select_benchmark(sim_set)
    assert out.gate.judged == 300 and out.gate.errors == 0
    with open_store(sim_set).connect() as conn:
        pairs = conn.execute(text("SELECT gap, kept, difficulty FROM pair")).all()
        drawn = conn.execute(text("SELECT p.gap FROM benchmark_pair bp JOIN pair p ON p.id = bp.pair_id")).all()
    solved: dict[int, list[bool]] = defaultdict(list)
    kept: dict[int, list[bool]] = defaultdict(list)
    for gap, keep, raw in pairs:
        record = json.loads(raw)
        solved[gap] += [record[role]["correct"] for role in ("F_first", "F_second")]
        kept[gap].append(bool(keep))
    accuracy = {g: sum(v) / len(v) for g, v in sorted(solved.items())}
    kept_rate = {g: sum(v) / len(v) for g, v in sorted(kept.items())}
    # measured with these seeds: 0.77, 0.96, 1.00, 1.00 by gap (kept 35 %, 8 %, 0, 0) — a rise to a ceiling
    assert accuracy[1] < accuracy[2] and accuracy[4] >= accuracy[1] + 0.15
    assert all(accuracy[g] >= accuracy[g - 1] - 0.05 for g in (2, 3, 4))
    assert kept_rate[1] > 2 * kept_rate[4]
    gaps = [g for (g,) in drawn]
    assert gaps.count(1) > len(gaps) / 2  # the benchmark is mostly gap-1 pairs (paper: gaps 1 and 2)


def test_both_sampling_levels_are_seeded_draws(sim_set: Settings) -> None:
    engine = open_store(sim_set)
    small = sim_set.model_copy(deep=True)
    small.select.questions_per_domain, small.select.pairs_per_domain = 10, 12

    def drawn(name: str) -> tuple[list[int], list[tuple[int, bool]]]:
        with engine.connect() as conn:
            bid = conn.execute(text("SELECT id FROM benchmark WHERE name = :n"), {"n": name}).scalar_one()
            questions = [i for (i,) in conn.execute(text(
                "SELECT item_id FROM benchmark_question WHERE benchmark_id = :b ORDER BY item_id"), {"b": bid})]
            pairs = [(p, bool(a)) for p, a in conn.execute(text(
                "SELECT pair_id, a_is_better FROM benchmark_pair WHERE benchmark_id = :b ORDER BY pair_id"),
                {"b": bid})]
        return questions, pairs

    a, b = select_benchmark(small, "a"), select_benchmark(small, "b")
    assert a.created and b.created
    assert drawn("a") == drawn("b")
    questions, pairs = drawn("a")
    assert len(questions) == 10 and len(pairs) == a.pairs <= 12
    with engine.connect() as conn:
        owners = dict(conn.execute(text("SELECT id, item_id FROM pair")).all())
        kept = {p for (p,) in conn.execute(text("SELECT id FROM pair WHERE kept"))}
    assert all(owners[p] in questions and p in kept for p, _ in pairs)  # drawn from the sampled questions' kept pairs
    other = small.model_copy(deep=True)
    other.project.seed += 1
    select_benchmark(other, "c")
    assert drawn("c")[0] != questions  # another seed, another sample


def test_a_judge_run_stopped_by_the_budget_resumes_without_paying_twice(sim_set: Settings) -> None:
    from playlisteval.eval.judge import run_judge
    from playlisteval.eval.options import JudgeOptions

    with open_store(sim_set).connect() as conn:
        drawn = conn.execute(text("SELECT COUNT(*) FROM benchmark")).scalar_one()
    if not drawn:
        select_benchmark(sim_set)
    options = JudgeOptions.from_settings(sim_set, evidence="oracle")
    tight = sim_set.model_copy(deep=True)
    tight.eval.budget_usd = 0.02  # a few calls' worth
    stopped = run_judge(tight, "sim/judge", options)
    # the budget stops the pass: the pairs left are errors of the run (never scores), and it is incomplete
    assert stopped.stopped == "budget" and stopped.state == "incomplete"
    assert 0 < stopped.judged < stopped.pairs and stopped.errors == stopped.pairs - stopped.judged
    with open_store(sim_set).connect() as conn:
        partial = conn.execute(text("SELECT COUNT(*) FROM judgment")).scalar_one()
        assert conn.execute(text("SELECT COUNT(*) FROM judgment WHERE outcome = 'error'")).scalar_one() == 0
    summary = run_judge(sim_set, "sim/judge", options)
    with open_store(sim_set).connect() as conn:
        paid = conn.execute(text("SELECT COUNT(*), COUNT(DISTINCT request_hash) FROM model_call "
                                 "WHERE purpose = 'eval' AND status = 'ok'")).one()
        runs = conn.execute(text("SELECT COUNT(*), MIN(finished_at) FROM judge_run")).one()
        errors = conn.execute(text("SELECT COUNT(*) FROM judge_error")).scalar_one()
    assert 0 < summary.judged_now < summary.pairs and partial + summary.judged_now == summary.pairs
    assert paid[0] == paid[1] == summary.pairs  # each pair's request paid for exactly once
    assert runs[0] == 1 and runs[1] > 0 and errors == 0  # the same run, now finished
    assert summary.state == "finished" and summary.stopped == ""
