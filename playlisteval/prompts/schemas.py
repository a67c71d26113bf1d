"""Response schemas, one per model role, with exactly the fields SPEC names (B5, C2.3, C3, D1.1, D3)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


# -- B5: Phase I ---------------------------------------------------------------------------------
class QuestionType(_Strict):
    row: str = Field(description="Bloom knowledge row: Factual, Conceptual, Procedural or Meta-Cognitive")
    column: str = Field(description="Bloom process column: Remember, Understand, Apply, Analyze or Evaluate")


class SceneReference(_Strict):
    scene_description: str = Field(description="the surroundings-only wording the question uses for an entity")
    actual_entity_name: str = Field(description="what that entity really is")


class ClipRange(_Strict):
    clip_id: int = Field(description="1 or 2")
    start_time: float = Field(description="absolute seconds in the clip's source video (clip offset added)")
    end_time: float = Field(description="absolute seconds in the clip's source video (clip offset added)")
    qa_reference: str = Field(description="the part of the question or answer this stretch supports")


class QAGeneration(_Strict):
    question: str = Field(description="one sentence, with the keyword, entities named only by their surroundings")
    answer: str = Field(description="3-5 paragraphs, every claim cited as (N @ M:S - M:S)")
    question_type: QuestionType
    bridge: str = Field(description="the reasoning that joins hop 1 to hop 2")
    hop_1: str = Field(description="the fact only clip 1 supplies")
    hop_2: str = Field(description="the fact only clip 2 supplies")
    scene_references: list[SceneReference]
    clip_ranges: list[ClipRange]


# -- C2.3: text-only answers and verdicts ---------------------------------------------------------
class TextAnswer(_Strict):
    explanation: str = Field(description="reasoning first: the two hops and how they join (not for the verifier)")
    answer: str = Field(description="the answer alone, 3-5 paragraphs")


class Verdict(_Strict):
    explanation: str = Field(description="the gold's core facts and whether the candidate states them")
    judgement: Literal["Yes", "No"] = Field(description="Yes: the candidate matches the core facts and both hops")


# -- C3: video sufficiency --------------------------------------------------------------------------
class Grounding(_Strict):
    query_grounding_explanation: str
    query_grounded: Literal["Yes", "No"]
    answer_grounding_explanation: str
    answer_grounded: Literal["Yes", "No"]


# -- D1.1: graded wrong answers -----------------------------------------------------------------
class CausalAttribute(_Strict):
    attribute_name: str
    importance_score: float = Field(description="0 to 1; the five scores sum to 1")
    description: str


class ElementQuality(_Strict):
    element: str
    impact: str


class AttributeAnalysis(_Strict):
    attribute_name: str
    quality_by_elements: list[ElementQuality]


class GoldAnalysis(_Strict):
    attribute_analysis: list[AttributeAnalysis]


class ElementDegradation(_Strict):
    element: str
    impact: str
    modality: Literal["visual_only", "audio_visual", "text_verifiable"] = Field(
        description="what could expose the change; a valid degradation is visual_only")


class AttributeDegradation(_Strict):
    attribute_name: str
    degradation_by_elements: list[ElementDegradation]


class AttributeKept(_Strict):
    """An attribute the wrong answer keeps as strong as the gold, with the elements that keep it so
    (paper G.2.6 constant_attributes; issue 20: the full causal record, not the names alone)."""

    attribute_name: str
    stability_by_elements: list[ElementQuality] = Field(
        description="the elements carried over unchanged from the gold, and why they keep the attribute stable")


class AttributeUpgraded(_Strict):
    """An attribute the wrong answer makes better than the gold (if any), with the elements that do."""

    attribute_name: str
    improvement_by_elements: list[ElementQuality] = Field(
        description="the elements that improve on the gold, and their direct causal impact")


class DegradedAnswer(_Strict):
    response: str
    attribute_degradations: list[AttributeDegradation]
    constant_attributes: list[AttributeKept]
    upgraded_attributes: list[AttributeUpgraded]


class DistractorGeneration(_Strict):
    causal_attributes: list[CausalAttribute] = Field(min_length=5, max_length=5)
    gold_standard_analysis: GoldAnalysis
    rating_4: DegradedAnswer
    rating_3: DegradedAnswer
    rating_2: DegradedAnswer
    rating_1: DegradedAnswer


# -- D3 / D4: rankings ----------------------------------------------------------------------------
class RankEntry(_Strict):
    rank: int = Field(description="1 = best")
    candidate_index: int = Field(description="the candidate's number as shown, from 1")
    reasoning: str = Field(description="the particular problems or strengths that place it here")


class Ranking(_Strict):
    rankings: list[RankEntry]
    overall_summary: str



# -- H2: evidence clips of the human study ---------------------------------------------------------
MMSS = r"^\d{1,2}:[0-5]\d$"


class HopRange(_Strict):
    start_time: str = Field(pattern=MMSS, description="M:S on the clock of this hop's video")
    end_time: str = Field(pattern=MMSS, description="M:S on the clock of this hop's video")
    event: str = Field(description="what is seen or said in this range")


class HopGrounding(_Strict):
    hop: int = Field(ge=1, le=2, description="1: grounded in Video 1; 2: in Video 2")
    ranges: list[HopRange]


class SentenceRange(HopRange):
    hop: int = Field(ge=1, le=2, description="the video (1 or 2) this range lies in")


class SentenceGrounding(_Strict):
    sentence: int = Field(ge=0, description="the sentence's number in the numbered list, from 0")
    ranges: list[SentenceRange] = Field(description="empty for a general summary tied to no moment")


class EvidenceGrounding(_Strict):
    hop_groundings: list[HopGrounding]
    groundings: list[SentenceGrounding]


SCHEMAS: dict[str, type[BaseModel]] = {
    "QAGeneration": QAGeneration,
    "TextAnswer": TextAnswer,
    "Verdict": Verdict,
    "Grounding": Grounding,
    "DistractorGeneration": DistractorGeneration,
    "Ranking": Ranking,
    "EvidenceGrounding": EvidenceGrounding,
}
