"""The sim provider: every role answers in its schema, from world files alone (no videos needed)."""

from __future__ import annotations

import json
import math
import random
import statistics
from pathlib import Path

import pytest

from playlisteval.config import DEFAULT_MODELS, SimSettings
from playlisteval.errors import PermanentModelError, TransientModelError
from playlisteval.eval.shortcuts import overlap
from playlisteval.models.request import ImagePart, ModelRequest, TextPart, VideoPart
from playlisteval.prompts.schemas import SCHEMAS
from playlisteval.world.sim import wording as sim_wording
from playlisteval.world.sim.context import sections
from playlisteval.world.sim.provider import REFUSAL, ROLES, SimProvider
from playlisteval.world.synth import facts
from playlisteval.world.synth.make import plan_world
from playlisteval.world.synth.world import load_world, save_world, scenes_in
from tests.builder_helpers import fixed_worlds

CLEAN = SimSettings(**{name: 0.0 for name in SimSettings.model_fields})


@pytest.fixture
def videos(tmp_path: Path) -> tuple[str, str]:
    """Two 5-minute episodes of one playlist: world files only, the .mp4s do not exist."""
    rng, taken, out = random.Random(11), set(), []
    for n in (1, 2):
        world = plan_world(rng, taken, domain="Documentary", playlist="Ocean Worlds", topic="Ocean Worlds",
                           title=f"Ocean Worlds Episode {n}", episode=n, duration=300)
        path = tmp_path / f"0{n} - Ocean Worlds Episode {n}.mp4"
        save_world(world, path)
        out.append(str(path))
    return out[0], out[1]


def clips(videos: tuple[str, str], audio: bool = True) -> list[VideoPart]:
    return [VideoPart(path=videos[0], start=60, end=240, label="Clip 1", audio=audio),
            VideoPart(path=videos[1], start=30, end=210, label="Clip 2", audio=audio)]


def call(sim: SimProvider, role: str, parts: list, text: str, schema: str | None = None, attempt: int = 0):
    request = ModelRequest(role=role, parts=[*parts, TextPart(text=text)], response_schema=schema,
                           attempt=attempt)
    return sim.complete(DEFAULT_MODELS[role].split("/", 1)[1], request, None, 30)


def parsed(reply, schema: str):
    return SCHEMAS[schema].model_validate_json(reply.text)


def make_qa(sim: SimProvider, videos, attempt: int = 0):
    text = "Write one question.\nKeyword: interpret\nRow: Meta-Cognitive\nColumn: Understand\n"
    return parsed(call(sim, "B", clips(videos), text, "QAGeneration", attempt), "QAGeneration")


def make_set(sim: SimProvider, videos, qa):
    text = f"Question: {qa.question}\n\nGold answer:\n{qa.answer}\n\nInstructions:\nWrite four degraded answers."
    return parsed(call(sim, "D1", clips(videos), text, "DistractorGeneration"), "DistractorGeneration")


def chunk_cover(answer: str, parts: list[VideoPart]) -> dict[int, set[int]]:
    """What gate C1 will compute: 30-s chunks covered per clip by the answer's citations."""
    out: dict[int, set[int]] = {1: set(), 2: set()}
    for sentence in facts.sentences(answer):
        for clip, a, b in facts.citation_ranges(sentence):
            base = parts[(clip or 1) - 1].start
            out[clip or 1].update(range(int((base + a) // 30), math.ceil((base + b) / 30)))
    return out


def candidates_text(answers: list[str]) -> str:
    return "Rank the candidates.\n\n" + "\n\n".join(
        f"Candidate {i}:\n{a}\n\nDegradation record:\n(withheld)" for i, a in enumerate(answers))


def test_every_role_is_played() -> None:
    assert set(DEFAULT_MODELS) == ROLES


def test_generator_follows_the_structural_rules(videos) -> None:
    sim = SimProvider(CLEAN, 1)
    for attempt in range(8):
        qa = make_qa(sim, videos, attempt)
        assert "interpret" in qa.question.lower() and " and " not in f" {qa.question.lower()} "
        assert qa.question.count("?") == 1 and qa.question_type.row == "Meta-Cognitive"
        assert len(facts.paragraphs(qa.answer)) >= 3
        cover = chunk_cover(qa.answer, clips(videos))
        assert len(cover[1]) >= 2 and len(cover[2]) >= 2 and 4 <= len(cover[1]) + len(cover[2]) <= 30
        assert {r.clip_id for r in qa.clip_ranges} == {1, 2}
        # the question needs the video: the narration never carries its visual words
        assert facts.visual_words(qa.answer) and not facts.visual_words(qa.bridge)


def test_bad_citations_break_the_rules(videos) -> None:
    sim = SimProvider(CLEAN.model_copy(update={"bad_citation": 1.0}), 1)
    for attempt in range(6):
        qa = make_qa(sim, videos, attempt)
        cover = chunk_cover(qa.answer, clips(videos))
        broken = (len(facts.paragraphs(qa.answer)) < 3 or min(len(c) for c in cover.values()) < 2
                  or " - clip2 @" in qa.answer)
        assert broken, qa.answer


def test_deterministic_by_seed_model_and_attempt(videos) -> None:
    a = [make_qa(SimProvider(CLEAN, 5), videos, k).model_dump() for k in range(4)]
    b = [make_qa(SimProvider(CLEAN, 5), videos, k).model_dump() for k in range(4)]
    assert a == b
    assert len({json.dumps(x, sort_keys=True) for x in a}) > 1, "a new attempt may turn out differently"
    assert make_qa(SimProvider(CLEAN, 6), videos).model_dump() != a[0]


def test_text_only_tests(videos) -> None:
    qa = make_qa(SimProvider(CLEAN, 2), videos)
    for rate, want in ((1.0, "Yes"), (0.0, "No")):
        sim = SimProvider(CLEAN.model_copy(update={"transcript_answerable": rate, "parametric_answerable": rate}), 2)
        for role in ("C2_transcript_answer", "C2_parametric_answer_a", "C2_parametric_answer_b"):
            reply = call(sim, role, [], f"Question: {qa.question}\n\nTranscripts:\n[Video 1 @ 0:00] whales",
                         "TextAnswer")
            answer = parsed(reply, "TextAnswer").answer
            for verifier in ("C2_transcript_verify", "C2_parametric_verify_a", "C2_parametric_verify_b"):
                verdict = parsed(call(sim, verifier, [], f"Gold answer:\n{qa.answer}\n\nCandidate answer:\n"
                                      f"{answer}\n\nJudge it.", "Verdict"), "Verdict")
                assert verdict.judgement == want, (role, verifier, answer)


def test_grounding(videos) -> None:
    sim = SimProvider(CLEAN, 3)
    qa = make_qa(sim, videos)
    checklist = f"Hop 1: {qa.hop_1}\nHop 2: {qa.hop_2}\nBridge: {qa.bridge}\n\nVerify."
    g = parsed(call(sim, "C3", clips(videos, audio=False), checklist, "Grounding"), "Grounding")
    assert (g.query_grounded, g.answer_grounded) == ("Yes", "Yes")
    v = qa.hop_1.split('"')[1]  # the sign of hop 1: change what stands under it
    wrong = qa.hop_1.replace(" stands", " no longer stands").replace(
        facts.claims(qa.hop_1)["shape"].pop(), "heart" if "heart" not in qa.hop_1 else "star")
    bad = parsed(call(sim, "C3", clips(videos, audio=False), f"Hop 1: {wrong}\nHop 2: {qa.hop_2}\n"
                      f"Bridge: {qa.bridge}\n", "Grounding"), "Grounding")
    assert bad.query_grounded == "No" and v in wrong
    flaky = SimProvider(CLEAN.model_copy(update={"ungrounded": 1.0}), 3)
    f = parsed(call(flaky, "C3", clips(videos, audio=False), checklist, "Grounding"), "Grounding")
    assert "No" in (f.query_grounded, f.answer_grounded)


def test_distractors_and_the_video_ranking(videos) -> None:
    exact = 0
    for seed in range(6):
        sim = SimProvider(CLEAN, seed)
        qa = make_qa(sim, videos)
        dg = make_set(sim, videos, qa)
        assert abs(sum(a.importance_score for a in dg.causal_attributes) - 1) < 1e-9
        answers = {r: getattr(dg, f"rating_{r}") for r in (4, 3, 2, 1)}
        for ans in answers.values():
            assert ans.response and ans.response != qa.answer
            modalities = {e.modality for d in ans.attribute_degradations for e in d.degradation_by_elements}
            assert modalities == {"visual_only"}
            assert len(facts.paragraphs(ans.response)) == len(facts.paragraphs(qa.answer))
        # narration is untouched: the topic words of every answer are the gold's
        assert all(facts.topic_words(a.response) == facts.topic_words(qa.answer) for a in answers.values())
        order = [2, 4, 1, 3]  # shown shuffled; D4 must put them back as 4, 3, 2, 1
        text = candidates_text([answers[r].response for r in order])
        ranking = parsed(call(sim, "D4", clips(videos, audio=False), text, "Ranking"), "Ranking")
        got = [order[e.candidate_index] for e in sorted(ranking.rankings, key=lambda e: e.rank)]
        exact += got == [4, 3, 2, 1]
    assert exact == 6


def test_wrong_severity_fails_the_video_ranking(videos) -> None:
    sim = SimProvider(CLEAN.model_copy(update={"wrong_severity": 1.0}), 4)
    dg = make_set(sim, videos, make_qa(sim, videos))
    text = candidates_text([getattr(dg, f"rating_{r}").response for r in (4, 3, 2, 1)])
    ranking = parsed(call(sim, "D4", clips(videos, audio=False), text, "Ranking"), "Ranking")
    assert [e.candidate_index for e in sorted(ranking.rankings, key=lambda e: e.rank)] != [0, 1, 2, 3]


def test_text_ranking_sees_only_narrated_slips(videos) -> None:
    for rate, want_exact in ((1.0, True), (0.0, False)):
        sim = SimProvider(CLEAN.model_copy(update={"narrated_degradation": rate}), 8)
        qa = make_qa(sim, videos)
        dg = make_set(sim, videos, qa)
        mods = {e.modality for d in dg.rating_4.attribute_degradations for e in d.degradation_by_elements}
        assert ("text_verifiable" in mods) == want_exact
        answers = [facts.strip_citations(qa.answer)] + [
            facts.strip_citations(getattr(dg, f"rating_{r}").response) for r in (4, 3, 2, 1)]
        order = [3, 0, 4, 1, 2]
        text = candidates_text([answers[i] for i in order]).replace("Candidate ", "Response Candidate ")
        exact = 0
        for role in ("D3_first", "D3_second"):
            ranking = parsed(call(sim, role, [], text, "Ranking"), "Ranking")
            got = [order[e.candidate_index] for e in sorted(ranking.rankings, key=lambda e: e.rank)]
            assert sorted(got) == [0, 1, 2, 3, 4]
            exact += got == [0, 1, 2, 3, 4]
        assert (exact == 2) == want_exact


def test_judges_see_what_their_frames_show(videos) -> None:
    sim = SimProvider(CLEAN, 9)
    qa = make_qa(sim, videos)
    dg = make_set(sim, videos, qa)
    frames = [ImagePart(path=f"f{i}.jpg", source=v, timestamp=t)
              for i, v in enumerate(videos) for t in range(0, 300, 4)]
    gold, worst = facts.strip_citations(qa.answer), facts.strip_citations(dg.rating_1.response)
    right = 0
    for k in range(20):
        a, b, better = (gold, worst, "A") if k % 2 else (worst, gold, "B")
        reply = call(sim, "G", frames, f"Question: {qa.question}\n\nModel A:\n{a}\n\nModel B:\n{b}\n\n"
                     f"Verdict:\nPick one. ({k})")
        assert reply.text.rstrip().endswith(("[[A]]", "[[B]]"))
        right += reply.text.rstrip().endswith(f"[[{better}]]")
    assert right == 20
    # without evidence a weak judge guesses, leaning to the first answer
    picks_a = sum(call(sim, "F_first", [], f"Model A:\n{a}\n\nModel B:\n{a}\n\nVerdict:\n{k}").text
                  .endswith("[[A]]") for k in range(200) for a in [gold])
    assert 110 < picks_a < 170


@pytest.mark.parametrize("fault", ["rate_limited", "malformed_json", "refusal"])
def test_faults(videos, fault: str) -> None:
    sim = SimProvider(CLEAN.model_copy(update={fault: 1.0}), 1)
    text = "Write one question.\nKeyword: judge\n"
    if fault == "rate_limited":
        with pytest.raises(TransientModelError) as err:
            call(sim, "B", clips(videos), text, "QAGeneration")
        assert err.value.retry_after == 0.01
        return
    reply = call(sim, "B", clips(videos), text, "QAGeneration")
    if fault == "refusal":
        assert reply.text == REFUSAL and reply.finish_reason == "refusal"
    else:
        with pytest.raises(ValueError):
            json.loads(reply.text)
        judge = call(sim, "G", [], "Model A:\nx\n\nModel B:\ny\n\nVerdict:")
        assert "[[A]]" not in judge.text and "[[B]]" not in judge.text


def test_retry_of_the_same_request_draws_faults_anew(videos) -> None:
    sim = SimProvider(CLEAN.model_copy(update={"rate_limited": 0.5}), 1)
    outcomes = set()
    for _ in range(12):
        try:
            outcomes.add(call(sim, "B", clips(videos), "Keyword: judge\n", "QAGeneration").text)
        except TransientModelError:
            outcomes.add("429")
    assert "429" in outcomes and len(outcomes) == 2  # some 429s, and one and the same answer otherwise


def test_latency_and_usage(videos) -> None:
    sim = SimProvider(CLEAN.model_copy(update={"latency_s": 0.05}), 1)
    reply = call(sim, "B", clips(videos), "Keyword: judge\n", "QAGeneration")
    assert reply.usage.input_tokens > 2 * 180 * 0.5 * 258 and reply.usage.output_tokens > 50
    assert reply.raw["sim"] is True
    with pytest.raises(TransientModelError):
        sim.complete("generator", ModelRequest(role="B", parts=[TextPart(text="x")]), None, timeout=0.01)


def test_videos_without_worlds_never_crash(tmp_path: Path) -> None:
    sim = SimProvider(CLEAN, 1)
    parts = [VideoPart(path=str(tmp_path / "a.mp4"), start=0, end=600, label="Clip 1"),
             VideoPart(path=str(tmp_path / "b.mp4"), start=0, end=600, label="Clip 2")]
    qa = parsed(call(sim, "B", parts, "Keyword: assess\n", "QAGeneration"), "QAGeneration")
    assert "assess" in qa.question.lower() and len(facts.paragraphs(qa.answer)) >= 3
    dg = make_set(sim, (parts[0].path, parts[1].path), qa)
    assert all(getattr(dg, f"rating_{r}").attribute_degradations for r in (4, 3, 2, 1))
    text = candidates_text([getattr(dg, f"rating_{r}").response for r in (4, 3, 2, 1)])
    parsed(call(sim, "D4", parts, text, "Ranking"), "Ranking")
    parsed(call(sim, "C3", parts, f"Hop 1: {qa.hop_1}\nHop 2: {qa.hop_2}\nBridge: x", "Grounding"), "Grounding")
    frames = [ImagePart(path="f.jpg", source=parts[0].path, timestamp=3.0), ImagePart(path="g.jpg")]
    assert call(sim, "G", frames, "Model A:\nx\n\nModel B:\ny\n").text.endswith(("[[A]]", "[[B]]"))
    h = json.loads(call(sim, "H", parts, f"Hop 1: {qa.hop_1}\nHop 2: {qa.hop_2}\n").text)
    assert [g["hop"] for g in h["hop_groundings"]] == [1, 2]
    with pytest.raises(PermanentModelError):
        sim.complete("x", ModelRequest(role="Z9", parts=[TextPart(text="x")]), None, 30)


def test_evidence_grounding_for_the_human_study(videos) -> None:
    sim = SimProvider(CLEAN, 12)
    qa = make_qa(sim, videos)
    numbered = "\n".join(f"{i}. {s}" for i, s in enumerate(facts.sentences(qa.answer)))
    out = json.loads(call(sim, "H", clips(videos, audio=False),
                          f"Hop 1: {qa.hop_1}\nHop 2: {qa.hop_2}\n\nReference answer sentences:\n{numbered}").text)
    assert all(len(g["ranges"]) == 1 for g in out["hop_groundings"])
    assert len(out["groundings"]) == len(facts.sentences(qa.answer))
    assert sum(bool(g["ranges"]) for g in out["groundings"]) >= 4


def test_sections_parser() -> None:
    text = ("Instructions here.\n\nQuestion:\nWhy is it so?\n\nAnswer in JSON.\n\n### Response Candidate 1:\n"
            "<candidate_response>\nFirst one.\n\nSecond para.\n</candidate_response>\n#### Intended Degradation "
            "Analysis (for internal verification):\n[red -> blue]\nModel A: inline answer\nRubric:\n- x")
    s = sections(text)
    assert s["question"] == "Why is it so?"
    assert s["candidate 1"] == "First one.\n\nSecond para."
    assert s["model a"] == "inline answer"


@pytest.fixture(scope="module")
def fixed_videos() -> tuple[str, str]:
    """Like ``videos``, at a path that is the same on every run: the sim's draws hash the request, video
    paths included, so statistics over these worlds come out the same every time."""
    folder = fixed_worlds("sim-lengths")
    rng, taken, out = random.Random(23), set(), []
    for n in (1, 2):
        world = plan_world(rng, taken, domain="History", playlist="Ancient Rome", topic="Ancient Rome",
                           title=f"Rome Rising Episode {n}", episode=n, duration=300)
        path = folder / f"0{n} - Rome Rising Episode {n}.mp4"
        save_world(world, path)
        out.append(str(path))
    return out[0], out[1]


def test_wrong_answers_do_not_give_themselves_away_by_length_or_wording(fixed_videos) -> None:
    """SPEC F4: over the 10 pairs of each set the longer answer is the better one in a little under half
    of them (paper: 41.7 %, chosen-minus-rejected -2.2 words); judges that read no video, by length or by
    overlap with the transcript, stay near a coin."""
    transcript = " ".join(s.narration for p in clips(fixed_videos) if (w := load_world(p.path))
                          for s in scenes_in(w, p.start, p.end))
    diffs, by_overlap = [], []
    for seed in range(30):
        sim = SimProvider(CLEAN, seed)
        qa = make_qa(sim, fixed_videos)
        dg = make_set(sim, fixed_videos, qa)
        texts = {5: qa.answer, **{r: getattr(dg, f"rating_{r}").response for r in (4, 3, 2, 1)}}
        texts = {r: facts.strip_citations(t) for r, t in texts.items()}
        for better in range(5, 1, -1):
            for worse in range(better - 1, 0, -1):
                diffs.append(len(texts[better].split()) - len(texts[worse].split()))
                gap = overlap(texts[better], transcript) - overlap(texts[worse], transcript)
                by_overlap.append(1.0 if gap > 1e-12 else 0.0 if gap < -1e-12 else 0.5)
    longer_wins = sum(d > 0 for d in diffs) / len(diffs)
    longer_rule = sum(1.0 if d > 0 else 0.5 if d == 0 else 0.0 for d in diffs) / len(diffs)
    assert len(diffs) == 300
    assert 0.3 <= longer_wins <= 0.6, longer_wins
    assert abs(statistics.mean(diffs)) < 8, statistics.mean(diffs)
    assert statistics.pstdev(diffs) > 5, "lengths must spread, not tie"
    assert 0.35 <= longer_rule <= 0.65 and 0.35 <= statistics.mean(by_overlap) <= 0.65


def test_rewording_touches_no_claim(fixed_videos) -> None:
    """Only neutral wording changes: every sentence keeps its visual words, narrated words and citations
    (a closing sentence that claims nothing may go), and the rewordings bring no such word of their own."""
    assert sim_wording.clean_vocabulary()
    gold = make_qa(SimProvider(CLEAN, 3), fixed_videos).answer
    lengths = set()
    for k in range(40):
        out = sim_wording.reword(gold, gold, random.Random(k))
        lengths.add(sim_wording.words(out))
        assert len(facts.paragraphs(out)) == len(facts.paragraphs(gold))
        claimed = [s for s in facts.sentences(gold) if not sim_wording.is_neutral(s)]
        kept = [s for s in facts.sentences(out) if not sim_wording.is_neutral(s)]
        assert [(facts.visual_words(s), facts.topic_words(s), facts.citation_ranges(s)) for s in kept] == \
            [(facts.visual_words(s), facts.topic_words(s), facts.citation_ranges(s)) for s in claimed]
    assert min(lengths) < sim_wording.words(gold) < max(lengths)
