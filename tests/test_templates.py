"""Every prompt template carries every SPEC requirement of its role (issue 5, item 1), reads the way
the offline sim expects, and can be replaced from the project's own template folder."""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

import pytest

from playlisteval.build.gates.preflight import preflight
from playlisteval.build.stages.context import StepContext
from playlisteval.build.stages.feedback import Failure
from playlisteval.build.stages.generate_distractors import CATEGORIES
from playlisteval.config import Settings
from playlisteval.errors import ConfigError
from playlisteval.prompts.render import render
from playlisteval.world.sim.context import sections
from tests.helpers import project

GOLD = ("The first moment sets out the theme (1 @ 0:30 - 1:10).\n\n"
        "The evidence follows it (1 @ 2:00 - 2:20, 2 @ 4:00 - 4:40).\n\n"
        "Together they close the argument (2 @ 5:00 - 5:30).")
P1_FAILURE = Failure(1, "C2.1", "answerable from the transcripts alone: matched", "GUIDANCE-C21",
                     question="Examine the old question?", answer="The old answer.")
P2_FAILURE = Failure(2, "D3", "detectable from the text alone: both judges", "GUIDANCE-D3",
                     question="Examine the old question?", answers=[(4, "OLD-R4"), (3, "OLD-R3"), (2, "OLD-R2"),
                                                                    (1, "OLD-R1")])
ATTRS = [{"attribute_name": f"Attr{i}", "importance_score": 0.2, "description": f"what attr {i} means"}
         for i in range(5)]
CATEGORY_ORDER = list(reversed(CATEGORIES))

CONTEXTS: dict[str, dict[str, object]] = {
    "b_generate.j2": dict(keyword="examine", row="Conceptual", column="Analyze", clip_1_span="12:00–42:00",
                          clip_2_span="3:00–33:00", min_chunks_per_clip=2, min_chunks=4, max_chunks=30,
                          min_paragraphs=3, chunk_s=30, failures=[P1_FAILURE]),
    "b_transcripts.j2": dict(transcript_1="[0:00] TRANSCRIPT-ONE", transcript_2="[0:00] TRANSCRIPT-TWO"),
    "c2_transcript_answer.j2": dict(question="Q-TEXT?", windows=[f"[0:00] WINDOW-{i}" for i in range(6)]),
    "c2_parametric_answer.j2": dict(question="Q-TEXT?"),
    "c2_verify.j2": dict(question="Q-TEXT?", gold=GOLD, candidate="CANDIDATE-TEXT"),
    "c3_grounding.j2": dict(question="Q-TEXT?", answer=GOLD, hop_1="HOP-ONE", hop_2="HOP-TWO", bridge="BRIDGE-TEXT"),
    "d1_distractors.j2": dict(question="Q-TEXT?", gold=GOLD, categories=CATEGORY_ORDER, failures=[P2_FAILURE]),
    "d3_text_rank.j2": dict(question="Q-TEXT?", attributes=ATTRS, candidates=[f"CAND-{i}" for i in range(5)]),
    "d4_video_rank.j2": dict(question="Q-TEXT?", attributes=ATTRS,
                             candidates=[{"text": f"CAND-{i}", "record": f"RECORD-{i}"} for i in range(4)]),
    "feedback.j2": dict(gate="C1", unusable=False),
    "g4_judge.j2": dict(question="Q-TEXT?", transcript="[Video 1 @ 0:00] SAID", answer_a=GOLD, answer_b="ANSWER-B"),
    "g7_reward.j2": dict(question="Q-TEXT?", transcript="[Video 1 @ 0:00] SAID", answer=GOLD),
    "g6_agent.j2": dict(question="Q-TEXT?", videos="Video 1: first (0-1800 s)", answer_a=GOLD, answer_b="ANSWER-B",
                        max_steps=6),
    "h_evidence.j2": dict(question="Q-TEXT?", hop_1="HOP-ONE", hop_2="HOP-TWO",
                          sentences=["SENTENCE-ZERO.", "SENTENCE-ONE."]),
}

# (template, SPEC id, requirement, regex on the rendered text with whitespace collapsed; case-insensitive)
REQUIREMENTS: list[tuple[str, str, str, str]] = [
    # -- B: question and gold answer -------------------------------------------------------------
    ("b_generate.j2", "B1", "clips introduced by their markers", r"Clip 1 .*Clip 2"),
    ("b_generate.j2", "B1", "clips watched with their sound", r"each clip with its sound"),
    ("b_generate.j2", "B1", "transcripts appended", r"complete transcripts of both follow these instructions"),
    ("b_transcripts.j2", "B1", "both transcripts", r"Transcript of Clip 1 \[0:00\] TRANSCRIPT-ONE .*"
                                                   r"Transcript of Clip 2 \[0:00\] TRANSCRIPT-TWO"),
    ("b_transcripts.j2", "B3", "answer must rest on what is seen, not said", r"must not be answerable from them alone"),
    ("b_generate.j2", "B2", "keyword in the question", r'must contain the keyword "examine"'),
    ("b_generate.j2", "B2", "Bloom cell of the keyword",
     r"Conceptual row and the Analyze column of Bloom's knowledge-dimension matrix"),
    ("b_generate.j2", "B2", "aim at the complex cells", r"bottom-right corner of the matrix"),
    ("b_generate.j2", "B3", "hop 1 from clip 1", r"hop 1 is a fact that only Clip 1 supplies"),
    ("b_generate.j2", "B3", "hop 2 from clip 2", r"hop 2 a fact that only Clip 2 supplies"),
    ("b_generate.j2", "B3", "a bridge joins them", r"the bridge is the reasoning that joins them"),
    ("b_generate.j2", "B3", "entities only by their surroundings", r"only through its surroundings in the frame"),
    ("b_generate.j2", "B3", "no names, pronouns, titles", r"No names, no pronouns, no titles"),
    ("b_generate.j2", "B3", "no appearance", r"not its colour, its clothing, its material, nor its action"),
    ("b_generate.j2", "B3", "20 words of scene per entity", r"at least 20 words of scene description for every entity"),
    ("b_generate.j2", "B3", "one sentence", r"single grammatical sentence"),
    ("b_generate.j2", "B3", 'no "and"', r'The word "and" must not appear'),
    ("b_generate.j2", "B3", "no semicolon or comma splice", r"no semicolon or comma splice may stand in for it"),
    ("b_generate.j2", "B3", "no media references", r'never write "video 1", "clip", "the second lecture"'),
    ("b_generate.j2", "B3", "needs what the transcripts do not say",
     r"visual details that the transcripts never state"),
    ("b_generate.j2", "B4", "3-5 paragraphs", r"3 to 5 paragraphs"),
    ("b_generate.j2", "B4", "introduction, evidence, conclusion", r"an introduction .*the evidence .*a conclusion"),
    ("b_generate.j2", "B4", "only what the clips show or say", r"only what the clips show or say"),
    ("b_generate.j2", "B4", "every claim cited", r"Cite every claim"),
    ("b_generate.j2", "B4", "citation form", r"\(1 @ 4:20 - 5:15\)"),
    ("b_generate.j2", "B4", "several ranges in one bracket", r"Several ranges share one bracket, separated by commas"),
    ("b_generate.j2", "B4", "clip repeated when it changes", r"again each time the clip changes: \(1 @ 4:20 - 5:15, "
                                                             r"6:00 - 6:30, 2 @ 10:02 - 13:32\)"),
    ("b_generate.j2", "B4", "a range never spans two clips", r"A range never spans two clips"),
    ("b_generate.j2", "B4", "brackets end the sentence", r"at the end of the sentence"),
    ("b_generate.j2", "C1", "evidence per clip and in total",
     r"at least 2 different 30-second stretches of each clip, and 4 to 30 30-second stretches in all"),
    *[("b_generate.j2", "B5", f"field {f}", rf"\b{f}\b") for f in (
        "question", "answer", "question_type", "row", "column", "bridge", "hop_1", "hop_2", "scene_references",
        "scene_description", "actual_entity_name", "clip_ranges", "clip_id", "start_time", "end_time",
        "qa_reference")],
    ("b_generate.j2", "B5", "clip ranges in absolute seconds", r"absolute seconds of the clip's source video"),
    ("b_generate.j2", "E1", "earlier failures listed",
     r"Attempt 1, rejected by C2\.1: answerable from the transcripts"),
    ("b_generate.j2", "E1", "with the rejected question", r"Its question was: Examine the old question\?"),
    ("b_generate.j2", "E1", "with the rejected answer", r"Its answer was: The old answer\."),
    ("b_generate.j2", "E1", "with the gate's guidance", r"What to do differently: GUIDANCE-C21"),
    ("b_generate.j2", "E1", "not to repeat them", r"Do not repeat any of these mistakes"),
    # -- C2: transcript-only and memory-only answers, verification --------------------------------
    ("c2_transcript_answer.j2", "C2.1", "no video", r"You have no video"),
    ("c2_transcript_answer.j2", "C2.1", "several windows, unordered",
     r"several windows of transcript .*in no particular order"),
    ("c2_transcript_answer.j2", "C2.1", "all six windows",
     r"WINDOW-0 .*WINDOW-1 .*WINDOW-2 .*WINDOW-3 .*WINDOW-4 .*WINDOW-5"),
    ("c2_transcript_answer.j2", "C2.1", "transcripts only", r"using only these transcripts"),
    ("c2_transcript_answer.j2", "C2.1", "no outside knowledge, no guessed visuals",
     r"Use no outside knowledge, and do not guess at visual details"),
    ("c2_transcript_answer.j2", "C2.1", "say so when the transcripts lack it", r"say so plainly"),
    ("c2_transcript_answer.j2", "C2.3", "explanation first, then answer", r'First "explanation".*Then "answer"'),
    ("c2_parametric_answer.j2", "C2.2", "question only", r"a question and nothing else: no video, no transcript"),
    ("c2_parametric_answer.j2", "C2.2", "from memory", r"from your own knowledge"),
    ("c2_parametric_answer.j2", "C2.2", "the question", r"Question: Q-TEXT\?"),
    ("c2_parametric_answer.j2", "C2.3", "explanation first, then answer", r'First "explanation".*Then "answer"'),
    ("c2_verify.j2", "C2.1", "compares with the gold", r"Gold answer: The first moment"),
    ("c2_verify.j2", "C2.3", "only the candidate's answer", r"Candidate answer: CANDIDATE-TEXT"),
    ("c2_verify.j2", "C2.1", "Yes = core facts and both hops", r'"Yes" if the candidate states the gold\'s core facts, '
                                                               r"both hops included"),
    ("c2_verify.j2", "C2.1", "No when a hop is missing", r'"No" if it misses either hop'),
    ("c2_verify.j2", "C2.3", "explanation first, then Yes|No",
     r'first "explanation" .*then "judgement": "Yes" or "No"'),
    # -- C3: video sufficiency -----------------------------------------------------------------------
    ("c3_grounding.j2", "C3", "each video without audio then its transcript",
     r"Video 1 \(without sound\) followed by its full transcript, then Video 2 followed by its full transcript"),
    ("c3_grounding.j2", "C3", "the full segment", r"a whole segment of its source video"),
    ("c3_grounding.j2", "C3", "the checklist, verified not trusted", r"CHECKLIST.*do not take it on trust"),
    ("c3_grounding.j2", "C3", "hop 1 in video 1", r"Hop 1 is expected in Video 1"),
    ("c3_grounding.j2", "C3", "checklist values", r"Hop 1: HOP-ONE Hop 2: HOP-TWO Bridge: BRIDGE-TEXT"),
    ("c3_grounding.j2", "C3", "query grounded: both hops present",
     r"both facts it rests on \(the two hops\) are really present"),
    ("c3_grounding.j2", "C3", "answer grounded: every claim", r"every substantive claim of the answer supported"),
    ("c3_grounding.j2", "C3", "kept only when both Yes", r'kept only when both are "Yes"'),
    ("c3_grounding.j2", "C3", "output fields", r"query_grounding_explanation, query_grounded .*"
                                               r"answer_grounding_explanation, answer_grounded"),
    # -- D1: graded wrong answers ---------------------------------------------------------------------
    ("d1_distractors.j2", "D1", "the same two clips", r"The two clips above \(Clip 1 and Clip 2, with sound\)"),
    ("d1_distractors.j2", "D1", "the fixed question", r"Question: Q-TEXT\?"),
    ("d1_distractors.j2", "D1", "the gold with its citations", r"Gold answer: The first moment sets out the theme "
                                                               r"\(1 @ 0:30 - 1:10\)"),
    ("d1_distractors.j2", "D1", "four answers rated 4 to 1", r"rated 4, 3, 2 and 1"),
    ("d1_distractors.j2", "D1", "the gold with visual-only errors",
     r"the gold answer with errors injected that only the video can expose"),
    ("d1_distractors.j2", "D1", "length, tone, structure kept",
     r"keeps the gold's length, tone, paragraphs and two-hop structure"),
    ("d1_distractors.j2", "D1", "no timestamps", r"no timestamps or citations"),
    ("d1_distractors.j2", "D1", "no meta-commentary", r"no meta-commentary"),
    ("d1_distractors.j2", "D1", "no negative phrasing", r"positive phrasing only"),
    ("d1_distractors.j2", "D1", "categories in a fresh order", r"listed in a random order for this request"),
    *[("d1_distractors.j2", "D1", f"category {c[:20]}", re.escape(c)) for c in CATEGORIES],
    ("d1_distractors.j2", "D1", "forbidden changes", r"identities, names or roles; numbers and statistics; the order "
                                                     r"of events; causal links; anything said aloud"),
    ("d1_distractors.j2", "D1", "severity 4", r"Rating 4: one minor visual alteration"),
    ("d1_distractors.j2", "D1", "severity 3", r"Rating 3: a moderate visual substitution"),
    ("d1_distractors.j2", "D1", "severity 2", r"Rating 2: a major change of a visual event or subject"),
    ("d1_distractors.j2", "D1", "severity 1", r"Rating 1: a fully fabricated visual account that still reads fluently"),
    ("d1_distractors.j2", "D1.1", "five causal attributes", r"causal_attributes: five independent attributes"),
    ("d1_distractors.j2", "D1.1", "importance sums to 1", r"importance_score \(0 to 1; the five scores sum to 1\)"),
    *[("d1_distractors.j2", "D1.1", f"field {f}", rf"\b{f}\b") for f in (
        "attribute_name", "description", "gold_standard_analysis", "attribute_analysis", "quality_by_elements",
        "element", "impact", "rating_4", "rating_3", "rating_2", "rating_1", "response", "attribute_degradations",
        "degradation_by_elements", "modality", "visual_only", "audio_visual", "text_verifiable",
        "constant_attributes", "upgraded_attributes")],
    ("d1_distractors.j2", "E1", "earlier sets listed", r"Attempt 2, rejected by D3: detectable from the text alone"),
    ("d1_distractors.j2", "E1", "with their question", r"It answered this question: Examine the old question\?"),
    ("d1_distractors.j2", "E1", "with the rejected set", r"Its rating 4 answer was: OLD-R4 .*Its rating 1 answer was: "
                                                         r"OLD-R1"),
    ("d1_distractors.j2", "E1", "with the gate's guidance", r"What to do differently: GUIDANCE-D3"),
    ("d1_distractors.j2", "E1", "not to repeat them", r"Do not repeat these mistakes"),
    # -- D3: text-only ranking -----------------------------------------------------------------------
    ("d3_text_rank.j2", "D3", "text only", r"neither the videos nor their transcripts: judge from the text alone"),
    ("d3_text_rank.j2", "D3", "the causal attributes as rubric",
     r"Rubric: - Attr0 \(importance 0\.2\): what attr 0 means"),
    ("d3_text_rank.j2", "D3", "five candidates, numbered from 1", r"Candidate 1: CAND-0 .*Candidate 5: CAND-4"),
    ("d3_text_rank.j2", "D3", "rank all, best first",
     r"Rank all 5 candidates from best \(rank 1\) to worst \(rank 5\)"),
    ("d3_text_rank.j2", "D3", "output fields", r'"rankings", one entry per candidate with "rank", "candidate_index" .*'
                                               r'"reasoning"; then "overall_summary"'),
    # -- D4: video ranking ---------------------------------------------------------------------------
    ("d4_video_rank.j2", "D4", "the C3 video inputs", r"Video 1 \(without sound\) followed by its full transcript, "
                                                      r"then Video 2 followed by its full transcript"),
    ("d4_video_rank.j2", "D4", "four candidates, each with its record",
     r"Candidate 1: CAND-0 Degradation record: RECORD-0 .*Candidate 4: CAND-3 Degradation record: RECORD-3"),
    ("d4_video_rank.j2", "D4", "records checked against the video", r"Check every change the record claims against the "
                                                                     r"videos"),
    ("d4_video_rank.j2", "D4", "judged by the video", r"Judge by what the videos actually show and say"),
    ("d4_video_rank.j2", "D4", "rank all, best first", r"Rank all 4 candidates from best \(rank 1, most faithful"),
    ("d4_video_rank.j2", "D4", "output fields", r'"rankings", one entry per candidate with "rank", "candidate_index" .*'
                                                r'"reasoning"; then "overall_summary"'),
    # -- G4: the pairwise judge ----------------------------------------------------------------------
    ("g4_judge.j2", "G4", "the question", r"Question: Q-TEXT\?"),
    ("g4_judge.j2", "G4", "the transcript block", r"Transcript: \[Video 1 @ 0:00\] SAID"),
    ("g4_judge.j2", "G4", "Model A and Model B", r"Model A: The first moment.*Model B: ANSWER-B"),
    ("g4_judge.j2", "G4", "four criteria", r"Instruction following: .*Accuracy: .*Relevance: .*Helpfulness: "),
    ("g4_judge.j2", "G4", "accuracy weighed highest", r"weigh accuracy highest"),
    ("g4_judge.j2", "G4", "no tie", r"a tie is not allowed"),
    ("g4_judge.j2", "G4", "length must not count", r"nor their length may sway you"),
    ("g4_judge.j2", "G4", "position must not count", r"Neither the order in which the answers appear"),
    ("g4_judge.j2", "G4", "verdict format", r"exactly \[\[A\]\] or \[\[B\]\]"),
    # -- G7: a reward model scores one answer on its own (issue 20) --------------------------------------
    ("g7_reward.j2", "G7", "the question", r"Question: Q-TEXT\?"),
    ("g7_reward.j2", "G7", "the transcript block", r"Transcript: \[Video 1 @ 0:00\] SAID"),
    ("g7_reward.j2", "G7", "one answer, citations removed, after the label the provider cuts at",
     r"Candidate answer: The first moment sets out the theme\. The evidence follows it\."),
    # -- G6: the agentic judge (issue 20) ----------------------------------------------------------------
    ("g6_agent.j2", "G6", "the corpus listing it may search", r"Video 1: first \(0-1800 s\)"),
    ("g6_agent.j2", "G6", "tools instead of given evidence", r"you have tools to find it yourself"),
    ("g6_agent.j2", "G6", "Model A and Model B, citations removed", r"Model A: The first moment.*Model B: ANSWER-B"),
    ("g6_agent.j2", "G6", "its turn budget", r"at most 6 turns of tool calls"),
    ("g6_agent.j2", "G6", "unchecked counts as unsupported", r"could not check counts as unsupported"),
    ("g6_agent.j2", "G4", "accuracy weighed highest, no tie, no order or length", r"accuracy .*\(highest\).*"
                                                                                  r"A tie is not allowed.*length"),
    ("g6_agent.j2", "G4", "verdict format", r"exactly \[\[A\]\] or \[\[B\]\]"),
    # -- H2: evidence clips of the human study ----------------------------------------------------------
    ("h_evidence.j2", "H2", "each hop's whole video, then its transcript",
     r"Video 1 \(hop 1\), then Transcript 1; Video 2 \(hop 2\), then Transcript 2"),
    ("h_evidence.j2", "H2", "whole segments: the moment may be anywhere", r"relevant moment can be anywhere"),
    ("h_evidence.j2", "H2", "M:S on each video's own clock", r"as M:S .*counted from the start of the video the range"),
    ("h_evidence.j2", "H2", "the transcript relabelled to that clock", r"labelled \[M:S-M:S\] on that same clock"),
    ("h_evidence.j2", "H2", "ground the two question hops", r"Hop 1: HOP-ONE Hop 2: HOP-TWO"),
    ("h_evidence.j2", "H2", "hop 1 in video 1, hop 2 in video 2", r"A hop belongs to its own video only"),
    ("h_evidence.j2", "H2", "every answer sentence, numbered", r"0\. SENTENCE-ZERO\. 1\. SENTENCE-ONE\."),
    ("h_evidence.j2", "H2", "a summary sentence gets no range", r"gets an empty list of ranges"),
    ("h_evidence.j2", "H2", "both modalities, cross-checked", r"Look at the frames.*Read the transcript.*"
                                                              r"prefer moments where they agree"),
    ("h_evidence.j2", "H2", "smallest ranges, concrete events", r"as short as the evidence allows.*concrete"),
    ("h_evidence.j2", "H2", "output shape", r'"hop_groundings".*"groundings".*"sentence": 0'),
]


def rendered(name: str, **extra: object) -> str:
    text, _ = render(name, None, **{**CONTEXTS[name], **extra})
    return text


def flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


@pytest.mark.parametrize(("template", "spec", "requirement", "pattern"), REQUIREMENTS,
                         ids=[f"{t}:{s}:{r}" for t, s, r, _ in REQUIREMENTS])
def test_each_template_carries_each_spec_requirement(template: str, spec: str, requirement: str, pattern: str) -> None:
    assert re.search(pattern, flat(rendered(template)), re.I | re.S), f"{template} lacks {spec}: {requirement}"


def test_every_packaged_template_is_covered_by_the_table() -> None:
    names = {p.name for p in resources.files("playlisteval").joinpath("prompts").iterdir() if p.name.endswith(".j2")}
    assert names == set(CONTEXTS)
    covered = {t for t, *_ in REQUIREMENTS} | {"feedback.j2"}  # feedback: test_feedback_has_guidance_for_every_gate
    assert covered == names


def test_citations_never_reach_the_judge_and_the_transcript_block_is_optional() -> None:
    text = rendered("g4_judge.j2", transcript="")
    assert "@" not in text and "Transcript:" not in text
    assert "(1 @" not in rendered("g4_judge.j2")


def test_categories_are_listed_in_the_order_of_the_request() -> None:
    text = flat(rendered("d1_distractors.j2"))
    positions = [text.index(c) for c in CATEGORY_ORDER]
    assert positions == sorted(positions)


def test_prompts_without_history_have_no_history_block() -> None:
    assert "REJECTED" not in rendered("b_generate.j2", failures=[])
    assert "REJECTED" not in rendered("d1_distractors.j2", failures=[])


GUIDANCE = {  # SPEC E4: each gate's own advice
    "C1": "Structure or citations broke the rules",
    "C2.1": "answered from the transcripts alone",
    "C2.2": "answered from general world knowledge",
    "C3": "did not support the question or the answer",
    "D2": "Some wrong answers were malformed",
    "D3": "could be ranked from the text alone",
    "D4": "did not confirm the intended order",
    "E2": "No acceptable set of wrong answers",
}


def test_feedback_has_guidance_for_every_gate() -> None:
    texts = {gate: flat(rendered("feedback.j2", gate=gate)) for gate in GUIDANCE}
    for gate, phrase in GUIDANCE.items():
        assert phrase in texts[gate], gate
    assert len(set(texts.values())) == len(GUIDANCE)
    assert "could not be read" in rendered("feedback.j2", gate="C1", unusable=True)


def test_sections_read_as_the_sim_reads_them() -> None:
    """The sim plays every role by the labelled sections of a prompt; each must hold exactly its value."""
    b = sections(rendered("b_generate.j2"))
    assert (b["keyword"], b["row"], b["column"]) == ("examine", "Conceptual", "Analyze")
    v = sections(rendered("c2_verify.j2"))
    assert v["gold answer"] == GOLD and v["candidate answer"] == "CANDIDATE-TEXT"
    t = sections(rendered("c2_transcript_answer.j2"))
    assert t["question"] == "Q-TEXT?" and all(f"WINDOW-{i}" in t["transcripts"] for i in range(6))
    c3 = sections(rendered("c3_grounding.j2"))
    assert (c3["hop 1"], c3["hop 2"], c3["bridge"], c3["gold answer"]) == ("HOP-ONE", "HOP-TWO", "BRIDGE-TEXT", GOLD)
    assert sections(rendered("d1_distractors.j2"))["gold answer"] == GOLD
    d3 = sections(rendered("d3_text_rank.j2"))
    assert [d3[f"candidate {i}"] for i in range(1, 6)] == [f"CAND-{i}" for i in range(5)]
    d4 = sections(rendered("d4_video_rank.j2"))
    assert [d4[f"candidate {i}"] for i in range(1, 5)] == [f"CAND-{i}" for i in range(4)]
    h = sections(rendered("h_evidence.j2"))
    assert (h["question"], h["hop 1"], h["hop 2"]) == ("Q-TEXT?", "HOP-ONE", "HOP-TWO")
    assert h["reference answer sentences"] == "0. SENTENCE-ZERO.\n1. SENTENCE-ONE."
    g = sections(rendered("g4_judge.j2"))
    assert "@" not in g["model a"] and g["model a"].startswith("The first moment") and g["model b"] == "ANSWER-B"


def test_a_users_template_folder_replaces_single_templates(tmp_path: Path) -> None:
    mine = tmp_path / "my_prompts"
    mine.mkdir()
    (mine / "c2_parametric_answer.j2").write_text("MY OWN PROMPT for {{ question }}\n")
    settings: Settings = project(tmp_path, build__prompts_dir="my_prompts")
    ctx = StepContext(settings, None, None, 1, None)  # type: ignore[arg-type]
    assert ctx.prompts_dir == str(mine.resolve())
    text, digest = render("c2_parametric_answer.j2", ctx.prompts_dir, question="Q?")
    assert text == "MY OWN PROMPT for Q?\n"
    assert digest != render("c2_parametric_answer.j2", None, question="Q?")[1]
    # the others still come from the package
    assert "Transcript of Clip 1" in render("b_transcripts.j2", ctx.prompts_dir, transcript_1="", transcript_2="")[0]
    preflight(settings)  # the folder exists: the build may start


def test_a_missing_template_folder_stops_the_build(tmp_path: Path) -> None:
    settings = project(tmp_path, build__prompts_dir="nowhere")
    with pytest.raises(ConfigError, match="prompts_dir"):
        preflight(settings)
