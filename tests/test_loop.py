"""The feedback loop (SPEC E1–E4) on whole sim builds: failure histories in every new prompt, Phase II
retries on the same question, a Phase I restart after three Phase II rejections, a discard at T, the
causal record of accepted sets, and the attempt limits over the whole store."""

from __future__ import annotations

from pathlib import Path

from sqlmodel import Session, col, select

from playlisteval.actors.build_run import build
from playlisteval.store.tables import QA, Answer, DistractorSet, GateResult, Item, ItemEvent
from tests.builder_helpers import app_with, check_limits, fixed_worlds
from tests.helpers import QUIET_SIM, project, seeded_store


def events(session: Session, item_id: int) -> list[tuple[str, str, str]]:
    rows = session.exec(select(ItemEvent).where(ItemEvent.item_id == item_id).order_by(col(ItemEvent.version)))
    return [(e.from_state, e.event, e.to_state) for e in rows]


def test_three_phase2_rejections_restart_phase1_and_t_discards(tmp_path: Path) -> None:
    # every set swaps two severities, so the video ranking (D4) rejects every one of them
    settings = project(tmp_path, **{**QUIET_SIM, "sim__wrong_severity": 1})
    seeded_store(settings, 1, world_dir=fixed_worlds("loop-restart"))
    app, recorder = app_with(settings)
    build(settings, app=app)
    with Session(app.engine) as s:
        (item,) = s.exec(select(Item)).all()
        assert (item.state, item.phase1_attempts, item.phase2_attempts) == ("discarded", 2, 6)
        trail = events(s, item.id or 0)
        questions = {q.id: q.attempt for q in s.exec(select(QA))}
        sets = s.exec(select(DistractorSet).order_by(col(DistractorSet.attempt))).all()
        rejections = s.exec(select(GateResult).where(GateResult.verdict == "reject")).all()
    phase2_round = [("gated", "generated", "degraded"), ("degraded", "rejected", "gated")] * 2 + [
        ("gated", "generated", "degraded")]
    assert trail == [
        ("pending", "generated", "qa_generated"), ("qa_generated", "passed", "gated"), *phase2_round,
        ("degraded", "rejected", "pending"),  # the third rejection gives the question up (SPEC E2)
        ("pending", "generated", "qa_generated"), ("qa_generated", "passed", "gated"), *phase2_round,
        ("degraded", "rejected", "discarded"),  # the sixth Phase II attempt of the seed (SPEC E3)
    ]
    # Phase II retries keep the verified question
    assert [questions[d.qa_id] for d in sets] == [1, 1, 1, 2, 2, 2]
    assert [r.gate for r in rejections] == ["D4"] * 6
    assert all(r.rejected_output and "rating_4" in r.rejected_output for r in rejections)  # SPEC E1

    # every D1 prompt lists all earlier rejected sets of the seed, with the gate's guidance (E1, E4)
    d1 = recorder.prompts("D1")
    assert [p.attempt for p in d1] == [1, 2, 3, 4, 5, 6]
    for k, prompt in enumerate(d1):
        assert prompt.text.count("--- Attempt ") == k
        assert prompt.text.count("did not confirm the intended order") == k  # D4's guidance
        assert prompt.text.count("Its rating 1 answer was:") == k
        # sets 1-3 were written for question 1, sets 4-6 for question 2
        assert prompt.text.count("It answered an earlier question") == (3 if k >= 3 else 0)
    # the restarted Phase I prompt lists the question given up, with what its sets failed on
    b = recorder.prompts("B")
    assert [p.attempt for p in b] == [1, 2]
    assert "REJECTED" not in b[0].text
    assert b[1].text.count("--- Attempt ") == 1 and "rejected by E2" in b[1].text
    assert "its wrong answers were rejected 3 time(s)" in b[1].text
    assert "No acceptable set of wrong answers" in b[1].text
    assert check_limits(app.engine, settings) == 1


def test_a_seed_is_discarded_after_t_phase1_rejections(tmp_path: Path) -> None:
    settings = project(tmp_path, **{**QUIET_SIM, "sim__transcript_answerable": 1})
    seeded_store(settings, 1, world_dir=fixed_worlds("loop-discard1"))
    app, recorder = app_with(settings)
    build(settings, app=app)
    with Session(app.engine) as s:
        (item,) = s.exec(select(Item)).all()
        assert (item.state, item.phase1_attempts, item.phase2_attempts) == ("discarded", 6, 0)
        rejections = s.exec(select(GateResult).where(GateResult.verdict == "reject")
                            .order_by(col(GateResult.id))).all()
    assert [(r.gate, r.attempt) for r in rejections] == [("C2.1", k) for k in range(1, 7)]
    assert all(r.rejected_output and r.rejected_output["question"] for r in rejections)
    b = recorder.prompts("B")
    assert [p.attempt for p in b] == [1, 2, 3, 4, 5, 6]
    for k, prompt in enumerate(b):  # attempt k + 1 lists the k questions before it, each with guidance
        assert prompt.text.count("--- Attempt ") == k
        assert prompt.text.count("answered from the transcripts alone") == k
        for earlier in rejections[:k]:
            assert earlier.rejected_output and earlier.rejected_output["question"] in prompt.text
    assert check_limits(app.engine, settings) == 1


def test_t_and_the_phase2_limit_are_settings(tmp_path: Path) -> None:
    settings = project(tmp_path, **{**QUIET_SIM, "sim__wrong_severity": 1, "build__attempts_per_phase": 4,
                                    "build__phase2_per_question": 2})
    seeded_store(settings, 1, world_dir=fixed_worlds("loop-limits"))
    app, _ = app_with(settings)
    build(settings, app=app)
    with Session(app.engine) as s:
        (item,) = s.exec(select(Item)).all()
    assert (item.state, item.phase1_attempts, item.phase2_attempts) == ("discarded", 2, 4)
    check_limits(app.engine, settings)


def test_accepted_items_keep_five_answers_and_their_causal_record(tmp_path: Path) -> None:
    settings = project(tmp_path, **QUIET_SIM)
    seeded_store(settings, 3, world_dir=fixed_worlds("loop-accepted"))
    app, _ = app_with(settings)
    build(settings, app=app)
    with Session(app.engine) as s:
        accepted = s.exec(select(Item).where(Item.state == "accepted")).all()
        assert len(accepted) == 3
        for item in accepted:
            dset = s.get(DistractorSet, item.current_set_id)
            assert dset is not None and dset.payload is not None
            answers = {a.rating: a for a in s.exec(select(Answer).where(Answer.set_id == dset.id))}
            assert sorted(answers) == [1, 2, 3, 4, 5]
            importance = {a["attribute_name"]: a["importance_score"] for a in dset.payload["causal_attributes"]}
            assert len(importance) == 5 and abs(sum(importance.values()) - 1) < 1e-6
            gold = answers[5]
            assert gold.degraded_weight == 0 and gold.record and "causal_attributes" in gold.record
            qa = s.get(QA, dset.qa_id)
            assert qa is not None and gold.text == qa.answer
            for rating in (4, 3, 2, 1):
                a = answers[rating]
                assert a.record is not None and a.record == dset.payload[f"rating_{rating}"]
                assert a.text == a.record["response"]
                degraded = {d["attribute_name"] for d in a.record["attribute_degradations"]}
                assert a.degraded_weight == round(sum(importance[n] for n in degraded), 6) > 0
            # the sim nests its errors, so a worse answer never degrades less
            weights = [answers[r].degraded_weight for r in (4, 3, 2, 1)]
            assert weights == sorted(weights)
    check_limits(app.engine, settings)
