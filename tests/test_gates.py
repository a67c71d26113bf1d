"""The model-free gates and their parsers: C1's citations (SPEC B4/C1), D2, reading rankings."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from playlisteval.build.gates import GateVerdict, c1_structure, d2_structure, first_rejection
from playlisteval.build.gates.citations import Citation, chunks_by_clip, parse_citations, strip_citations, uniform
from playlisteval.build.gates.ranking import ranked_ratings
from playlisteval.config import BuildSettings


# -- the citation parser ---------------------------------------------------------------------------
@pytest.mark.parametrize(("text", "expected"), [
    ("A claim (1 @ 4:20 - 5:15).", [Citation(1, 260, 315)]),  # the paper's form
    ("A claim (clip1 @ 0:30 - 1:10).", [Citation(1, 30, 70)]),
    ("A claim (Clip 2 @ 00:05 - 00:40).", [Citation(2, 5, 40)]),
    ("A claim (video 1 @ 1:00:05 - 1:00:40).", [Citation(1, 3605, 3640)]),  # H:MM:SS
    ("A claim (1 @ 75:00 - 76:30).", [Citation(1, 4500, 4590)]),  # minutes past 59 in M:SS
    ("Several ranges (1 @ 0:30 - 1:10, 2:00 - 2:20, 2 @ 4:00 - 4:40, 5:00 - 5:10).",
     [Citation(1, 30, 70), Citation(1, 120, 140), Citation(2, 240, 280), Citation(2, 300, 310)]),
    ("En dash and em dash (1 @ 0:30–1:10, 2 @ 0:10 — 0:20).", [Citation(1, 30, 70), Citation(2, 10, 20)]),
    ("Two brackets (1 @ 0:10 - 0:20). Another (2 @ 0:10 - 0:20).", [Citation(1, 10, 20), Citation(2, 10, 20)]),
    ("Plain brackets (as here) and no citation at all.", []),
])
def test_citations_parse(text: str, expected: list[Citation]) -> None:
    parsed = parse_citations(text)
    assert parsed.problems == []
    assert parsed.citations == expected


@pytest.mark.parametrize(("text", "problem"), [
    ("Across clips (1 @ 4:20 - 2 @ 5:15).", "runs from one clip into another"),
    ("Across clips later (1 @ 0:10 - 0:20, 0:53 - 2 @ 1:44).", "runs from one clip into another"),
    ("Across clips named (clip1 @ 0:53 - clip2 @ 1:44).", "runs from one clip into another"),
    ("No clip first (0:10 - 0:20, 1 @ 0:30 - 0:40).", "no clip before it"),
    ("Garbage (1 @ soon - later).", "cannot read"),
    ("Semicolons (1 @ 0:10 - 0:20; 0:30 - 0:40).", "cannot read"),
    ("Unknown clip (3 @ 0:10 - 0:20).", "unknown clip 3"),
    ("Backwards (1 @ 0:40 - 0:20).", "ends before it starts"),
    ("Empty range (1 @ 0:40 - 0:40).", "ends before it starts"),
    ("Bad seconds (1 @ 0:75 - 1:20).", "past 59"),
    ("Unclosed (1 @ 0:10 - 0:20.", "unclosed '('"),
    ("Unmatched ) here (1 @ 0:10 - 0:20)).", "unmatched ')'"),
    ("Square [1 @ 0:10 - 0:20].", "square brackets"),
    ("Loose 1 @ 0:10 - 0:20 in the text.", "outside brackets"),
    ("Past the end (2 @ 9:00 - 11:00).", "past the end of clip 2"),
])
def test_malformed_citations_are_reported(text: str, problem: str) -> None:
    parsed = parse_citations(text, clip_lengths={1: 600.0, 2: 600.0})
    assert any(problem in p for p in parsed.problems), parsed.problems


def test_a_nested_bracket_is_read_from_its_innermost_group() -> None:
    parsed = parse_citations("A claim (see the frame (1 @ 0:10 - 0:20)).")
    assert parsed.problems == [] and parsed.citations == [Citation(1, 10, 20)]


def test_ranges_map_onto_30_second_chunks() -> None:
    cites = [Citation(1, 0, 30), Citation(1, 25, 35), Citation(2, 60, 61), Citation(2, 89, 150)]
    assert chunks_by_clip(cites, 30) == {1: {0, 1}, 2: {2, 3, 4}}
    # on the video's own grid: a clip starting 15 s into a chunk shifts every boundary
    assert chunks_by_clip([Citation(1, 0, 30)], 30, {1: 615.0}) == {1: {20, 21}}


def test_strip_citations_removes_every_form() -> None:
    text = "One (1 @ 0:10 - 0:20). Two (clip2 @ 1:00 - 1:10, 1:20 - 1:30). Kept (as is)."
    assert strip_citations(text) == "One. Two. Kept (as is)."


def test_uniform_formatting_hides_layout() -> None:
    assert uniform("A  claim (1 @ 0:10 - 0:20).\n\n\n  Next\nline.  ") == "A claim.\n\nNext line."


# -- C1 --------------------------------------------------------------------------------------------
CFG = BuildSettings()


def answer(cites1: str, cites2: str, paragraphs: int = 3) -> str:
    body = [f"Clip one shows it {cites1}.", f"Clip two shows it {cites2}.", "So it follows (1 @ 0:00 - 0:10)."]
    body += ["More."] * max(0, paragraphs - 3)
    return "\n\n".join(body[:paragraphs])


def test_c1_accepts_enough_evidence_in_both_clips() -> None:
    v = c1_structure.check(answer("(1 @ 0:00 - 1:00)", "(2 @ 2:00 - 3:00)"), CFG, 30)
    assert v.passed and v.details["chunks_per_clip"] == {1: 2, 2: 2} and v.details["chunks_total"] == 4


@pytest.mark.parametrize(("text", "reason"), [
    (answer("(1 @ 0:00 - 1:00)", "(2 @ 2:00 - 3:00)", paragraphs=2), "too few paragraphs"),
    (answer("(1 @ 0:00 - 1:00)", "(2 @ 2:00 - 2:20)"), "too little evidence from one clip: clip 2 cites 1"),
    (answer("(1 @ 0:00 - 0:20)", "(2 @ 2:00 - 3:00)"), "too little evidence from one clip: clip 1 cites 1"),
    (answer("(1 @ 0:00 - 10:00)", "(2 @ 0:00 - 6:00)"), "evidence total out of range: 32 chunks"),
    (answer("(1 @ 0:00 - 1:00)", "(1 @ 1:30 - 2 @ 3:00)"), "malformed citation: a range runs from one clip"),
])
def test_c1_rejects_with_a_reason_of_its_kind(text: str, reason: str) -> None:
    v = c1_structure.check(text, CFG, 30)
    assert not v.passed and v.gate == "C1" and v.reason.startswith(reason), v.reason


def test_c1_numbers_are_settings() -> None:
    cfg = BuildSettings(min_chunks_per_segment=1, min_chunks_total=2, min_paragraphs=2)
    assert c1_structure.check(answer("(1 @ 0:00 - 0:20)", "(2 @ 2:00 - 2:20)", paragraphs=2), cfg, 30).passed


def test_c1_rejects_a_range_past_the_clip_end() -> None:
    text = answer("(1 @ 0:00 - 1:00)", "(2 @ 2:00 - 3:00)")
    assert not c1_structure.check(text, CFG, 30, clip_lengths={1: 600, 2: 150}).passed


# -- D2 --------------------------------------------------------------------------------------------
def good_set() -> dict[str, Any]:
    def rating(r: int) -> dict[str, Any]:
        element = {"element": "red -> blue", "impact": "x", "modality": "visual_only"}
        return {"response": f"wrong {r}",
                "attribute_degradations": [{"attribute_name": "Colour", "degradation_by_elements": [element]}],
                "constant_attributes": [], "upgraded_attributes": []}
    attributes = [{"attribute_name": name, "importance_score": w, "description": ""}
                  for name, w in (("Colour", 0.3), ("Shape", 0.25), ("Position", 0.2), ("Sign", 0.15), ("Scene", 0.1))]
    return {"causal_attributes": attributes, **{f"rating_{r}": rating(r) for r in (4, 3, 2, 1)}}


def test_d2_passes_a_well_formed_set() -> None:
    assert d2_structure.check(good_set()).passed


@pytest.mark.parametrize(("damage", "reason"), [
    (lambda s: s["rating_3"].update(response="  "), "empty response: rating 3"),
    (lambda s: s["rating_2"].update(attribute_degradations=[]), "no degradation recorded: rating 2"),
    (lambda s: s["rating_1"]["attribute_degradations"][0]["degradation_by_elements"][0].update(
        modality="text_verifiable"), "no visual-only degradation: rating 1"),
    (lambda s: s.pop("rating_4"), "empty response: rating 4"),
])
def test_d2_rejects_a_malformed_set(damage: Callable[[dict[str, Any]], object], reason: str) -> None:
    payload = good_set()
    damage(payload)
    v = d2_structure.check(payload)
    assert not v.passed and v.reason == reason


# -- rankings and the gate runner -------------------------------------------------------------------
def test_rankings_are_read_by_the_number_each_candidate_was_shown_with() -> None:
    shown = [3, 5, 1, 4, 2]  # Candidate 1 is the rating-3 answer, …
    reply = {"rankings": [{"rank": r, "candidate_index": i, "reasoning": ""} for r, i in
                          enumerate([2, 4, 1, 5, 3], 1)]}
    assert ranked_ratings(reply, shown) == [5, 4, 3, 2, 1]
    # anything but a permutation is no ranking (tests/test_fail_closed_gates.py has every kind)
    with pytest.raises(ValueError, match="4 entries for 5 candidates"):
        ranked_ratings({"rankings": reply["rankings"][:4]}, shown)
    dup = [{"rank": r, "candidate_index": 1, "reasoning": ""} for r in range(1, 6)]
    with pytest.raises(ValueError, match=r"candidate\(s\) \[1\] ranked more than once"):
        ranked_ratings({"rankings": dup}, shown)
    zero_based = [{"rank": r, "candidate_index": i, "reasoning": ""} for r, i in enumerate(range(5), 1)]
    with pytest.raises(ValueError, match="no candidate numbered"):
        ranked_ratings({"rankings": zero_based}, shown)
    with pytest.raises(ValueError, match="no rankings list"):
        ranked_ratings(None, shown)


def test_gates_stop_at_the_first_rejection() -> None:
    ran: list[str] = []

    def gate(name: str, ok: bool) -> Callable[[], GateVerdict]:
        def run() -> GateVerdict:
            ran.append(name)
            return GateVerdict(name, ok)
        return run

    verdicts = first_rejection([gate("C1", True), gate("C2.1", False), gate("C3", True)])
    assert [v.gate for v in verdicts] == ["C1", "C2.1"] and ran == ["C1", "C2.1"]
