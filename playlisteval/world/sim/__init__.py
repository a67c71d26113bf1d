"""The sim provider (provider.py) and its roles: the question generator and text-only tests (phase1.py),
graded wrong answers and the rankings that gate them (phase2.py, wording.py), judges (judge.py), the human
study's grounder (human.py), what one call can see (context.py) and a batch API for offline batch runs
(batch.py)."""
