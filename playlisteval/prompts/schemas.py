"""Response schemas, one per model role, with exactly the fields SPEC names (B5, C2.3, C3, D1.1, D3)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


# -- B5: Phase I ---------------------------------------------------------------------------------
class QuestionType(_Strict):
    row: str  # Factual / Conceptual / Procedural / Meta-Cognitive
    column: str  # Understand / Apply / Analyze / Evaluate


class SceneReference(_Strict):
    scene_description: str
    actual_entity_name: str


class ClipRange(_Strict):
    clip_id: int  # 1 or 2
    start_time: float  # absolute seconds in the clip's video
    end_time: float
    qa_reference: str


class QAGeneration(_Strict):
    question: str
    answer: str
    question_type: QuestionType
    bridge: str
    hop_1: str
    hop_2: str
    scene_references: list[SceneReference]
    clip_ranges: list[ClipRange]


# -- C2.3: text-only answers and verdicts ---------------------------------------------------------
class TextAnswer(_Strict):
    explanation: str
    answer: str


class Verdict(_Strict):
    explanation: str
    judgement: Literal["Yes", "No"]


# -- C3: video sufficiency --------------------------------------------------------------------------
class Grounding(_Strict):
    query_grounding_explanation: str
    query_grounded: Literal["Yes", "No"]
    answer_grounding_explanation: str
    answer_grounded: Literal["Yes", "No"]


# -- D1.1: graded wrong answers -----------------------------------------------------------------
class CausalAttribute(_Strict):
    attribute_name: str
    importance_score: float
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
    modality: Literal["visual_only", "audio_visual", "text_verifiable"]


class AttributeDegradation(_Strict):
    attribute_name: str
    degradation_by_elements: list[ElementDegradation]


class DegradedAnswer(_Strict):
    response: str
    attribute_degradations: list[AttributeDegradation]
    constant_attributes: list[str]
    upgraded_attributes: list[str]


class DistractorGeneration(_Strict):
    causal_attributes: list[CausalAttribute] = Field(min_length=5, max_length=5)
    gold_standard_analysis: GoldAnalysis
    rating_4: DegradedAnswer
    rating_3: DegradedAnswer
    rating_2: DegradedAnswer
    rating_1: DegradedAnswer


# -- D3 / D4: rankings ----------------------------------------------------------------------------
class RankEntry(_Strict):
    rank: int
    candidate_index: int
    reasoning: str


class Ranking(_Strict):
    rankings: list[RankEntry]
    overall_summary: str


SCHEMAS: dict[str, type[BaseModel]] = {
    "QAGeneration": QAGeneration,
    "TextAnswer": TextAnswer,
    "Verdict": Verdict,
    "Grounding": Grounding,
    "DistractorGeneration": DistractorGeneration,
    "Ranking": Ranking,
}
