"""SPEC B2: question-type keywords of Bloom's knowledge-dimension matrix (Understand … Evaluate)."""

from __future__ import annotations

import random

ROWS = ("Factual", "Conceptual", "Procedural", "Meta-Cognitive")
COLUMNS = ("Understand", "Apply", "Analyze", "Evaluate")

KEYWORDS: dict[tuple[str, str], tuple[str, ...]] = {
    ("Factual", "Understand"): ("restate", "order"),
    ("Factual", "Apply"): ("state", "determine"),
    ("Factual", "Analyze"): ("distinguish", "classify"),
    ("Factual", "Evaluate"): ("select",),
    ("Conceptual", "Understand"): ("describe", "explain"),
    ("Conceptual", "Apply"): ("illustrate", "show"),
    ("Conceptual", "Analyze"): ("examine", "analyze"),
    ("Conceptual", "Evaluate"): ("rank", "compare"),
    ("Procedural", "Understand"): ("summarize", "translate"),
    ("Procedural", "Apply"): ("solve", "demonstrate"),
    ("Procedural", "Analyze"): ("deduce", "diagram"),
    ("Procedural", "Evaluate"): ("conclude", "choose"),
    ("Meta-Cognitive", "Understand"): ("interpret", "paraphrase"),
    ("Meta-Cognitive", "Apply"): ("find out", "use"),
    ("Meta-Cognitive", "Analyze"): ("infer", "examine"),
    ("Meta-Cognitive", "Evaluate"): ("justify", "judge"),
}


def draw_keyword(rng: random.Random) -> tuple[str, str, str]:
    """(row, column, keyword), drawn uniformly over every keyword of the four columns."""
    choices = [(row, col, kw) for (row, col), kws in KEYWORDS.items() for kw in kws]
    return rng.choice(choices)
