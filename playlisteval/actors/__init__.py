"""The engine: every kind of work as a module-level dramatiq actor taking ids (tasks.py), bound to each
process's broker by its App (app.py); one job per question for `select` and `eval judge`, per block of
questions for `eval retrieve` (jobs.py, evaluation.py); videos of `index` (indexing.py); item leases renewed
while a step runs (leases.py); claim, poison limit, budget pause, heartbeat and log context as dramatiq
middleware (middleware.py); one build step (step.py), whose next message goes through the outbox
(store/outbox.py).

    generate_qa(item_id)            pending       → Phase I generation (SPEC B)
    check_qa(item_id)               qa_generated  → Phase I gates (SPEC C)
    generate_distractors(item_id)   gated         → Phase II generation (SPEC D1)
    check_distractors(item_id)      degraded      → Phase II gates (SPEC D2–D4)
    index_video(video_id, …)        the "index" queue
    gate_question(job_id)           the "select" queue: one question of the difficulty gate (SPEC F2)
    judge_question(job_id)          the "eval" queue: one question of a judge run (SPEC G)
    retrieve_questions(job_id)      the "eval" queue: a block of questions of a retrieval run (SPEC G)

They are idempotent: a duplicate or late message finds the item or job claimed or moved on and does nothing.
"""

from __future__ import annotations

from playlisteval.actors.app import BUILD_QUEUE, STEP_NAMES, App, current_app

__all__ = ["App", "BUILD_QUEUE", "STEP_NAMES", "current_app"]
