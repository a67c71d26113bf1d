"""Model calls (DESIGN 3–6): the one runner and what it owns, providers that only translate, batch APIs.

    core        request.py (the provider-neutral request), base.py (what a provider is), runner.py (cache,
                budget, ledger, retries, rate limits, parsing), budget.py (spend and budgets, read without
                the runner), ledger.py, pricing.py, ratelimit.py,
                registry.py (providers by name, loaded lazily), estimate.py, preflight.py,
                context_cache.py, simulated.py (where the sim may be used and what it computed)
    providers/  Gemini, OpenAI-compatible (OpenAI, DashScope, vLLM), transformers (hf), their wire helpers
    batch/      the crash-safe batch lifecycle and each provider's batch API

May import: errors, config, store, media, prompts (response schemas). Never build, eval or anything above.
"""
