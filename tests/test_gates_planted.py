"""One planted defect per gate, caught by exactly that gate (issue 5, "Done when").

A quiet sim build gives accepted items; each test copies an accepted question or set, plants one
defect, runs the phase's gates through the real runner, store and sim (a planted reply stands in for
one role where the test says so), and checks that the gates before the target passed, the target
rejected, and nothing after it ran.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from typing import Any

import pytest
from sqlmodel import Session, col, select

from playlisteval.actors.build_run import build
from playlisteval.build.gates import GateVerdict
from playlisteval.build.gates.citations import uniform
from playlisteval.build.stages import check_distractors, check_qa
from playlisteval.build.stages.inputs import load_clips
from playlisteval.config import Settings
from playlisteval.models.request import ModelRequest
from playlisteval.store import forget_engines, open_store
from playlisteval.store.tables import QA, Chunk, DistractorSet, Item
from playlisteval.world.sim.context import sections
from playlisteval.world.synth import vocab
from tests.builder_helpers import Planted, app_with, calls_by_role, context, fixed_worlds
from tests.helpers import QUIET_SIM, project, seeded_store

PHASE1 = ["C1", "C2.1", "C2.2", "C3"]
PHASE2 = ["D2", "D3", "D4"]


@pytest.fixture(scope="module")
def accepted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Settings, int]]:
    tmp = tmp_path_factory.mktemp("planted")
    settings = project(tmp, **QUIET_SIM)
    seeded_store(settings, 2, world_dir=fixed_worlds("planted"))  # the same draws on every run
    build(settings)
    with Session(open_store(settings)) as s:
        item = s.exec(select(Item).where(Item.state == "accepted").order_by(col(Item.id))).first()
        assert item is not None and item.id is not None
        item_id = item.id
    yield settings, item_id
    forget_engines()


def question_of(settings: Settings, item_id: int, attempt: int, **changes: Any) -> QA:
    """A copy of the item's accepted question as a new attempt (a new attempt is a new request)."""
    app, _ = app_with(settings)
    with Session(app.engine) as s:
        item = s.get(Item, item_id)
        assert item is not None and item.current_qa_id is not None
        qa = s.get(QA, item.current_qa_id)
        assert qa is not None
    payload = copy.deepcopy(qa.payload or {})
    payload.update(changes)
    return QA(item_id=item_id, attempt=attempt, question=payload["question"], answer=payload["answer"],
              payload=payload)


def set_of(settings: Settings, item_id: int, attempt: int) -> tuple[QA, DistractorSet]:
    app, _ = app_with(settings)
    with Session(app.engine) as s:
        item = s.get(Item, item_id)
        assert item is not None and item.current_set_id is not None
        dset = s.get(DistractorSet, item.current_set_id)
        assert dset is not None
        qa = s.get(QA, dset.qa_id)
        assert qa is not None
    return qa, DistractorSet(item_id=item_id, qa_id=dset.qa_id, attempt=attempt, payload=copy.deepcopy(dset.payload))


def run_phase1(settings: Settings, item_id: int, qa: QA, planted: dict[str, Planted] | None = None
               ) -> tuple[list[GateVerdict], dict[str, int]]:
    app, _ = app_with(settings, planted)
    before = calls_by_role(app.engine, item_id)
    verdicts = check_qa.verdicts(context(app, item_id), qa)
    after = calls_by_role(app.engine, item_id)
    return verdicts, {role: after[role] - before[role] for role in after if after[role] - before[role]}


def run_phase2(settings: Settings, item_id: int, qa: QA, dset: DistractorSet,
               planted: dict[str, Planted] | None = None) -> tuple[list[GateVerdict], dict[str, int]]:
    app, _ = app_with(settings, planted)
    before = calls_by_role(app.engine, item_id)
    verdicts = check_distractors.verdicts(context(app, item_id), qa, dset)
    after = calls_by_role(app.engine, item_id)
    return verdicts, {role: after[role] - before[role] for role in after if after[role] - before[role]}


def caught_by(verdicts: list[GateVerdict], order: list[str], gate: str) -> None:
    """Every gate before ``gate`` passed, ``gate`` rejected, and none after it ran."""
    assert [v.gate for v in verdicts] == order[: order.index(gate) + 1], verdicts
    assert all(v.passed for v in verdicts[:-1]), verdicts
    assert not verdicts[-1].passed, verdicts[-1]


# -- controls: the accepted candidates pass every gate ----------------------------------------------
def test_the_unchanged_question_and_set_pass_every_gate(accepted: tuple[Settings, int]) -> None:
    settings, item_id = accepted
    verdicts, calls = run_phase1(settings, item_id, question_of(settings, item_id, 40))
    assert [v.gate for v in verdicts] == PHASE1 and all(v.passed for v in verdicts), verdicts
    assert calls["C3"] == 1
    qa, dset = set_of(settings, item_id, 40)
    verdicts, calls = run_phase2(settings, item_id, qa, dset)
    assert [v.gate for v in verdicts] == PHASE2 and all(v.passed for v in verdicts), verdicts


# -- Phase I ----------------------------------------------------------------------------------------
def test_a_citation_spanning_two_clips_fails_c1(accepted: tuple[Settings, int]) -> None:
    settings, item_id = accepted
    qa = question_of(settings, item_id, 41)
    first, rest = qa.answer.split("\n\n", 1)
    qa.answer = f"{first} Both moments belong together (1 @ 0:10 - 2 @ 0:40).\n\n{rest}"
    verdicts, calls = run_phase1(settings, item_id, qa)
    caught_by(verdicts, PHASE1, "C1")
    assert verdicts[-1].reason.startswith("malformed citation: a range runs from one clip into another")
    assert calls == {}  # a structural gate: no model was asked


def extractive_answerer(request: ModelRequest) -> dict[str, Any]:
    """A transcript-only answerer that answers with what the transcripts say (no guessing)."""
    said = re.sub(r"\[(?:Window \d+|\d+:\d\d)\]", " ", sections(request.text()).get("transcripts", ""))
    return {"explanation": "answered from the transcripts", "answer": " ".join(said.split())}


def test_a_transcript_answerable_question_is_stopped_by_c2_1_before_c3(accepted: tuple[Settings, int]) -> None:
    settings, item_id = accepted
    planted: dict[str, Planted] = {"C2_transcript_answer": extractive_answerer}
    # with ordinary narration, reading the transcripts gives nothing away: every gate passes
    verdicts, _ = run_phase1(settings, item_id, question_of(settings, item_id, 42), planted)
    assert [v.gate for v in verdicts] == PHASE1 and verdicts[-1].passed, verdicts
    # plant the defect: the narrator reads out what the frames show
    app, _ = app_with(settings)
    clips = load_clips(app.engine, item_id)
    qa = question_of(settings, item_id, 43)
    with Session(app.engine) as s:
        chunks = [c for clip in clips for c in s.exec(select(Chunk).where(Chunk.video_id == clip.video_id))]
        saved = {c.id: c.transcript for c in chunks}
        for c in chunks:
            c.transcript = uniform(qa.answer).replace("\n\n", " ")
            s.add(c)
        s.commit()
    try:
        verdicts, calls = run_phase1(settings, item_id, qa, planted)
    finally:
        with Session(app.engine) as s:
            for c in s.exec(select(Chunk).where(Chunk.id.in_(list(saved)))):  # type: ignore[union-attr]
                c.transcript = saved[c.id]
                s.add(c)
            s.commit()
    caught_by(verdicts, PHASE1, "C2.1")
    assert verdicts[-1].details["windows"] == 6
    assert "C3" not in calls and "C2_parametric_answer_a" not in calls  # never reached C2.2 or C3


def test_a_question_answerable_from_memory_is_stopped_by_c2_2(accepted: tuple[Settings, int]) -> None:
    settings, item_id = accepted
    knowing = settings.model_copy(deep=True)
    knowing.sim.parametric_answerable = 1.0  # the sim's answerers "know" what the question asks
    knowing.root = settings.root
    verdicts, calls = run_phase1(knowing, item_id, question_of(settings, item_id, 44))
    caught_by(verdicts, PHASE1, "C2.2")
    assert calls["C2_parametric_verify_a"] == calls["C2_parametric_verify_b"] == 1
    assert "C3" not in calls


def verdict_reply(judgement: str) -> Planted:
    return lambda _request: {"explanation": "planted", "judgement": judgement}


@pytest.mark.parametrize(("a", "b", "rejected", "b_ran"), [
    ("No", None, False, False),  # A said No: B is not asked
    ("Yes", "No", False, True),  # only A said Yes: kept
    ("Yes", "Yes", True, True),  # both said Yes: rejected
])
def test_c2_2_runs_combination_b_only_after_a_yes(accepted: tuple[Settings, int], a: str, b: str | None,
                                                  rejected: bool, b_ran: bool) -> None:
    settings, item_id = accepted
    planted = {"C2_parametric_verify_a": verdict_reply(a)}
    if b:
        planted["C2_parametric_verify_b"] = verdict_reply(b)
    attempt = {"No": 45, "Yes": 46}[a] + (2 if b == "Yes" else 0)
    verdicts, calls = run_phase1(settings, item_id, question_of(settings, item_id, attempt), planted)
    c22 = next(v for v in verdicts if v.gate == "C2.2")
    assert c22.passed is not rejected
    assert ("C2_parametric_answer_b" in calls) is b_ran and ("C2_parametric_verify_b" in calls) is b_ran
    assert ("b" in c22.details) is b_ran


def test_a_hop_the_video_does_not_show_is_stopped_by_c3(accepted: tuple[Settings, int]) -> None:
    settings, item_id = accepted
    qa = question_of(settings, item_id, 50)
    hop = qa.payload["hop_1"]  # type: ignore[index]
    colour = next(w for w in re.findall(r"[a-z]+", hop) if w in vocab.COLOURS)
    other = next(c for c in vocab.COLOURS if c != colour)
    qa.payload = {**(qa.payload or {}), "hop_1": re.sub(rf"\b{colour}\b", other, hop)}
    verdicts, calls = run_phase1(settings, item_id, qa)
    caught_by(verdicts, PHASE1, "C3")
    assert verdicts[-1].reason.startswith("question not grounded in the videos")


# -- Phase II ---------------------------------------------------------------------------------------
def test_a_set_without_visual_only_degradations_is_stopped_by_d2(accepted: tuple[Settings, int]) -> None:
    settings, item_id = accepted
    qa, dset = set_of(settings, item_id, 41)
    for entry in dset.payload["rating_2"]["attribute_degradations"]:  # type: ignore[index]
        for element in entry["degradation_by_elements"]:
            element["modality"] = "text_verifiable"
    verdicts, calls = run_phase2(settings, item_id, qa, dset)
    caught_by(verdicts, PHASE2, "D2")
    assert verdicts[-1].reason == "no visual-only degradation: rating 2" and calls == {}


def narrated_slips(text: str, n: int) -> str:
    """Change ``n`` narrated words (topic nouns) to another topic's: facts a transcript contradicts."""
    words = [m for m in re.finditer(r"[A-Za-z]+", text) if m.group(0).lower() in vocab.TOPIC_OF_WORD]
    assert len(words) >= n, "the gold has too few narrated words to plant the defect"
    own = {vocab.TOPIC_OF_WORD[m.group(0).lower()] for m in words}
    foreign = sorted(w for w, t in vocab.TOPIC_OF_WORD.items() if t not in own)
    for i, m in enumerate(sorted(words[:n], key=lambda m: -m.start())):
        text = text[: m.start()] + foreign[i] + text[m.end():]
    return text


def test_a_set_that_changes_a_narrated_fact_is_stopped_by_d3(accepted: tuple[Settings, int]) -> None:
    settings, item_id = accepted
    qa, dset = set_of(settings, item_id, 42)
    payload: dict[str, Any] = dset.payload  # type: ignore[assignment]
    for rating in (4, 3, 2, 1):  # the worse the answer, the more of what was said it gets wrong
        payload[f"rating_{rating}"]["response"] = narrated_slips(payload[f"rating_{rating}"]["response"], 5 - rating)
    verdicts, calls = run_phase2(settings, item_id, qa, dset)
    caught_by(verdicts, PHASE2, "D3")
    assert calls["D3_first"] == calls["D3_second"] == 1 and "D4" not in calls


def test_a_swapped_severity_order_is_stopped_by_d4(accepted: tuple[Settings, int]) -> None:
    settings, item_id = accepted
    qa, dset = set_of(settings, item_id, 43)
    payload: dict[str, Any] = dset.payload  # type: ignore[assignment]
    payload["rating_3"]["response"], payload["rating_2"]["response"] = (
        payload["rating_2"]["response"], payload["rating_3"]["response"])
    verdicts, calls = run_phase2(settings, item_id, qa, dset)
    caught_by(verdicts, PHASE2, "D4")
    assert verdicts[-1].details["ranking"] == [4, 2, 3, 1]


def ranking_reply(payload: dict[str, Any], gold: str, order: list[int]) -> Planted:
    """A planted text judge that ranks the shown candidates in the given order of ratings."""
    texts = {uniform(gold): 5, **{uniform(payload[f"rating_{r}"]["response"]): r for r in (4, 3, 2, 1)}}

    def reply(request: ModelRequest) -> dict[str, Any]:
        shown = {int(k.split()[1]): texts[v] for k, v in sections(request.text()).items() if k.startswith("candidate ")}
        by_rating = {rating: number for number, rating in shown.items()}
        return {"rankings": [{"rank": i, "candidate_index": by_rating[r], "reasoning": "planted"}
                             for i, r in enumerate(order, 1)], "overall_summary": "planted"}
    return reply


def test_d3_asks_the_second_judge_only_when_the_first_recovered_the_order(accepted: tuple[Settings, int]) -> None:
    settings, item_id = accepted
    qa, dset = set_of(settings, item_id, 44)
    payload: dict[str, Any] = dset.payload  # type: ignore[assignment]
    right, wrong = [5, 4, 3, 2, 1], [5, 4, 3, 1, 2]
    # the first judge misses the order: the second is never asked
    verdicts, calls = run_phase2(settings, item_id, qa, dset, {"D3_first": ranking_reply(payload, qa.answer, wrong)})
    assert verdicts[1].gate == "D3" and verdicts[1].passed and "D3_second" not in calls
    # the first recovers it, the second does not: kept
    dset.attempt = 45
    verdicts, calls = run_phase2(settings, item_id, qa, dset, {"D3_first": ranking_reply(payload, qa.answer, right),
                                                              "D3_second": ranking_reply(payload, qa.answer, wrong)})
    assert verdicts[1].passed and calls["D3_second"] == 1
    # both recover it: rejected
    dset.attempt = 46
    verdicts, _ = run_phase2(settings, item_id, qa, dset, {"D3_first": ranking_reply(payload, qa.answer, right),
                                                          "D3_second": ranking_reply(payload, qa.answer, right)})
    caught_by(verdicts, PHASE2, "D3")


def test_gold_and_wrong_answers_reach_d3_identically_formatted(accepted: tuple[Settings, int]) -> None:
    settings, item_id = accepted
    qa, dset = set_of(settings, item_id, 47)
    app, recorder = app_with(settings)
    check_distractors.verdicts(context(app, item_id), qa, dset)
    (prompt,) = [s.text for s in recorder.prompts("D3_first")]
    candidates = {k: v for k, v in sections(prompt).items() if k.startswith("candidate ")}
    assert len(candidates) == 5 and uniform(qa.answer) in candidates.values()
    assert all("@" not in v and v == uniform(v) for v in candidates.values())


def test_c2_1_gets_six_windows_from_the_playlist_shuffled_per_item(accepted: tuple[Settings, int]) -> None:
    from playlisteval.build.stages.inputs import transcript_windows

    settings, item_id = accepted
    app, _ = app_with(settings)
    ctx = context(app, item_id)
    clips = load_clips(app.engine, item_id)
    windows = transcript_windows(app.engine, clips, ctx.rng("C2.1"), 30)
    assert len(windows) == 6
    own = [c.transcript() for c in clips]
    assert all(w in windows for w in own)
    with Session(app.engine) as s:  # the other four come from videos that hold neither clip
        said_in: dict[str, set[int]] = {}
        for chunk in s.exec(select(Chunk)):
            said_in.setdefault(chunk.transcript, set()).add(chunk.video_id)
    others = [w for w in windows if w not in own]
    assert len(others) == 4
    for w in others:
        videos = {v for line in w.splitlines() for v in said_in[line.split("] ", 1)[1]]}
        assert videos and not videos & {c.video_id for c in clips}
    assert transcript_windows(app.engine, clips, ctx.rng("C2.1"), 30) == windows  # seeded by the item
