"""Fail closed (issue 9): a checker whose reply stays unusable decides nothing.

A gate's model (C2 answerer or verifier, C3, D3's and D4's rankers) that gives no usable reply after the
runner's repair retries is a checker fault: the candidate is neither passed nor rejected, the generator
gets no feedback, the step is tried again, and after a few faults in a row the item fails for
`retry-failed`. Ranking replies must be permutations of the shown candidates. The output rules SPEC B2
(the question holds its Bloom keyword) and D1.1 (importances sum to 1) are enforced by C1 and D2.
"""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlmodel import Session, col, select

from playlisteval.actors.build_run import build, resume
from playlisteval.actors.step import limits_for
from playlisteval.build.gates import c1_structure, d2_structure
from playlisteval.build.gates.ranking import ranked_ratings, ranking_problem
from playlisteval.build.stages import check_distractors, check_qa
from playlisteval.build.stages.faults import FAULTS_PER_STEP
from playlisteval.build.stages.feedback import phase1_failures
from playlisteval.cli import main
from playlisteval.commands.funnel import funnel
from playlisteval.config import BuildSettings, Settings
from playlisteval.errors import CheckerFault
from playlisteval.models.request import ModelRequest
from playlisteval.store import forget_engines, items, open_store
from playlisteval.store.tables import QA, DistractorSet, GateResult, Item, ModelCall, ResponseCache
from playlisteval.world.sim.context import sections
from tests.builder_helpers import Planted, app_with, calls_by_role, context, fixed_worlds
from tests.helpers import QUIET_SIM, env_for, project, seeded_store
from tests.provider_fakes import CHAT, FakeAPI, fake_api

GARBAGE = "Honestly, I would say it mostly matches, more or less."
OPENAI_KEY = "sk-test-0penai-FAILCLOSED-11"


def garbage(_request: ModelRequest) -> str:
    return GARBAGE


# -- the ranking parser: a permutation or nothing ------------------------------------------------------
def ranking(*pairs: tuple[Any, Any]) -> dict[str, Any]:
    return {"rankings": [{"rank": r, "candidate_index": i, "reasoning": ""} for r, i in pairs],
            "overall_summary": ""}


SHOWN = [3, 5, 1, 4, 2]  # the rating shown as candidate 1, 2, …


def test_a_permutation_is_read_in_rank_order_whatever_the_entry_order() -> None:
    reply = ranking((3, 1), (1, 2), (5, 5), (2, 4), (4, 3))
    assert ranking_problem(reply, 5) is None
    assert ranked_ratings(reply, SHOWN) == [5, 4, 3, 1, 2]


@pytest.mark.parametrize(("reply", "problem"), [
    (ranking((1, 1), (2, 2), (3, 3), (4, 4)), "4 entries for 5 candidates"),  # missing
    (ranking((1, 1), (2, 2), (3, 3), (4, 4), (5, 5), (6, 1)), "6 entries for 5 candidates"),  # extra
    (ranking((1, 1), (2, 1), (3, 3), (4, 4), (5, 5)), "candidate(s) [1] ranked more than once"),  # duplicate
    (ranking((1, 1), (2, 2), (3, 3), (4, 4), (5, 6)), "no candidate numbered [6]"),  # out of range
    (ranking((1, 0), (2, 1), (3, 2), (4, 3), (5, 4)), "no candidate numbered [0]"),  # 0-based
    (ranking((1, 1), (1, 2), (3, 3), (4, 4), (5, 5)), "repeated [1]"),  # two candidates at rank 1
    (ranking((0, 1), (1, 2), (2, 3), (3, 4), (4, 5)), "ranks must be 1..5"),  # ranks from 0
    (ranking((1, 1), (2, 2), (3, 3), (4, 4), (9, 5)), "ranks must be 1..5"),  # a gap in the ranks
    (ranking((1, "1"), (2, 2), (3, 3), (4, 4), (5, 5)), "candidate_index is not an integer"),
    (ranking((1, 1), (2, 2.5), (3, 3), (4, 4), (5, 5)), "candidate_index is not an integer"),
    (ranking((1, 1), (2, 2), (3, 3), (4, 4), (True, 5)), "rank is not an integer"),
    ({"rankings": "1 > 2 > 3"}, "no rankings list"),
    (None, "no rankings list"),
])
def test_anything_but_a_permutation_is_no_ranking(reply: Any, problem: str) -> None:
    found = ranking_problem(reply, 5)
    assert found is not None and problem in found, found
    with pytest.raises(ValueError, match="."):
        ranked_ratings(reply, SHOWN)


# -- SPEC B2 and D1.1, unit ----------------------------------------------------------------------------
ANSWER = ("Clip one shows it (1 @ 0:00 - 1:00).\n\nClip two shows it (2 @ 2:00 - 3:00).\n\n"
          "So it follows (1 @ 0:00 - 0:10).")


@pytest.mark.parametrize(("question", "keyword", "kept"), [
    ("Justify why the red square returns.", "justify", True),
    ("Why, would you say, does it return? Find  out from both clips.", "find out", True),
    ("How does the narrator use the sign?", "use", True),
    ("What would a user of the sign see?", "use", False),  # not inside another word
    ("Explain why the red square returns.", "justify", False),
    ("Comparing both clips, what changes?", "compare", False),  # word for word
])
def test_c1_rejects_a_question_without_its_bloom_keyword(question: str, keyword: str, kept: bool) -> None:
    verdict = c1_structure.check(ANSWER, BuildSettings(), 30, question=question, keyword=keyword)
    assert verdict.passed is kept, verdict
    if not kept:
        assert verdict.gate == "C1" and verdict.reason == (
            f"Bloom keyword missing: the question does not contain {keyword!r}")


def d2_set(scores: list[Any]) -> dict[str, Any]:
    element = {"element": "red -> blue", "impact": "x", "modality": "visual_only"}
    rating = {"response": "wrong", "attribute_degradations": [
        {"attribute_name": "A0", "degradation_by_elements": [element]}],
        "constant_attributes": [], "upgraded_attributes": []}
    return {"causal_attributes": [{"attribute_name": f"A{i}", "importance_score": s, "description": ""}
                                  for i, s in enumerate(scores)],
            **{f"rating_{r}": copy.deepcopy(rating) for r in (4, 3, 2, 1)}}


@pytest.mark.parametrize(("scores", "kept"), [
    ([0.25, 0.25, 0.2, 0.15, 0.15], True),
    ([0.2, 0.2, 0.2, 0.2, 0.205], True),  # 1.005: within ± 0.01
    ([0.2, 0.2, 0.2, 0.2, 0.195], True),
    ([0.2, 0.2, 0.2, 0.2, 0.1], False),  # 0.9
    ([0.3, 0.3, 0.2, 0.2, 0.2], False),  # 1.2
    ([1, 1, 1, 1, 1], False),  # scores out of 5, not shares
    ([0.2, 0.2, 0.2, 0.2, math.nan], False),
    ([0.2, 0.2, 0.2, 0.2, "0.2"], False),
])
def test_d2_rejects_importances_that_do_not_sum_to_one(scores: list[Any], kept: bool) -> None:
    verdict = d2_structure.check(d2_set(scores))
    assert verdict.passed is kept, verdict
    if not kept:
        assert verdict.gate == "D2" and verdict.reason.startswith("importance scores do not sum to 1")


# -- the gates on a real candidate, through the runner and the store -------------------------------------
@pytest.fixture(scope="module")
def accepted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Settings, int]]:
    settings = project(tmp_path_factory.mktemp("failclosed"), **QUIET_SIM)
    seeded_store(settings, 2, world_dir=fixed_worlds("failclosed"))
    build(settings)
    with Session(open_store(settings)) as s:
        item = s.exec(select(Item).where(Item.state == "accepted").order_by(col(Item.id))).first()
        assert item is not None and item.id is not None
        item_id = item.id
    yield settings, item_id
    forget_engines()


def current(settings: Settings, item_id: int, attempt: int) -> tuple[QA, DistractorSet]:
    """Copies of the item's accepted question and set as new attempts (a new attempt is a new request)."""
    with Session(open_store(settings)) as s:
        item = s.get(Item, item_id)
        assert item is not None and item.current_qa_id and item.current_set_id
        qa, dset = s.get(QA, item.current_qa_id), s.get(DistractorSet, item.current_set_id)
        assert qa is not None and dset is not None
    new_qa = QA(item_id=item_id, attempt=attempt, question=qa.question, answer=qa.answer, keyword=qa.keyword,
                payload=copy.deepcopy(qa.payload))
    return new_qa, DistractorSet(item_id=item_id, qa_id=dset.qa_id, attempt=attempt,
                                 payload=copy.deepcopy(dset.payload))


def test_the_sim_keeps_the_output_rules(accepted: tuple[Settings, int]) -> None:
    """The sim's questions hold their keyword and its importances sum to 1: the demo still accepts items."""
    settings, _ = accepted
    with Session(open_store(settings)) as s:
        questions = s.exec(select(QA).where(col(QA.malformed).is_(False))).all()
        sets = s.exec(select(DistractorSet).where(col(DistractorSet.malformed).is_(False))).all()
        rejected = s.exec(select(GateResult).where(GateResult.verdict == "reject")).all()
    assert questions and sets
    assert all(q.keyword and c1_structure.has_keyword(q.question, q.keyword) for q in questions)
    assert all(abs((d2_structure.importance_total(d.payload or {}) or 0) - 1) <= 0.01 for d in sets)
    assert not rejected  # a quiet sim build: nothing broke a rule


def test_c1_catches_a_question_without_its_keyword_before_any_model(accepted: tuple[Settings, int]) -> None:
    settings, item_id = accepted
    qa, _ = current(settings, item_id, 60)
    qa.keyword = next(k for k in ("justify", "paraphrase", "diagram") if not c1_structure.has_keyword(qa.question, k))
    app, _ = app_with(settings)
    before = calls_by_role(app.engine, item_id)
    verdicts = check_qa.verdicts(context(app, item_id), qa)
    assert [v.gate for v in verdicts] == ["C1"] and not verdicts[0].passed
    assert verdicts[0].reason.startswith("Bloom keyword missing")
    assert calls_by_role(app.engine, item_id) == before


def test_d2_catches_importances_that_do_not_sum_to_one(accepted: tuple[Settings, int]) -> None:
    settings, item_id = accepted
    qa, dset = current(settings, item_id, 61)
    assert d2_structure.check(dset.payload or {}).passed  # the sim's own set is fine
    dset.payload["causal_attributes"][0]["importance_score"] += 0.2  # type: ignore[index]
    app, _ = app_with(settings)
    verdicts = check_distractors.verdicts(context(app, item_id), qa, dset)
    assert [v.gate for v in verdicts] == ["D2"] and verdicts[0].reason.startswith("importance scores do not sum to 1")


def faulted(settings: Settings, item_id: int, phase: int, attempt: int, planted: dict[str, Planted]
            ) -> tuple[CheckerFault, Any]:
    qa, dset = current(settings, item_id, attempt)
    app, recorder = app_with(settings, planted)
    with pytest.raises(CheckerFault) as err:
        if phase == 1:
            check_qa.verdicts(context(app, item_id), qa)
        else:
            check_distractors.verdicts(context(app, item_id), qa, dset)
    return err.value, recorder


@pytest.mark.parametrize(("role", "gate", "phase"), [
    ("C2_transcript_verify", "C2.1", 1),  # was: a malformed verdict counted as "No", and the question passed
    ("C2_transcript_answer", "C2.1", 1),
    ("C2_parametric_answer_a", "C2.2", 1),
    ("C2_parametric_verify_a", "C2.2", 1),
    ("C3", "C3", 1),  # was: rejected, with feedback against the generator
    ("D3_first", "D3", 2),  # was: "order not recovered", and the set passed
    ("D4", "D4", 2),  # was: rejected
])
def test_an_unusable_checker_reply_is_a_fault_not_a_verdict(accepted: tuple[Settings, int], role: str, gate: str,
                                                            phase: int) -> None:
    settings, item_id = accepted
    attempt = 70 + ["C2_transcript_verify", "C2_transcript_answer", "C2_parametric_answer_a",
                    "C2_parametric_verify_a", "C3", "D3_first", "D4"].index(role)
    fault, recorder = faulted(settings, item_id, phase, attempt, {role: garbage})
    assert fault.gate == gate and fault.role == role and fault.reply == GARBAGE
    # the runner repaired first: the first ask and malformed_retries repairs, all unusable
    assert len(recorder.prompts(role, item_id)) == 1 + settings.build.malformed_retries
    assert "could not be used" in recorder.prompts(role, item_id)[-1].text
    assert fault.unusable_call_ids and set(fault.unusable_call_ids) <= set(fault.call_ids)


def shuffled_ranking(request: ModelRequest, duplicate: bool) -> dict[str, Any]:
    """A ranking of the shown candidates; with ``duplicate`` candidate 1 appears twice, one is missing."""
    n = len([k for k in sections(request.text()) if k.startswith("candidate ")])
    order = list(range(1, n + 1))
    if duplicate:
        order[-1] = 1
    return {"rankings": [{"rank": r, "candidate_index": i, "reasoning": "planted"} for r, i in enumerate(order, 1)],
            "overall_summary": "planted"}


def test_a_ranking_that_is_no_permutation_is_re_asked_then_a_fault(accepted: tuple[Settings, int]) -> None:
    settings, item_id = accepted
    fault, recorder = faulted(settings, item_id, 2, 80, {"D3_first": lambda r: shuffled_ranking(r, True)})
    asked = recorder.prompts("D3_first", item_id)
    assert len(asked) == 1 + settings.build.malformed_retries
    assert "ranked more than once" in asked[1].text and "missing" in asked[1].text  # the repair names it
    assert fault.gate == "D3" and "ranked more than once" in fault.reason


def test_a_repaired_ranking_decides(accepted: tuple[Settings, int]) -> None:
    """The semantic check re-asks; a permutation on the second try is read as usual."""
    settings, item_id = accepted
    tries: list[int] = []

    def once_wrong(request: ModelRequest) -> dict[str, Any]:
        tries.append(1)
        return shuffled_ranking(request, duplicate=len(tries) == 1)

    qa, dset = current(settings, item_id, 81)
    app, recorder = app_with(settings, {"D4": once_wrong})
    verdicts = check_distractors.verdicts(context(app, item_id), qa, dset)
    assert [v.gate for v in verdicts] == ["D2", "D3", "D4"] and len(tries) == 2
    assert verdicts[-1].details["ranking"] is not None


# -- a real provider against the local wire fake ---------------------------------------------------------
@pytest.fixture
def api() -> Iterator[FakeAPI]:
    with fake_api() as server:
        yield server


def over_openai(settings: Settings, api: FakeAPI, monkeypatch: pytest.MonkeyPatch, *roles: str) -> Settings:
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    real = settings.model_copy(deep=True)
    real.root = settings.root
    real.runner.backoff_base_s = 0.01
    real.providers.openai_base_url = f"{api.url}/v1"
    for role in roles:
        real.models[role] = "openai/gpt-5.4-mini"
    return real


def test_a_real_verifier_that_answers_in_prose_is_a_fault(accepted: tuple[Settings, int], api: FakeAPI,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    settings, item_id = accepted
    real = over_openai(settings, api, monkeypatch, "C2_transcript_verify")
    api.content = GARBAGE  # every chat completion: prose, no JSON
    fault, _ = faulted(real, item_id, 1, 90, {})
    sent = api.requests(CHAT)
    assert len(sent) == 1 + real.build.malformed_retries
    assert "could not be used" in json.dumps(sent[-1].json)
    assert fault.gate == "C2.1" and fault.role == "C2_transcript_verify" and fault.reply == GARBAGE
    with Session(open_store(real)) as s:
        statuses = [c.status for c in s.exec(select(ModelCall).where(col(ModelCall.id).in_(fault.unusable_call_ids)))]
    assert statuses == ["malformed"]


def test_a_real_ranker_that_repeats_a_candidate_is_re_asked_over_the_wire(
        accepted: tuple[Settings, int], api: FakeAPI, monkeypatch: pytest.MonkeyPatch) -> None:
    settings, item_id = accepted
    real = over_openai(settings, api, monkeypatch, "D3_first")
    api.content = json.dumps(ranking((1, 1), (2, 1), (3, 3), (4, 4), (5, 5)))
    fault, _ = faulted(real, item_id, 2, 91, {})
    sent = api.requests(CHAT)
    assert len(sent) == 1 + real.build.malformed_retries
    assert "ranked more than once" in json.dumps(sent[1].json)  # the repair note went over the wire
    assert fault.gate == "D3" and "candidate(s) [1] ranked more than once" in fault.reason
    api.content = json.dumps(ranking((1, 2), (2, 1), (3, 3), (4, 4), (5, 5)))  # a permutation decides
    qa, dset = current(real, item_id, 92)
    app, _ = app_with(real)
    verdicts = check_distractors.verdicts(context(app, item_id), qa, dset)
    assert verdicts[1].gate == "D3" and verdicts[1].details["D3_first"] is not None


# -- a whole item whose verifier always returns garbage --------------------------------------------------
@pytest.mark.parametrize("store", ["sqlite", "postgresql"])
def test_an_item_with_a_broken_verifier_is_neither_passed_nor_rejected(tmp_path: Path, store: str,
                                                                       request: pytest.FixtureRequest) -> None:
    url = {"store__url": request.getfixturevalue("pg_url")} if store == "postgresql" else {}
    settings = project(tmp_path, **QUIET_SIM, **url)
    seeded_store(settings, 1, world_dir=fixed_worlds("failclosed-item"))
    app, recorder = app_with(settings, {"C2_transcript_verify": garbage})
    build(settings, app=app)  # the broker redelivers the faulting step (backoff shortened by app_with)
    engine = open_store(settings)
    with Session(engine) as s:
        (item,) = s.exec(select(Item)).all()
        rows = s.exec(select(GateResult).where(GateResult.item_id == item.id)).all()
        cached = {r.request_hash for r in s.exec(select(ResponseCache))}
        verify_hashes = {c.request_hash for c in s.exec(select(ModelCall).where(
            ModelCall.role == "C2_transcript_verify"))}
    assert item.id is not None
    assert item.state == "failed" and item.failed_from == "qa_generated"
    assert item.phase1_attempts == 1  # the question was never rejected: no second generation
    assert item.error and item.error.startswith("checker fault: gate C2.1 (C2_transcript_verify)")
    assert "retry-failed" in item.error
    faults = [r for r in rows if r.verdict == "fault"]
    assert len(faults) == FAULTS_PER_STEP == len(rows)  # nothing passed or rejected, nothing else recorded
    assert all(r.gate == "C2.1" and r.rejected_output is None and r.attempt == 1 for r in faults)
    assert all(r.details and r.details["reply"] == GARBAGE for r in faults)
    assert phase1_failures(engine, item.id) == []  # no feedback against the generator
    # every retry asked again: no unusable reply was read back from the cache
    assert len(recorder.prompts("C2_transcript_verify")) == FAULTS_PER_STEP * (1 + settings.build.malformed_retries)
    assert not verify_hashes & cached
    data = funnel(settings)["gates"]["C2.1"]
    assert (data["seen"], data["passed"], data["rejected"], data["checker_faults"]) == (0, 0, 0, FAULTS_PER_STEP)
    assert data["fault_reasons"] == {"C2_transcript_verify reply unusable": FAULTS_PER_STEP}
    env = env_for(**QUIET_SIM, **url)  # the commands read the same project settings as the test
    table = CliRunner().invoke(main, ["--project", str(settings.root), "funnel"], env=env)
    assert table.exit_code == 0 and "checker" in table.output, table.output
    # the C2.1 row: seen, passed, rejected 0, rejected % "–", checker faults 3 (rich may wrap the headers)
    assert re.search(r"C2\.1\s*│\s*0\s*│\s*0\s*│\s*0\s*│\s*–\s*│\s*3\s*│", table.output), table.output

    # retry-failed with the checker still broken: a fresh count, and failed again after the bound
    assert items.retry_failed(engine, limits_for(settings)) == [item.id]
    resume(settings, app=app)
    with Session(engine) as s:
        again = s.get(Item, item.id)
        n_faults = len(s.exec(select(GateResult).where(GateResult.verdict == "fault")).all())
    assert again is not None and again.state == "failed" and n_faults == 2 * FAULTS_PER_STEP

    # retry-failed (the command) once the checker works: the item goes on where it stopped and is accepted
    result = CliRunner().invoke(main, ["--project", str(settings.root), "retry-failed"], env=env)
    assert result.exit_code == 0, result.output
    with Session(engine) as s:
        done = s.get(Item, item.id)
        rejected = s.exec(select(GateResult).where(GateResult.verdict == "reject")).all()
    assert done is not None and done.state == "accepted" and done.phase1_attempts == 1 and not rejected
