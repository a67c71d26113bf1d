"""Thin dramatiq actors, one per working state. Each receives only an item id (DESIGN 1–2):

    generate_qa(item_id)            pending       → Phase I generation (SPEC B)
    check_qa(item_id)               qa_generated  → Phase I gates (SPEC C)
    generate_distractors(item_id)   gated         → Phase II generation (SPEC D1)
    check_distractors(item_id)      degraded      → Phase II gates (SPEC D2–D4)

They are idempotent: a duplicate or late message finds the item claimed or moved on and does nothing.
"""

from __future__ import annotations

from playlisteval.actors.app import BUILD_QUEUE, STEP_NAMES, App, current_app

__all__ = ["App", "BUILD_QUEUE", "STEP_NAMES", "current_app"]
