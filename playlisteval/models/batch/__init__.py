"""Batch APIs (issue 15): the crash-safe lifecycle (lifecycle.py), what a provider's batch API offers
(api.py), Gemini's and OpenAI's (gemini.py, openai.py), answers into the store (results.py), driving
batches to the end (run.py), the batches not yet ended (listing.py) and the projected cost by batch
(estimate.py)."""
